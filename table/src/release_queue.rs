//! Releases run one after another on their thread, never one inside
//! another: a value may hold a handle of another entry (a child its
//! parent's), so a release that drops a value may put that entry's last
//! reference and release it in turn. Nested, a chain 100,000 deep would
//! need 100,000 frames. Instead, a release that starts while another runs
//! on its thread is queued, and the outermost one runs it after its own:
//! the stack stays flat at any depth (what `RefCounted::release`'s
//! returned parent does for one chain, for any value holding any handles).

use core::cell::{Cell, RefCell};
use core::ptr::NonNull;

use crate::sync::thread_local;

/// A release to run: the entry and the function that releases it (the
/// table's `K` and `V` erased).
struct Queued {
    entry: NonNull<()>,
    release: unsafe fn(NonNull<()>),
}

#[cfg(not(loom))]
thread_local! {
    /// Whether a release runs on this thread (then a new one is queued).
    static RUNNING: Cell<bool> = const { Cell::new(false) };
    /// The releases queued by the one running (run newest first).
    static QUEUED: RefCell<Vec<Queued>> = const { RefCell::new(Vec::new()) };
}

// Loom's `thread_local!` takes no `const` block.
#[cfg(loom)]
thread_local! {
    static RUNNING: Cell<bool> = Cell::new(false);
    static QUEUED: RefCell<Vec<Queued>> = RefCell::new(Vec::new());
}

/// Runs `release(entry)` now, or, if a release already runs on this thread
/// (this one was started from inside it, by a value's drop), after it, as
/// the running one returns.
///
/// # Safety
///
/// As for `release(entry)`, which is called once, on this thread, before
/// this returns or before the running release's outermost call returns.
pub(crate) unsafe fn run(entry: NonNull<()>, release: unsafe fn(NonNull<()>)) {
    // A thread whose locals are torn down (a handle dropped by another
    // thread-local's destructor) cannot queue: it releases at once, nested.
    let Ok(running) = RUNNING.try_with(|running| running.replace(true)) else {
        // SAFETY: the caller's guarantee.
        return unsafe { release(entry) };
    };
    if running {
        QUEUED.with(|queued| queued.borrow_mut().push(Queued { entry, release }));
        return;
    }
    // The outermost release: it runs its own, then each queued one (which
    // may queue more) until none is left. If one panics, `Drain`'s drop
    // runs the rest as the panic unwinds.
    let drain = Drain;
    // SAFETY: the caller's guarantee.
    unsafe { release(entry) };
    while let Some(next) = pop() {
        // SAFETY: queued by `run`, whose caller's guarantee it carries.
        unsafe { (next.release)(next.entry) };
    }
    drop(drain);
}

/// The newest queued release, if any (the borrow ends before it runs).
fn pop() -> Option<Queued> {
    QUEUED.with(|queued| queued.borrow_mut().pop())
}

/// Ends the outermost release: on a panic, runs what is still queued
/// (each one's own panic dropped: the first one propagates), so that no
/// entry is left dead and unreleased; then lets the next release run.
struct Drain;

impl Drop for Drain {
    fn drop(&mut self) {
        while let Some(next) = pop() {
            let run = std::panic::AssertUnwindSafe(|| {
                // SAFETY: queued by `run`, whose caller's guarantee it carries.
                unsafe { (next.release)(next.entry) }
            });
            let _ = std::panic::catch_unwind(run);
        }
        RUNNING.with(|running| running.set(false));
    }
}
