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
        let table = T::new(
            setup_fd(),
            Key {
                dev: 0,
                ino: 1,
                birth: 0,
            },
        );
        let dir = table.lookup(
            Key {
                dev: 0,
                ino: 2,
                birth: 0,
            },
            setup_fd,
        );
        let file = Key {
            dev: 0,
            ino: 3,
            birth: 0,
        };
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

/// Every thread on one hot directory and one hot file whose entries cycle
/// through zero: per iteration a `LOOKUP` of the directory, a `GETATTR`
/// of it, a `LOOKUP` of the file, a `GETATTR` of it, then the `FORGET` of
/// the file and of the directory. Nothing else holds them, so a thread
/// alone gives back the kernel's last reference at each `FORGET` (the
/// entry's last put drops it to zero without the lock: a table that keeps
/// forgotten inodes keeps it, one that keeps none kills it and the next
/// `LOOKUP` makes it again);
/// with threads beside it, the entries' counts rise and fall around zero.
/// The host inodes are file handles with no descriptor (no system call),
/// so the table's own work is what is measured; they are born at a known
/// time, so a table that keeps forgotten inodes keeps these.
pub struct HotInode<T: InodeTable> {
    table: T,
    dir: Key,
    file: Key,
}

/// A host inode that costs no system call: a file handle, not opened.
fn unopened_handle() -> HostInode {
    HostInode::Handle(std::sync::Arc::new(
        crate::host_inode::DescriptorSlot::of_handle(crate::host_inode::FileHandleBytes::new(
            0,
            &[],
        )),
    ))
}

impl<T: InodeTable> HotInode<T> {
    /// The table with the root only.
    pub fn new() -> Self {
        HotInode {
            table: T::new(
                setup_fd(),
                Key {
                    dev: 0,
                    ino: 1,
                    birth: 0,
                },
            ),
            dir: Key {
                dev: 0,
                ino: 2,
                birth: 1,
            },
            file: Key {
                dev: 0,
                ino: 3,
                birth: 1,
            },
        }
    }

    /// One iteration; panics if the table lost an inode it must hold.
    #[inline]
    pub fn run_once(&self) {
        let dir = self.table.lookup(self.dir, unopened_handle);
        drop(self.table.get(dir).expect("the kernel holds the directory"));
        let file = self.table.lookup(self.file, unopened_handle);
        drop(self.table.get(file).expect("the kernel holds the file"));
        self.table
            .forget(file, 1)
            .expect("the kernel held the file");
        self.table
            .forget(dir, 1)
            .expect("the kernel held the directory");
    }

    /// Whether every lookup was forgotten: the root alone is left.
    pub fn is_balanced(&self) -> bool {
        self.table.only_root()
    }
}

impl<T: InodeTable> Default for HotInode<T> {
    fn default() -> Self {
        Self::new()
    }
}
