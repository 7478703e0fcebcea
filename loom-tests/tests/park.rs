//! Loom models of the lock's waiters going to sleep and the unlock waking
//! them (`src/raw/lock.rs`), one per race. Under `--cfg lockref_loom` the
//! sleep goes through loom (`park::LoomPark`: a queue under a loom mutex,
//! a loom condition variable; every other unpark hands the lock off), and a
//! waiter sleeps after one spin, so the models reach the sleep at once. A
//! lost wakeup leaves a thread asleep forever: loom reports the deadlock.
//! Loom's cell tracking reports two holders at once.
#![cfg(loom)]

use lockref::policy::KernelRetry;
use lockref::{CasWord, LockRef};
use lockref_loom_tests::{bump, model, two_holders_take_turns};
use loom::sync::Arc;
use loom::thread;

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
    model(|| two_sleepers_woken_by_one_unlock(|_| {}));
}

/// The holder's lock, two waiters that go to sleep, the holder's unlock,
/// then `after_unlock` on the holder's thread; neither waiter is left
/// asleep, and no flag is left.
fn two_sleepers_woken_by_one_unlock(after_unlock: impl Fn(&LockRef<u32>)) {
    let r = Arc::new(LockRef::new(0_u32));
    let held = r.lock();
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            let r = r.clone();
            thread::spawn(move || *r.lock() += 1)
        })
        .collect();
    drop(held);
    after_unlock(&r);
    for s in sleepers {
        s.join().unwrap();
    }
    assert_eq!(*r.lock(), 2);
    assert!(!r.flags_a_sleeper(), "no sleeper left, no flag");
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

/// A custom [`Park`] for the models of its contract: sleepers queue under
/// a mutex (the check and the queueing one step with the unpark, as the
/// contract asks), every wake hands the lock off (`be_fair`), and the
/// sleeper waits for its wake by polling a flag of its own, stored after
/// the callback with `WAKE_ORDER` and loaded with `SEE_ORDER`.
mod flag_park {
    use lockref::park::{Park, Parked, Unparked};
    use loom::sync::atomic::{AtomicU8, Ordering};
    use loom::sync::Mutex;
    use loom::thread;

    /// No wake yet; woken; woken and handed the lock.
    const ASLEEP: u8 = 0;
    const WOKEN: u8 = 1;
    const HANDED_OFF: u8 = 2;

    loom::lazy_static! {
        /// The one sleeper's key, if any (the models have one waiter).
        static ref SLEEPER: Mutex<Option<usize>> = Mutex::new(None);
        /// The sleeper's wake.
        static ref WAKE: AtomicU8 = AtomicU8::new(ASLEEP);
    }

    /// `SYNCHRONIZES`: the wake is a Release store the sleeper loads with
    /// Acquire (the contract's "a wake synchronizes"); without, both are
    /// Relaxed, and every other promise still holds.
    pub struct FlagPark<const SYNCHRONIZES: bool>;

    impl<const SYNCHRONIZES: bool> FlagPark<SYNCHRONIZES> {
        const WAKE_ORDER: Ordering = if SYNCHRONIZES {
            Ordering::Release
        } else {
            Ordering::Relaxed
        };
        const SEE_ORDER: Ordering = if SYNCHRONIZES {
            Ordering::Acquire
        } else {
            Ordering::Relaxed
        };
    }

    // SAFETY: with `SYNCHRONIZES` this keeps the whole contract. Without
    // it, it breaks exactly one promise (a wake synchronizes), on purpose:
    // the model that uses it expects the race the contract names.
    unsafe impl<const SYNCHRONIZES: bool> Park for FlagPark<SYNCHRONIZES> {
        const SLEEPS: bool = true;

        fn park(key: usize, still_wait: impl FnOnce() -> bool) -> Parked {
            {
                let mut sleeper = SLEEPER.lock().unwrap();
                if !still_wait() {
                    return Parked::Skipped;
                }
                *sleeper = Some(key);
                WAKE.store(ASLEEP, Ordering::Relaxed);
            }
            loop {
                match WAKE.load(Self::SEE_ORDER) {
                    ASLEEP => thread::yield_now(),
                    WOKEN => return Parked::Woken,
                    _ => return Parked::HandedOff,
                }
            }
        }

        fn unpark_one(key: usize, callback: impl FnOnce(Unparked) -> bool) {
            let handed = {
                let mut sleeper = SLEEPER.lock().unwrap();
                let woke = *sleeper == Some(key);
                if woke {
                    *sleeper = None;
                }
                let handed = callback(Unparked {
                    woke,
                    more: false,
                    be_fair: true,
                });
                woke.then_some(handed)
            };
            // After the callback, outside the queue's lock: the wake.
            if let Some(handed) = handed {
                let wake = if handed { HANDED_OFF } else { WOKEN };
                WAKE.store(wake, Self::WAKE_ORDER);
            }
        }
    }
}

/// `Park`'s contract, "a wake synchronizes", kept: a custom park whose
/// wake is a Release store the sleeper acquires hands the lock off with
/// every write of the old holder seen by the new one.
#[test]
fn a_custom_park_whose_wake_synchronizes_hands_the_lock_off() {
    model(two_holders_take_turns::<CasWord<KernelRetry, flag_park::FlagPark<true>>>);
}

/// `Park`'s contract, "a wake synchronizes", broken: the same park with a
/// Relaxed wake keeps every other promise, yet the sleeper it hands the
/// lock to may read the lock word as it was before the unlock (nothing
/// orders that read after the hand-off's Release), so the new holder's
/// accesses to the data race the old holder's: loom reports the two
/// holders' conflicting accesses to the data's cell.
#[test]
#[should_panic(expected = "Causality violation")]
fn a_custom_park_whose_wake_does_not_synchronize_lets_two_holders_race() {
    model(two_holders_take_turns::<CasWord<KernelRetry, flag_park::FlagPark<false>>>);
}

/// A lockless count change while a sleeper is flagged: the holder's
/// unlock woke one of two sleepers without handing off (the flag stays,
/// for the other), and before the woken one takes the lock, a lockless
/// get and put land on the free word. They keep the sleeper flag (a
/// compare-and-swap of the count half only), so the woken one's unlock
/// wakes the other. (The mutant whose count compare-and-swap drops the
/// flag leaves the second sleeper asleep forever: loom reports the
/// deadlock.)
#[test]
fn a_lockless_get_while_a_sleeper_is_flagged() {
    model(|| {
        two_sleepers_woken_by_one_unlock(|r| {
            r.get();
            if let lockref::PutOrLock::Locked(mut g) = r.put_or_lock() {
                g.decrement().expect("the reference just taken");
            }
        });
    });
}
