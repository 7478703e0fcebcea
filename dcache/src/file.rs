//! Files: the file object and [`FileRef`], an opened file's reference, with
//! its deferred release (`fput`). The unopened token is in `empty_file.rs`.

use core::fmt;
use core::ptr::NonNull;
use std::boxed::Box;

use lockref::{OpenCount, Openable, Opened};

use crate::cache::Dcache;
use crate::open_flags::OpenFlags;
use crate::path_ref::PathRef;
use crate::task_work;

/// A file object (`struct file`): its count of references (`f_count`) and,
/// once opened, the path it was opened at.
///
/// `repr(C)` with the deferred-work item first, so the item's address is
/// the file's (`container_of` for `f_task_work`).
#[repr(C)]
pub(crate) struct File<'c> {
    /// The deferred `__fput` (`f_task_work`).
    pub(crate) work: task_work::Callback,
    pub(crate) count: OpenCount,
    pub(crate) cache: &'c Dcache,
    pub(crate) flags: OpenFlags,
    /// `Some` once opened (`FMODE_OPENED`); the references it holds.
    pub(crate) path: Option<PathRef<'c>>,
}

// SAFETY: files are only made by `Dcache::alloc_file` (a `Box`); `free` and
// `release_opened` free the box once (now, or as deferred work that runs
// before the operation borrowing the cache returns).
unsafe impl<'c> Openable for File<'c> {
    fn open_count(&self) -> &OpenCount {
        &self.count
    }

    unsafe fn free(this: NonNull<Self>) {
        // SAFETY: the caller's guarantee: unreferenced, from the box.
        unsafe { free(this) };
    }

    /// `fput` of the last reference: `__fput` deferred to the end of the
    /// current operation (`task_work`), or run now outside any.
    unsafe fn release_opened(this: NonNull<Self>) {
        // SAFETY: the item lives in the file, which nobody references now;
        // `run_fput` frees it once, at the end of the current operation,
        // while the cache it borrows is still borrowed by that operation
        // (see `task_work`).
        unsafe { task_work::defer(this.as_ptr().cast::<task_work::Callback>()) };
    }
}

/// A counted reference to a file (`struct file *` with `f_count` held).
/// Cloning is `get_file`; dropping the last reference to an opened file
/// releases it (`fput`): deferred to the end of the current operation, as
/// the kernel defers `__fput` to `task_work`, or done at once outside any
/// operation ([`lockref::Opened`]).
///
/// # Threads
///
/// A `FileRef` is neither `Send` nor `Sync` (since the dcache moved onto
/// `lockref::Opened`): the file embeds its own deferred-release work item
/// (the kernel's `callback_head`, a `Cell` link), which its last put
/// queues on the *current* thread's deferred-work list, and the cache
/// does not synchronize that link between threads. A file stays on the
/// thread that opened it; another thread opens the path itself (a lookup
/// in the shared cache, which is `Sync`).
///
/// ```compile_fail
/// fn shareable<T: Send>(_: T) {}
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// shareable(cache.open("/", lockref_dcache::OpenFlags::RDONLY).unwrap()); // error: not Send
/// ```
///
/// ```
/// use lockref_dcache::{Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let file = cache.open("/", OpenFlags::RDONLY).unwrap();
/// let dup = file.clone(); // get_file
/// cache.close(file);
/// assert_eq!(cache.live_files(), 1); // dup keeps it
/// cache.close(dup);
/// assert_eq!(cache.live_files(), 0);
/// ```
#[derive(Clone)]
pub struct FileRef<'c> {
    pub(crate) opened: Opened<File<'c>>,
}

impl<'c> FileRef<'c> {
    pub(crate) fn file(&self) -> &File<'c> {
        &self.opened
    }

    /// The path the file was opened at (`f_path`).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// let file = cache.open("/", lockref_dcache::OpenFlags::RDONLY).unwrap();
    /// assert_eq!(file.path().dentry().name(), b"/");
    /// ```
    pub fn path(&self) -> &PathRef<'c> {
        self.file()
            .path
            .as_ref()
            .expect("a FileRef is made only by a successful open")
    }

    /// The flags it was opened with.
    ///
    /// ```
    /// use lockref_dcache::OpenFlags;
    ///
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.open("/", OpenFlags::RDONLY).unwrap().flags(), OpenFlags::RDONLY);
    /// ```
    pub fn flags(&self) -> OpenFlags {
        self.file().flags
    }

    /// Whether the file was opened (`FMODE_OPENED`).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert!(cache.open("/", lockref_dcache::OpenFlags::RDONLY).unwrap().is_opened());
    /// ```
    pub fn is_opened(&self) -> bool {
        self.file().path.is_some()
    }
}

impl fmt::Debug for FileRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileRef")
            .field("flags", &self.flags())
            .field("path", &self.file().path)
            .finish()
    }
}

/// `__fput`, as deferred work.
///
/// # Safety
///
/// `work` is the item embedded first in a `File` with no references left,
/// freed by nobody else.
pub(crate) unsafe fn run_fput(work: *mut task_work::Callback) {
    // SAFETY: the caller's guarantee; the item is the file's first field
    // (`repr(C)`), so its address is the file's. `File<'_>`'s lifetime was
    // erased for the queue; the cache it borrows outlives the queue
    // (`task_work`).
    unsafe { free(NonNull::new_unchecked(work.cast::<File<'_>>())) };
}

/// Frees a file object: drops its path (`dput`, `mntput`) and the memory.
///
/// # Safety
///
/// No reference to `file` may remain; it came from `alloc_file`'s box.
pub(crate) unsafe fn free(file: NonNull<File<'_>>) {
    // SAFETY: the caller's guarantee.
    let file = unsafe { Box::from_raw(file.as_ptr()) };
    let cache = file.cache;
    drop(file);
    cache.files.add(-1);
}
