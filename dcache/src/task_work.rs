//! Deferred work run when an operation returns, standing in for the
//! kernel's `task_work` (what `fput` uses to run `__fput` on the way back
//! to user space), with the kernel's mechanism and costs:
//!
//! - the work item is a [`Callback`] embedded in the object (`struct
//!   callback_head` in `struct file`): no allocation;
//! - queueing is a compare-and-swap push onto the thread's list
//!   (`task_work_add`), then an atomic flag set (`set_notify_resume`);
//! - running takes the flag and the whole list with two swaps
//!   (`task_work_run`), reverses it to queue order, and calls each item.
//!
//! Each operation of the cache ([`Dcache::open`](crate::Dcache::open),
//! [`Dcache::close`](crate::Dcache::close), ...) enters a [`Scope`]. Work
//! queued inside a scope runs when the outermost scope ends; work deferred
//! outside any scope (a file handle dropped by user code) runs at once, as
//! if the thread returned to user space right away. So no queued work
//! outlives the operation that queued it, and so none outlives the cache
//! it refers to. This is the cost seed 001 removes from failed opens.

use core::cell::Cell;
use core::ptr;

use crate::sync::{AtomicPtr, Ordering};

/// A work item, embedded in the object it works on (`callback_head`).
pub(crate) struct Callback {
    /// The next item on the list; written before the item is published.
    next: Cell<*mut Callback>,
    /// What to run.
    func: unsafe fn(*mut Callback),
}

impl Callback {
    pub(crate) const fn new(func: unsafe fn(*mut Callback)) -> Self {
        Callback {
            next: Cell::new(ptr::null_mut()),
            func,
        }
    }
}

struct TaskWork {
    depth: Cell<usize>,
    /// Queued items, newest first (`task->task_works`).
    works: AtomicPtr<Callback>,
    /// Work is pending (`TIF_NOTIFY_RESUME`).
    notify: AtomicPtr<()>,
    deferred: Cell<u64>,
}

crate::sync::thread_local! {
    // Not `const { .. }`: loom's `thread_local!` does not take that form.
    #[allow(clippy::missing_const_for_thread_local)]
    static TASK: TaskWork = TaskWork {
        depth: Cell::new(0),
        works: AtomicPtr::new(ptr::null_mut()),
        notify: AtomicPtr::new(ptr::null_mut()),
        deferred: Cell::new(0),
    };
}

/// An operation in progress on this thread; deferred work runs when the
/// outermost one ends.
pub(crate) struct Scope(());

impl Scope {
    pub(crate) fn enter() -> Self {
        TASK.with(|t| t.depth.set(t.depth.get() + 1));
        Scope(())
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let outermost = TASK.with(|t| {
            let depth = t.depth.get() - 1;
            t.depth.set(depth);
            depth == 0
        });
        if outermost {
            run_pending();
        }
    }
}

/// `task_work_run`: takes the pending flag and the list, runs the items in
/// queue order, until no work is left (items may queue more).
fn run_pending() {
    // The flag's value: any non-null pointer.
    let set = ptr::NonNull::<()>::dangling().as_ptr();
    while TASK.with(|t| t.notify.swap(ptr::null_mut(), Ordering::Acquire)) == set {
        // Acquire: the items' contents were written before their Release
        // push.
        let mut list = TASK.with(|t| t.works.swap(ptr::null_mut(), Ordering::Acquire));
        // Reverse to queue order.
        let mut ordered: *mut Callback = ptr::null_mut();
        while !list.is_null() {
            // SAFETY: items on the list are live until run (`defer`).
            let next = unsafe { (*list).next.get() };
            // SAFETY: as above; we own the detached list.
            unsafe { (*list).next.set(ordered) };
            ordered = list;
            list = next;
        }
        while !ordered.is_null() {
            // SAFETY: as above; read `next` before the item runs (it may
            // free itself).
            let (next, func) = unsafe { ((*ordered).next.get(), (*ordered).func) };
            // SAFETY: `defer`'s contract: `func(item)` is sound once, before
            // the end of the operation that queued it: now.
            unsafe { func(ordered) };
            ordered = next;
        }
    }
}

/// Queues `work` to run at the end of the current operation
/// (`task_work_add(current, work, TWA_RESUME)`), or runs it now when there
/// is none.
///
/// # Safety
///
/// `work` must stay valid and untouched until `work.func(work)` runs, and
/// calling it exactly once, at any time until the end of the current
/// outermost [`Scope`] (or now, outside any), must be sound.
pub(crate) unsafe fn defer(work: *mut Callback) {
    let queued = TASK.with(|t| {
        if t.depth.get() == 0 {
            return false;
        }
        // Relaxed: a guess for the compare-and-swap.
        let mut head = t.works.load(Ordering::Relaxed);
        loop {
            // SAFETY: the caller keeps `work` valid; it is not on a list.
            unsafe { (*work).next.set(head) };
            // Release: the item's contents before it is reachable.
            match t
                .works
                .compare_exchange_weak(head, work, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => head = actual,
            }
        }
        // Release: the flag says the list is non-empty.
        t.notify
            .store(ptr::NonNull::<()>::dangling().as_ptr(), Ordering::Release);
        t.deferred.set(t.deferred.get() + 1);
        true
    });
    if !queued {
        // SAFETY: the caller allows calling it now.
        unsafe { ((*work).func)(work) };
    }
}

/// How many items this thread has queued as deferred work since it started
/// (immediate runs outside an operation are not counted).
///
/// ```
/// use lockref_dcache::testing::deferred_on_this_thread;
/// use lockref_dcache::{Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let before = deferred_on_this_thread();
/// cache.close(cache.open("/", OpenFlags::RDONLY).unwrap()); // __fput deferred to close's return
/// assert_eq!(deferred_on_this_thread(), before + 1);
/// ```
#[cfg(feature = "testing")]
pub fn deferred_on_this_thread() -> u64 {
    TASK.with(|t| t.deferred.get())
}
