//! [`EmptyFile`]: a file object allocated and not opened yet, a one-shot
//! token (seed 001).

use core::fmt;
use core::ptr::NonNull;
use std::boxed::Box;

use crate::cache::Dcache;
use crate::errno::Errno;
use crate::file::{fput_last, free, run_fput, File, FileRef};
use crate::inode::InodeKind;
use crate::open_flags::OpenFlags;
use crate::path_ref::PathRef;
use crate::sync::{fence, AtomicUsize, Ordering};
use crate::task_work;

/// A file object that was allocated but never opened (`alloc_empty_file`):
/// a one-shot token. It becomes a [`FileRef`] by opening it, or is freed
/// by [`release`](Self::release) (or by dropping it) at once: a
/// compare-and-swap of its count from 1 to 0 as the safety belt, then the
/// free, with no deferred work (seed 001). Neither can happen twice (both
/// consume the token), and an unopened file never reaches the deferred
/// release: only an opened file's last [`FileRef`] does.
///
/// Released twice does not compile:
///
/// ```compile_fail
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// let file = cache.alloc_file(lockref_dcache::OpenFlags::RDONLY);
/// file.release().unwrap();
/// file.release().unwrap(); // error: use of moved value
/// ```
#[must_use = "dropping an unopened file releases it; call open or release"]
pub struct EmptyFile<'c> {
    pub(crate) file: NonNull<File<'c>>,
}

// SAFETY: the token owns the file object (count 1, ours), which holds only
// thread-safe state.
unsafe impl Send for EmptyFile<'_> {}

/// [`EmptyFile::release`] found another reference to the unopened file
/// (someone called `EmptyFile::get_file`, feature `testing`, and kept it). Nothing was
/// freed: the file goes when its last reference is dropped, still without
/// deferred work. The kernel only warns here and frees anyway.
///
/// ```
/// use lockref_dcache::{Dcache, OpenFlags, StrayReference};
///
/// let cache = Dcache::new(Default::default());
/// let token = cache.alloc_file(OpenFlags::RDONLY);
/// let stray = token.get_file();
/// assert_eq!(token.release(), Err(StrayReference { count: 2 }));
/// drop(stray); // the last reference frees it, at once
/// assert_eq!(cache.live_files(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrayReference {
    /// The count the safety belt found (more than one).
    pub count: usize,
}

impl fmt::Display for StrayReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unopened file has {} references; expected 1", self.count)
    }
}

impl std::error::Error for StrayReference {}

impl Dcache {
    /// `alloc_empty_file`: a file object to open.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// let file = cache.alloc_file(lockref_dcache::OpenFlags::RDONLY);
    /// assert_eq!(cache.live_files(), 1);
    /// file.release().unwrap();
    /// assert_eq!(cache.live_files(), 0);
    /// ```
    pub fn alloc_file(&self, flags: OpenFlags) -> EmptyFile<'_> {
        self.files.add(1);
        let file = Box::new(File {
            work: task_work::Callback::new(run_fput),
            count: AtomicUsize::new(1),
            cache: self,
            flags,
            path: None,
        });
        EmptyFile {
            // SAFETY: `Box::into_raw` never returns null.
            file: unsafe { NonNull::new_unchecked(Box::into_raw(file)) },
        }
    }
}

impl<'c> EmptyFile<'c> {
    pub(crate) fn file(&self) -> &File<'c> {
        // SAFETY: the token holds a reference, so the file is alive.
        unsafe { self.file.as_ref() }
    }

    /// The access checks of `may_open` and `do_dentry_open` that can fail
    /// before any reference moves.
    fn may_open(&self, path: &PathRef<'c>) -> Result<(), Errno> {
        let flags = self.file().flags;
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
    /// assert_eq!(file.path().name(), b"/");
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
        let ptr = self.file;
        core::mem::forget(self);
        // SAFETY: the token was the only handle: nobody else reads `path`
        // until the file is published by the returned reference.
        unsafe { (*ptr.as_ptr()).path = Some(path) };
        FileRef { file: ptr }
    }

    /// Frees the never-opened file now (`release_empty_file`): the count
    /// must go from 1 to 0 (one compare-and-swap), then the object is freed,
    /// with no deferred work.
    ///
    /// # Errors
    ///
    /// [`StrayReference`] if someone else holds a reference: nothing is
    /// freed, our reference is dropped, and the file goes with the last
    /// one (still without deferred work).
    ///
    /// ```
    /// use lockref_dcache::testing::deferred_on_this_thread;
    /// use lockref_dcache::{Dcache, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// let before = deferred_on_this_thread();
    /// cache.alloc_file(OpenFlags::RDONLY).release().unwrap();
    /// assert_eq!(deferred_on_this_thread(), before); // freed at once
    /// ```
    pub fn release(self) -> Result<(), StrayReference> {
        let ptr = self.file;
        core::mem::forget(self);
        // SAFETY: the token's reference keeps the file alive here.
        let file = unsafe { ptr.as_ref() };
        // Acquire on success: any stray reference's uses (dropped by a
        // Release decrement) happen before the free. Relaxed on failure: we
        // only report the count.
        match file
            .count
            .compare_exchange(1, 0, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => {
                // SAFETY: the count was 1 (ours) and is now 0: no reference
                // is left, and an unopened file is reachable from nowhere.
                unsafe { free(ptr) };
                Ok(())
            }
            Err(count) => {
                drop(FileRef { file: ptr });
                Err(StrayReference { count })
            }
        }
    }

    /// Frees the never-opened file the way the kernel did before seed 001:
    /// through `fput`, whose `__fput` runs as deferred work when the
    /// operation returns. For before/after measurements only: the
    /// allocation of a deferred-work entry and the later call are the cost
    /// seed 001 removed.
    pub(crate) fn release_deferred(self) {
        let ptr = self.file;
        core::mem::forget(self);
        // SAFETY: the token's reference keeps the file alive here.
        let file = unsafe { ptr.as_ref() };
        // `fput` itself: drop our reference (Release, as in `FileRef`'s
        // drop), and if it was the last, defer the release.
        if file.count.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            // SAFETY: the count reached zero: ours was the last reference.
            unsafe { fput_last(ptr, true) };
        }
    }
}

impl fmt::Debug for EmptyFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmptyFile")
            .field("flags", &self.file().flags)
            .finish()
    }
}

impl Drop for EmptyFile<'_> {
    /// Releases the unopened file, as [`release`](EmptyFile::release).
    fn drop(&mut self) {
        let token = EmptyFile { file: self.file };
        // The stray-reference case frees with the last reference.
        let _ = token.release();
    }
}
