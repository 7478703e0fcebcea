//! Deferred work run when an operation returns, standing in for the
//! kernel's `task_work` (what `fput` uses to run `__fput` on the way back
//! to user space), with the kernel's mechanism and its atomic operations
//! (Linux 6.6, `kernel/task_work.c` and the exit to user mode, the code
//! seed 001 was measured on):
//!
//! - the work item is a [`Callback`] embedded in the object (`struct
//!   callback_head` in `struct file`): no allocation;
//! - queueing is a compare-and-swap push onto the thread's list
//!   (`task_work_add`), then an atomic set of the thread's flag
//!   (`set_notify_resume`: `set_bit`, a locked read-modify-write);
//! - every return reads the flag with a plain load (the exit to user mode
//!   reads the thread's flags); only a set flag takes the slow return:
//!   the flag cleared by a read-modify-write (`clear_thread_flag`), then
//!   `task_work_run`: the list taken by a compare-and-swap, the thread's
//!   `pi_lock` taken and dropped (it waits out a concurrent
//!   `task_work_cancel`), each item called, and the list read again.
//!
//! So a deferred release costs five atomic read-modify-writes here, as in
//! the kernel (push, flag set, flag clear, list take, `pi_lock`), on top of
//! `fput`'s decrement; an operation that defers nothing costs two plain
//! loads on return. With the `testing` feature
//! [`task_work_atomics_on_this_thread`] counts them.
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

use crate::sync::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

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

/// `TIF_NOTIFY_RESUME`'s bit in the thread's flags.
const NOTIFY_RESUME: usize = 1;

struct TaskWork {
    depth: Cell<usize>,
    /// Queued items, newest first (`task->task_works`).
    works: AtomicPtr<Callback>,
    /// The thread's flags (`thread_info::flags`): [`NOTIFY_RESUME`] says
    /// work is pending.
    flags: AtomicUsize,
    /// `task->pi_lock`, which `task_work_run` takes and drops once per
    /// list it takes.
    pi_lock: AtomicBool,
    deferred: Cell<u64>,
    /// Atomic read-modify-writes of this mechanism (`testing` only).
    #[cfg(feature = "testing")]
    atomics: Cell<u64>,
}

impl TaskWork {
    /// Counts one atomic read-modify-write (`testing` only).
    #[inline(always)]
    fn counted(&self) {
        #[cfg(feature = "testing")]
        self.atomics.set(self.atomics.get() + 1);
    }
}

crate::sync::thread_local! {
    // Not `const { .. }`: loom's `thread_local!` does not take that form.
    #[allow(clippy::missing_const_for_thread_local)]
    static TASK: TaskWork = TaskWork {
        depth: Cell::new(0),
        works: AtomicPtr::new(ptr::null_mut()),
        flags: AtomicUsize::new(0),
        pi_lock: AtomicBool::new(false),
        deferred: Cell::new(0),
        #[cfg(feature = "testing")]
        atomics: Cell::new(0),
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
            exit_to_user_mode();
        }
    }
}

/// The return of an operation: a plain read of the flags, and only while
/// [`NOTIFY_RESUME`] is set, the flag cleared and [`task_work_run`].
fn exit_to_user_mode() {
    // Relaxed: the flag is only ever set by this thread (`defer` queues on
    // the current thread); the clear below orders what follows.
    while TASK.with(|t| t.flags.load(Ordering::Relaxed)) & NOTIFY_RESUME != 0 {
        TASK.with(|t| {
            t.counted();
            // Acquire, as `smp_mb__after_atomic` after the kernel's clear:
            // the list is read after the flag is seen cleared.
            t.flags.fetch_and(!NOTIFY_RESUME, Ordering::Acquire);
        });
        task_work_run();
    }
}

/// `task_work_run`: takes the whole list, waits out a `task_work_cancel`
/// on `pi_lock`, calls each item in queue order, until the list stays
/// empty (items may queue more).
fn task_work_run() {
    loop {
        let list = TASK.with(|t| {
            // Relaxed: a look; the swap below orders the items.
            if t.works.load(Ordering::Relaxed).is_null() {
                return ptr::null_mut();
            }
            t.counted();
            // Acquire: the items' contents were written before their
            // Release push.
            let list = t.works.swap(ptr::null_mut(), Ordering::Acquire);
            t.counted();
            // Acquire, Release: `raw_spin_lock_irq(&pi_lock)` then its
            // unlock. Only this thread takes it (nothing here cancels
            // work), so it is always free.
            let taken =
                t.pi_lock
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed);
            debug_assert!(taken.is_ok(), "pi_lock is only this thread's");
            t.pi_lock.store(false, Ordering::Release);
            list
        });
        if list.is_null() {
            return;
        }
        run_in_queue_order(list);
    }
}

/// Reverses a detached list (newest first) and calls each item.
fn run_in_queue_order(mut list: *mut Callback) {
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
        // SAFETY: as above; read `next` before the item runs (it may free
        // itself).
        let (next, func) = unsafe { ((*ordered).next.get(), (*ordered).func) };
        // SAFETY: `defer`'s contract: `func(item)` is sound once, before the
        // end of the operation that queued it: now.
        unsafe { func(ordered) };
        ordered = next;
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
            t.counted();
            // Release: the item's contents before it is reachable. Strong,
            // as the kernel's `try_cmpxchg`: a spurious failure would be an
            // operation the kernel does not perform.
            match t
                .works
                .compare_exchange(head, work, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => head = actual,
            }
        }
        t.counted();
        // Release: the flag says the list is non-empty (`set_bit`).
        t.flags.fetch_or(NOTIFY_RESUME, Ordering::Release);
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

/// How many atomic read-modify-writes the deferred-work mechanism has
/// performed on this thread since it started: five per deferred item
/// (`task_work_add`'s push, the flag's set and clear, `task_work_run`'s
/// take of the list and its `pi_lock`), none for an operation that defers
/// nothing (its return reads the flag).
///
/// ```
/// use lockref_dcache::testing::task_work_atomics_on_this_thread;
/// use lockref_dcache::{Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let before = task_work_atomics_on_this_thread();
/// cache.close(cache.open("/", OpenFlags::RDONLY).unwrap()); // __fput deferred to close's return
/// assert_eq!(task_work_atomics_on_this_thread(), before + 5);
/// ```
#[cfg(feature = "testing")]
pub fn task_work_atomics_on_this_thread() -> u64 {
    TASK.with(|t| t.atomics.get())
}
