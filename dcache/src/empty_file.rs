//! [`EmptyFile`]: a file object allocated and not opened yet, the one-shot
//! token of seed 001, on [`lockref::Unopened`].

use core::convert::Infallible;
use core::fmt;
use core::ptr::NonNull;
use std::boxed::Box;

use lockref::{OpenCount, Unopened};

use crate::cache::Dcache;
use crate::errno::Errno;
use crate::file::{run_fput, File, FileRef};
use crate::inode::InodeKind;
use crate::open_flags::OpenFlags;
use crate::path_ref::PathRef;
use crate::task_work;

/// A file object that was allocated but never opened (`alloc_empty_file`):
/// a one-shot token ([`lockref::Unopened`]). It becomes a [`FileRef`] by
/// opening it, or is freed by [`release`](Self::release) (or by dropping
/// it) at once: a compare-and-swap of its count from 1 to 0 as the safety
/// belt, then the free, with no deferred work (seed 001). Neither can
/// happen twice (both consume the token), nothing can take a second
/// reference to an unopened file (there is no `get_file`: the token is the
/// only handle, so the open's write of the path cannot race a reader), and
/// an unopened file never reaches the deferred release: only an opened
/// file's last [`FileRef`] does.
///
/// Released twice does not compile:
///
/// ```compile_fail
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// let file = cache.alloc_file(lockref_dcache::OpenFlags::RDONLY);
/// file.release();
/// file.release(); // error: use of moved value
/// ```
///
/// A second reference to an unopened file cannot be taken:
///
/// ```compile_fail
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// let file = cache.alloc_file(lockref_dcache::OpenFlags::RDONLY);
/// let stray = file.clone(); // error: `EmptyFile` is not `Clone`
/// ```
///
/// Like [`FileRef`](crate::FileRef), an `EmptyFile` is neither `Send` nor
/// `Sync`: it is opened or released on the thread that allocated it.
///
/// ```compile_fail
/// fn shareable<T: Sync>(_: &T) {}
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// shareable(&cache.alloc_file(lockref_dcache::OpenFlags::RDONLY)); // error: not Sync
/// ```
#[must_use = "dropping an unopened file releases it; call open or release"]
pub struct EmptyFile<'c> {
    token: Unopened<File<'c>>,
}

impl Dcache {
    /// `alloc_empty_file`: a file object to open.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// let file = cache.alloc_file(lockref_dcache::OpenFlags::RDONLY);
    /// assert_eq!(cache.live_files(), 1);
    /// file.release();
    /// assert_eq!(cache.live_files(), 0);
    /// ```
    pub fn alloc_file(&self, flags: OpenFlags) -> EmptyFile<'_> {
        self.files.add(1);
        let file = Box::new(File {
            work: task_work::Callback::new(run_fput),
            count: OpenCount::new(),
            cache: self,
            flags,
            path: None,
        });
        // A raw pointer from the start, with the box's provenance, as the
        // frees will use it.
        // SAFETY: `Box::into_raw` never returns null.
        let ptr = unsafe { NonNull::new_unchecked(Box::into_raw(file)) };
        EmptyFile {
            // SAFETY: new, its count of one, referenced from nowhere else.
            token: unsafe { Unopened::from_raw(ptr) },
        }
    }
}

impl<'c> EmptyFile<'c> {
    /// The access checks of `may_open` and `do_dentry_open` that can fail
    /// before any reference moves.
    fn may_open(&self, path: &PathRef<'c>) -> Result<(), Errno> {
        self.token.cache.require_own(path.dentry())?;
        let flags = self.token.flags;
        match path.dentry().kind() {
            None => Err(Errno::NoEnt),
            Some(InodeKind::Dir) if flags.is_write() => Err(Errno::IsDir),
            Some(kind) if flags.is_directory() && kind != InodeKind::Dir => Err(Errno::NotDir),
            Some(_) => Ok(()),
        }
    }

    /// Opens the file at `path`, *consuming* the path: its references
    /// become the file's and no count moves (`vfs_open_consume`, seed
    /// 000). On failure the path's references are dropped and the token is
    /// handed back to be released.
    ///
    /// # Errors
    ///
    /// `ENOENT` (negative dentry), `EISDIR` (a directory opened for
    /// writing), `ENOTDIR` (`O_DIRECTORY` on a non-directory).
    ///
    /// ```
    /// use lockref_dcache::{Dcache, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// let file = cache.alloc_file(OpenFlags::RDONLY).open_consume(cache.root()).unwrap();
    /// assert_eq!(file.path().dentry().name(), b"/");
    /// ```
    #[allow(clippy::result_large_err)]
    pub fn open_consume(self, path: PathRef<'c>) -> Result<FileRef<'c>, (Errno, EmptyFile<'c>)> {
        if let Err(e) = self.may_open(&path) {
            return Err((e, self));
        }
        Ok(self.install(path))
    }

    /// Opens the file at a path the caller keeps: the file takes its own
    /// references (`vfs_open`'s `path_get`).
    ///
    /// # Errors
    ///
    /// As [`open_consume`](Self::open_consume); the caller's path is
    /// untouched.
    ///
    /// ```
    /// use lockref_dcache::{Dcache, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// let root = cache.root();
    /// let file = cache.alloc_file(OpenFlags::RDONLY).open(&root).unwrap();
    /// assert_eq!(root.dentry().count(), 3); // the cache's, ours, the file's
    /// ```
    #[allow(clippy::result_large_err)]
    pub fn open(self, path: &PathRef<'c>) -> Result<FileRef<'c>, (Errno, EmptyFile<'c>)> {
        if let Err(e) = self.may_open(path) {
            return Err((e, self));
        }
        Ok(self.install(path.clone()))
    }

    /// Stores the path and turns the token into an open file's reference.
    fn install(self, path: PathRef<'c>) -> FileRef<'c> {
        let opened = self.token.open(|file| {
            file.path = Some(path);
            Ok::<(), Infallible>(())
        });
        match opened {
            Ok(opened) => FileRef { opened },
            Err((never, _)) => match never {},
        }
    }

    /// Frees the never-opened file now (`release_empty_file`): the count
    /// must go from 1 to 0 (one compare-and-swap), then the object is freed,
    /// with no deferred work.
    ///
    /// ```
    /// use lockref_dcache::testing::deferred_on_this_thread;
    /// use lockref_dcache::{Dcache, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// let before = deferred_on_this_thread();
    /// cache.alloc_file(OpenFlags::RDONLY).release();
    /// assert_eq!(deferred_on_this_thread(), before); // freed at once
    /// ```
    pub fn release(self) {
        self.token.release();
    }

    /// Frees the never-opened file the way the kernel did before seed 001:
    /// `fput`, whose `__fput` runs as deferred work when the operation
    /// returns. For before/after measurements only: the deferred work and
    /// its later call are the cost seed 001 removed. (The token opens with
    /// no path, so the file takes the opened file's path to the deferred
    /// release, as the kernel's `fput` treated every file alike.)
    pub(crate) fn release_deferred(self) {
        let opened = self.token.open(|_| Ok::<(), Infallible>(()));
        match opened {
            // `fput`: the last reference, deferred.
            Ok(opened) => drop(opened),
            Err((never, _)) => match never {},
        }
    }
}

impl fmt::Debug for EmptyFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmptyFile")
            .field("flags", &self.token.flags)
            .finish()
    }
}
