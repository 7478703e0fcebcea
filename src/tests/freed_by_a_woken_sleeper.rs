//! An unlock that wakes a sleeper must release the lock inside the park's
//! callback, as its last touch of the word: once the lock is free, the
//! thread that takes it may be the object's last holder, and free it. An
//! unlock that released first and woke afterwards (touching the word to
//! clear the sleeper flag) would write to freed memory.
//!
//! The test's park never sleeps (its waiter flags itself and spins, as a
//! sleeper that is woken at once would), and its unpark gives the waiter
//! a while to run before it calls the unlock's callback: the window in
//! which a lock released early would be taken, the object freed, and the
//! callback's touch land on freed memory. A plain run cannot see that
//! touch; Miri reports it (`.ci/run` runs this under both aliasing
//! models, every feature combination). With the unlock as it is, the
//! waiter cannot take the lock in that window, and the run is clean.

use std::boxed::Box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use crate::park::{Park, Parked, Unparked};
use crate::raw::policy::KernelRetry;
use crate::{CasWord, LockRef};

/// Whether the next unpark gives the waiter its window (the holder's).
static NEXT_UNPARK_WAITS: AtomicBool = AtomicBool::new(false);
/// Set by the waiter once it has freed the object.
static FREED: AtomicBool = AtomicBool::new(false);

/// A park that never sleeps, and whose first unpark waits for the waiter
/// (a bounded while) before it calls the unlock's callback.
struct WindowPark;

// SAFETY: it never sleeps, so no wakeup can be lost: `park` returns
// `Skipped` (the lock looks again), and `unpark_one` runs the callback
// once, telling it no thread was woken; it never reads through the key.
unsafe impl Park for WindowPark {
    const SLEEPS: bool = true;

    fn park(_key: usize, _still_wait: impl FnOnce() -> bool) -> Parked {
        thread::yield_now();
        Parked::Skipped
    }

    fn unpark_one(_key: usize, callback: impl FnOnce(Unparked) -> bool) {
        if NEXT_UNPARK_WAITS.swap(false, Ordering::SeqCst) {
            for _ in 0..200 {
                if FREED.load(Ordering::SeqCst) {
                    break;
                }
                thread::yield_now();
            }
        }
        callback(Unparked {
            woke: false,
            more: false,
            be_fair: false,
        });
    }
}

type Object = LockRef<u64, CasWord<KernelRetry, WindowPark>>;

/// Wraps the object's pointer to send it to the waiter.
struct Owned(*mut Object);
// SAFETY: the object is `Sync`; the waiter frees it once, last.
unsafe impl Send for Owned {}

#[test]
fn a_sleeper_woken_by_the_last_holder_frees_the_object() {
    // Two references: the holder's and the waiter's.
    let object = Box::into_raw(Box::new(Object::with_raw(
        7,
        CasWord::with_count(2).unwrap(),
    )));
    // SAFETY: the box lives until the waiter frees it, after the holder's
    // last touch (the unlock below).
    let r = unsafe { &*object };
    let held = r.lock();
    let owned = Owned(object);
    let waiter = thread::spawn(move || {
        let owned = owned;
        let object = owned.0;
        {
            // SAFETY: the waiter's reference keeps the box.
            let r = unsafe { &*object };
            let mut g = r.lock();
            assert_eq!(*g, 8, "the holder's write, seen after its unlock");
            g.decrement().expect("the waiter's reference");
            assert!(g.kill_if_zero(), "the last reference");
        }
        // SAFETY: dead at zero, the last holder's lock released; nothing
        // else points to it.
        drop(unsafe { Box::from_raw(object) });
        FREED.store(true, Ordering::SeqCst);
    });
    // Wait until the waiter has flagged itself: the unlock then goes
    // through the park.
    while !r.flags_a_sleeper() {
        thread::yield_now();
    }
    let mut held = held;
    *held += 1;
    held.decrement().expect("the holder's reference");
    NEXT_UNPARK_WAITS.store(true, Ordering::SeqCst);
    // The holder's last touch of the object: nothing of it is used after.
    drop(held);
    waiter.join().unwrap();
    assert!(FREED.load(Ordering::SeqCst));
}
