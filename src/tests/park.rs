//! The lock's waiters: they spin a while, then sleep in the word's
//! [`Park`](crate::park::Park) (with `std`, `parking_lot_core`), and the
//! unlock wakes them; no wakeup is lost, and the sleeper flag is gone once
//! no one sleeps. The interleavings are the loom models'
//! (`loom-tests/tests/park.rs`); these run the real sleep.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::vec::Vec;

use super::{ITERS, THREADS};
use crate::{LockRef, PutOrLock};

#[test]
fn lock_cycles_keep_the_count_and_the_data() {
    let r = LockRef::<u32>::with_count(0, 1).unwrap();
    for i in 0..6 {
        let mut g = r.lock();
        *g += 1;
        g.decrement().unwrap();
        g.increment().unwrap();
        drop(g);
        let g = r.try_lock().expect("free after unlock");
        drop(g);
        assert!(r.get_not_zero(), "iteration {i}");
        assert!(matches!(r.put_or_lock(), PutOrLock::Put));
        assert_eq!(r.count(), Some(1), "iteration {i}");
    }
    assert_eq!(*r.lock(), 6);
    assert!(!r.lock_is_held() && !r.flags_a_sleeper());
}

/// A waiter that finds the lock held long enough goes to sleep (it flags
/// itself in the word), and the unlock wakes it: it gets the lock.
#[cfg(feature = "std")]
#[test]
fn a_waiter_sleeps_and_the_unlock_wakes_it() {
    let r = LockRef::new(0_u32);
    let held = r.lock();
    thread::scope(|s| {
        let waiter = s.spawn(|| *r.lock() += 1);
        // Bounded in looks, not in time: the waiter flags itself after its
        // spins, whenever it runs.
        let mut looks = 0_u64;
        while !r.flags_a_sleeper() {
            looks += 1;
            assert!(looks < 100_000_000, "the waiter never went to sleep");
            thread::yield_now();
        }
        drop(held);
        waiter.join().unwrap();
    });
    assert_eq!(*r.lock(), 1);
    assert!(!r.flags_a_sleeper(), "no sleeper left: the flag is cleared");
}

/// Many lockers on one lock, with lockless traffic beside them: each gets
/// the lock every time (no wakeup lost: a lost one hangs the test), the
/// data and the count come out exact, and at rest the lock is free with no
/// sleeper flagged.
#[test]
fn many_lockers_and_lockless_traffic_on_one_lock() {
    let r = LockRef::new(0_u64);
    let stop = AtomicBool::new(false);
    let lockers = THREADS;
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                r.get();
                assert!(matches!(r.put_or_lock(), PutOrLock::Put));
            }
        });
        let threads: Vec<_> = (0..lockers)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..ITERS {
                        *r.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(*r.lock(), (lockers * ITERS) as u64);
    assert_eq!(r.count(), Some(1));
    assert!(!r.lock_is_held() && !r.flags_a_sleeper());
}
