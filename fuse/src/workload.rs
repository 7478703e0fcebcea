//! [`RequestMix`]: what FUSE requests do to the inode table, without the
//! kernel or the host, for measuring the two tables side by side (the
//! harness's `inodes` testcase).

use crate::host_inode::HostInode;
use crate::table::{InodeTable, Key, ROOT_ID};

/// A directory and a file in it, both known to the kernel, and per
/// iteration the table operations of a `LOOKUP` of the file (a request
/// reference on the directory, a kernel lookup on the file), an `OPEN` (a
/// handle reference), a `READ` through the handle (a request reference),
/// the `RELEASE`, and the `FORGET` of the lookup. Every thread works on
/// the same two inodes, as a build's threads share their directories.
pub struct RequestMix<T: InodeTable> {
    table: T,
    dir: u64,
    file: Key,
}

/// A descriptor for an inode that must already be in the table (never
/// called after setup); `/` is always there to open.
fn setup_fd() -> HostInode {
    HostInode::Descriptor(std::fs::File::open("/").expect("/ opens").into())
}

impl<T: InodeTable> RequestMix<T> {
    /// The table with the root, the directory and the file, each holding
    /// one kernel lookup that the mix never forgets (so the measured
    /// forgets never free).
    pub fn new() -> Self {
        let table = T::new(setup_fd(), Key { dev: 0, ino: 1 });
        let dir = table.lookup(Key { dev: 0, ino: 2 }, setup_fd);
        let file = Key { dev: 0, ino: 3 };
        table.lookup(file, setup_fd);
        RequestMix { table, dir, file }
    }

    /// One iteration; panics if the table lost an inode it must hold.
    #[inline]
    pub fn run_once(&self) {
        // LOOKUP dir/file.
        let parent = self.table.get(self.dir).expect("the directory is held");
        let id = self.table.lookup(self.file, setup_fd);
        drop(parent);
        // OPEN, READ, RELEASE.
        let handle = self.table.get(id).expect("the kernel holds the file");
        let read = self.table.get(id).expect("the handle holds the file");
        drop(read);
        drop(handle);
        // FORGET of the lookup above.
        self.table
            .forget(id, 1)
            .expect("the kernel held this lookup");
    }

    /// The table (for checks after a run).
    pub fn table(&self) -> &T {
        &self.table
    }

    /// Whether the table is as [`new`](Self::new) left it.
    pub fn is_balanced(&self) -> bool {
        self.table.inodes() == 3
            && self.table.kernel_lookups(self.dir) == Some(1)
            && self.table.get(ROOT_ID).is_some()
    }
}

impl<T: InodeTable> Default for RequestMix<T> {
    fn default() -> Self {
        Self::new()
    }
}
