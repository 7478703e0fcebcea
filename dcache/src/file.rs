//! Files: the file object and [`FileRef`], an opened file's reference, with
//! its deferred release (`fput`). The unopened token is in `empty_file.rs`.

use core::fmt;
use core::ptr::NonNull;
use std::boxed::Box;

use crate::cache::Dcache;
use crate::open_flags::OpenFlags;
use crate::path_ref::PathRef;
use crate::sync::{fence, AtomicUsize, Ordering};
use crate::task_work;

/// A file object (`struct file`): a count of references (`f_count`) and,
/// once opened, the path it was opened at.
///
/// `repr(C)` with the deferred-work item first, so the item's address is
/// the file's (`container_of` for `f_task_work`).
#[repr(C)]
pub(crate) struct File<'c> {
    /// The deferred `__fput` (`f_task_work`).
    pub(crate) work: task_work::Callback,
    pub(crate) count: AtomicUsize,
    pub(crate) cache: &'c Dcache,
    pub(crate) flags: OpenFlags,
    /// `Some` once opened (`FMODE_OPENED`); the references it holds.
    pub(crate) path: Option<PathRef<'c>>,
}

impl<'c> File<'c> {
    /// `get_file`: one more reference.
    pub(crate) fn get(&self) {
        // Relaxed: the caller's reference keeps the file alive (as
        // `Arc::clone`).
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// A counted reference to a file (`struct file *` with `f_count` held).
/// Cloning is `get_file`; dropping the last reference to an opened file
/// releases it (`fput`): deferred to the end of the current operation, as
/// the kernel defers `__fput` to `task_work`, or done at once outside any
/// operation. The last reference to an unopened file (a stray
/// `EmptyFile::get_file`, feature `testing`) frees it at once.
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
pub struct FileRef<'c> {
    pub(crate) file: NonNull<File<'c>>,
}

// SAFETY: references may move between threads; the last one frees the
// file wherever it is dropped, as `fput` may run on any task.
unsafe impl Send for FileRef<'_> {}
// SAFETY: `&FileRef` reads only the immutable path and flags.
unsafe impl Sync for FileRef<'_> {}

impl<'c> FileRef<'c> {
    pub(crate) fn file(&self) -> &File<'c> {
        // SAFETY: we hold a reference, so the file is alive.
        unsafe { self.file.as_ref() }
    }

    /// The path the file was opened at (`f_path`).
    ///
    /// # Panics
    ///
    /// On a stray reference to a file that was never opened.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// let file = cache.open("/", lockref_dcache::OpenFlags::RDONLY).unwrap();
    /// assert_eq!(file.path().name(), b"/");
    /// ```
    pub fn path(&self) -> &PathRef<'c> {
        self.file().path.as_ref().expect("file was never opened")
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

impl Clone for FileRef<'_> {
    /// `get_file`.
    fn clone(&self) -> Self {
        self.file().get();
        FileRef { file: self.file }
    }
}

impl Drop for FileRef<'_> {
    /// `fput`.
    fn drop(&mut self) {
        let file = self.file();
        // Release: our uses of the file happen before whoever frees it.
        if file.count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Acquire: every other holder's uses happen before the free.
        fence(Ordering::Acquire);
        // A stray reference to an unopened file frees it now: only
        // `EmptyFile::release_deferred` (the pre-seed-001 path) defers an
        // unopened file.
        let opened = file.path.is_some();
        // SAFETY: the count reached zero: ours was the last reference.
        unsafe { fput_last(self.file, opened) };
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

/// The last reference to `file` is gone: free it, through deferred work
/// (`__fput` via `task_work`) if `deferred`, else now.
///
/// # Safety
///
/// No reference to `file` may remain, and it must not be freed elsewhere.
pub(crate) unsafe fn fput_last(file: NonNull<File<'_>>, deferred: bool) {
    if deferred {
        // SAFETY: the item lives in the file, which nobody else references
        // now; `run_fput` frees it once, at the end of the current
        // operation, while the cache it borrows is still borrowed by that
        // operation (see `task_work`).
        unsafe { task_work::defer(file.as_ptr().cast::<task_work::Callback>()) };
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { free(file) };
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
