//! Loom models of the lock's waiters going to sleep and the unlock waking
//! them (`src/raw/lock.rs`), one per race. Under `--cfg lockref_loom` the
//! sleep goes through loom (`park::LoomPark`: a queue under a loom mutex,
//! a loom condition variable; every other unpark hands the lock off), and a
//! waiter sleeps after one spin, so the models reach the sleep at once. A
//! lost wakeup leaves a thread asleep forever: loom reports the deadlock.
//! Loom's cell tracking reports two holders at once.
#![cfg(loom)]

use lockref::LockRef;
use lockref_loom_tests::model;
use loom::sync::Arc;
use loom::thread;

/// Takes the lock and bumps the data through a yield, so that two holders
/// at once would overlap their accesses (loom's cell tracking).
fn bump(r: &LockRef<u32>) {
    let mut g = r.lock();
    let v = *g;
    thread::yield_now();
    *g = v + 1;
}

/// The lost wakeup: a waiter flags itself and goes to sleep while the
/// holder unlocks, in every order (the flag before or after the unlock's
/// look at it, the check under the queue's lock before or after the
/// unpark). The waiter always gets the lock.
#[test]
fn an_unlock_races_a_waiter_going_to_sleep() {
    model(|| {
        let r = Arc::new(LockRef::new(0_u32));
        let holder = {
            let r = r.clone();
            thread::spawn(move || bump(&r))
        };
        let waiter = {
            let r = r.clone();
            thread::spawn(move || bump(&r))
        };
        holder.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(*r.lock(), 2);
        assert!(!r.lock_is_held());
        assert!(!r.flags_a_sleeper(), "no sleeper left, no flag");
    });
}

/// Two sleepers and one unlock: the holder's unlock wakes one (and keeps
/// the flag for the other, or hands the lock off), whose own unlock wakes
/// the second. Neither is left asleep.
#[test]
fn two_sleepers_and_one_unlock() {
    model(|| {
        let r = Arc::new(LockRef::new(0_u32));
        let held = r.lock();
        let sleepers: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || *r.lock() += 1)
            })
            .collect();
        drop(held);
        for s in sleepers {
            s.join().unwrap();
        }
        assert_eq!(*r.lock(), 2);
        assert!(!r.flags_a_sleeper(), "no sleeper left, no flag");
    });
}

/// A waiter moving from spinning to sleeping while the holder unlocks and
/// takes the lock again (a barging relock between the waiter's look and
/// its sleep): the waiter's check under the queue's lock sees the lock
/// held again and sleeps, and the second unlock wakes it; lockless count
/// traffic beside it changes nothing of the lock half.
#[test]
fn a_waiter_moves_from_spinning_to_sleeping_while_the_holder_unlocks() {
    model(|| {
        let r = Arc::new(LockRef::new(0_u32));
        let holder = {
            let r = r.clone();
            thread::spawn(move || {
                bump(&r);
                r.get();
                bump(&r);
                r.lock().decrement().unwrap();
            })
        };
        let waiter = {
            let r = r.clone();
            thread::spawn(move || bump(&r))
        };
        holder.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(*r.lock(), 3);
        assert_eq!(r.count(), Some(1));
        assert!(!r.flags_a_sleeper(), "no sleeper left, no flag");
    });
}
