//! Deferred work run when an operation returns, standing in for the
//! kernel's `task_work` (what `fput` uses to run `__fput` on the way back
//! to user space).
//!
//! Each operation of the cache ([`Dcache::open`](super::Dcache::open),
//! [`Dcache::close`](super::Dcache::close), ...) enters a [`Scope`]. Work
//! deferred inside a scope is queued on the thread's list and run when the
//! outermost scope ends; work deferred outside any scope (a file handle
//! dropped by user code) runs at once, as if the thread returned to user
//! space right away. So no queued work outlives the operation that queued
//! it, and so none outlives the cache it refers to.
//!
//! The cost is real: a heap-allocated list entry, a thread-local lookup
//! and a later call, the overhead seed 001 removes from failed opens.

use std::cell::{Cell, RefCell};
use std::vec::Vec;

/// One piece of deferred work: a function and its argument.
struct Job {
    arg: *mut (),
    run: unsafe fn(*mut ()),
}

struct TaskWork {
    depth: Cell<usize>,
    pending: RefCell<Vec<Job>>,
    deferred: Cell<u64>,
}

crate::sync::thread_local! {
    // Not `const { .. }`: loom's `thread_local!` does not take that form.
    #[allow(clippy::missing_const_for_thread_local)]
    static TASK: TaskWork = TaskWork {
        depth: Cell::new(0),
        pending: RefCell::new(Vec::new()),
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

/// Runs queued work until none is left (work may queue more).
fn run_pending() {
    while let Some(job) = TASK.with(|t| t.pending.borrow_mut().pop()) {
        // SAFETY: `defer`'s contract: `run(arg)` is sound once, while the
        // operation that queued it is still in progress, which it is: we
        // run at the end of its outermost scope.
        unsafe { (job.run)(job.arg) };
    }
}

/// Defers `run(arg)` to the end of the current operation, or runs it now
/// when there is none.
///
/// # Safety
///
/// `run(arg)` must be sound to call exactly once, at any time until the
/// end of the current outermost [`Scope`] (or now, outside any).
pub(crate) unsafe fn defer(arg: *mut (), run: unsafe fn(*mut ())) {
    let queued = TASK.with(|t| {
        if t.depth.get() == 0 {
            return false;
        }
        t.pending.borrow_mut().push(Job { arg, run });
        t.deferred.set(t.deferred.get() + 1);
        true
    });
    if !queued {
        // SAFETY: the caller allows calling it now.
        unsafe { run(arg) };
    }
}

/// How many jobs this thread has queued as deferred work since it started
/// (immediate runs outside an operation are not counted).
///
/// ```
/// use lockref::dcache::{deferred_on_this_thread, Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let before = deferred_on_this_thread();
/// cache.close(cache.open("/", OpenFlags::RDONLY).unwrap()); // __fput deferred to close's return
/// assert_eq!(deferred_on_this_thread(), before + 1);
/// ```
pub fn deferred_on_this_thread() -> u64 {
    TASK.with(|t| t.deferred.get())
}
