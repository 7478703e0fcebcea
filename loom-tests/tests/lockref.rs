//! Loom models of `LockRef`, one per race. Run with `--cfg loom --cfg
//! lockref_loom`. Every racing side runs on a spawned thread: loom 0.7
//! explores far fewer interleavings of work done on the model's main
//! thread.
#![cfg(loom)]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use lockref::policy::{ExpBackoff, KernelRetry, Policy};
use lockref::{LockRef, PutOrLock, DEAD, SATURATED};
use lockref_loom_tests::{model, model_with_branches, OneAttempt, WaitTwice};
use loom::sync::Arc;
use loom::thread;

/// Drops a reference as `dput`'s fast path does: lockless, else under the
/// lock.
fn put<T, P: Policy>(r: &LockRef<T, P>) {
    if r.put_return().is_err() {
        r.lock().decrement().expect("a held reference to drop");
    }
}

fn get_put_keep_count_exact<P: Policy + 'static>() {
    model(|| {
        let r = Arc::new(LockRef::<(), P>::with_policy(()));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || {
                    r.get();
                    put(&r);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), 1);
    });
}

/// Two threads get and put concurrently: the count ends exact.
#[test]
fn concurrent_get_put_keep_count_exact() {
    get_put_keep_count_exact::<KernelRetry>();
}

#[test]
fn concurrent_get_put_keep_count_exact_exp_backoff() {
    get_put_keep_count_exact::<ExpBackoff>();
}

#[test]
fn concurrent_get_put_keep_count_exact_wait_unlock() {
    get_put_keep_count_exact::<WaitTwice>();
}

/// The last holder's put_or_lock races a lookup's get_not_dead at count 1.
/// Either the put saw the last reference, locked, dropped it and killed the
/// object, and any reference the lookup took was dropped before that; or
/// the lookup's reference came first and the put only decremented. A
/// reference the lookup holds never sees a killed object, and the put
/// never leaves the object unkilled without the lookup holding it.
#[test]
fn put_or_lock_races_get_at_count_one() {
    model(|| {
        let r = Arc::new(LockRef::<bool>::new(false)); // data: killed
        let lookup = {
            let r = r.clone();
            thread::spawn(move || {
                if r.get_not_dead() {
                    // A live reference: the object was not killed.
                    assert!(!*r.lock());
                    put(&r);
                    true
                } else {
                    false
                }
            })
        };
        let killer = {
            let r = r.clone();
            thread::spawn(move || match r.put_or_lock() {
                PutOrLock::Put => false,
                PutOrLock::Locked(mut g) => {
                    assert_eq!(g.count(), 1);
                    assert_eq!(g.decrement(), Ok(0));
                    g.mark_dead();
                    *g = true;
                    true
                }
            })
        };
        let killed = killer.join().unwrap();
        let found = lookup.join().unwrap();
        assert!(
            found || killed,
            "the object is neither referenced nor killed"
        );
        assert_eq!(r.count(), if killed { DEAD } else { 0 });
    });
}

/// A killer marks a count-0 object dead under the lock only if nobody took
/// a reference; a lookup's get_not_dead races it. No reference is granted
/// after death, and none is lost before it.
#[test]
fn mark_dead_under_lock_vs_get_not_dead() {
    model(|| {
        let r = Arc::new(LockRef::with_count((), 0).unwrap());
        let lookup = {
            let r = r.clone();
            thread::spawn(move || r.get_not_dead())
        };
        let killer = {
            let r = r.clone();
            thread::spawn(move || {
                let mut g = r.lock();
                if g.count() == 0 {
                    g.mark_dead();
                    true
                } else {
                    false
                }
            })
        };
        let killed = killer.join().unwrap();
        let found = lookup.join().unwrap();
        assert_ne!(found, killed);
        assert_eq!(r.count(), if found { 1 } else { DEAD });
    });
}

/// Lockless gets and puts race a guard that reads and writes the data and
/// the count: no lost update to either, and the count never changes
/// lock-free while the guard holds the lock.
#[test]
fn lockless_updates_vs_guard() {
    model(|| {
        let r = Arc::new(LockRef::new(0_u32));
        let other = {
            let r = r.clone();
            thread::spawn(move || {
                r.get();
                put(&r);
            })
        };
        let holder = {
            let r = r.clone();
            thread::spawn(move || {
                let mut g = r.lock();
                let before = g.count();
                *g += 1;
                thread::yield_now();
                assert_eq!(g.count(), before, "count changed under the lock");
                g.increment().unwrap();
            })
        };
        holder.join().unwrap();
        other.join().unwrap();
        let g = r.lock();
        assert_eq!(*g, 1);
        assert_eq!(g.count(), 2);
    });
}

/// With a one-attempt budget, a failed compare-and-swap sends the operation
/// to the locked fallback; counts stay exact, and loom did reach the
/// fallback in some execution.
#[test]
fn locked_fallback_after_retries_run_out() {
    static FELL_BACK: AtomicBool = AtomicBool::new(false);
    model(|| {
        let r = Arc::new(LockRef::<(), OneAttempt>::with_policy(()));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || r.get())
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), 3);
        let stats = r.stats();
        assert_eq!(stats.operations, 2);
        assert_eq!(stats.lockless + stats.fallbacks, 2);
        if stats.fallbacks > 0 {
            assert_eq!(stats.cas_failures, stats.fallbacks);
            FELL_BACK.store(true, SeqCst);
        }
    });
    assert!(FELL_BACK.load(SeqCst), "no execution reached the fallback");
}

/// Seed 003's policy waits on a held lock, but within its budget: the
/// operation still completes (under the lock) while a holder keeps it.
#[test]
fn wait_unlock_policy_keeps_forward_progress() {
    model(|| {
        let r = Arc::new(LockRef::<u32, WaitTwice>::with_policy(0));
        let holder = {
            let r = r.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    *r.lock() += 1;
                }
            })
        };
        let getter = {
            let r = r.clone();
            thread::spawn(move || r.get())
        };
        getter.join().unwrap();
        holder.join().unwrap();
        assert_eq!(r.count(), 2);
        assert_eq!(*r.lock(), 2);
    });
}

/// Concurrent gets near the top saturate and stay; a put never brings a
/// saturated count back down.
#[test]
fn saturation_under_concurrent_gets() {
    model(|| {
        let r = Arc::new(LockRef::with_count((), SATURATED - 1).unwrap());
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || {
                    r.get();
                    assert_eq!(r.put_return(), Ok(SATURATED as u32));
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), SATURATED);
    });
}

/// The ticket lock excludes: two lockers crossing the 16-bit ticket wrap
/// both update the data (loom's cell tracking would flag overlap).
#[test]
fn ticket_lock_mutual_exclusion_across_wrap() {
    model(|| {
        let r = Arc::new(LockRef::<u32>::at_ticket(0, 1, 0xffff));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || {
                    let mut g = r.lock();
                    let v = *g;
                    thread::yield_now();
                    *g = v + 1;
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*r.lock(), 2);
        assert_eq!(r.count(), 1);
    });
}

/// Two holders use the object, then drop their references lock-free; the
/// one whose put returns zero reads what both wrote (as `Arc::drop` before
/// freeing). Loom flags the read if a put's Release or the Acquire at zero
/// were missing.
#[test]
fn last_put_sees_every_holders_writes() {
    use loom::cell::UnsafeCell;

    struct Obj {
        r: LockRef<()>,
        slots: [UnsafeCell<u32>; 2],
    }
    // SAFETY: each slot is written by one thread while it holds a
    // reference, and read only by the thread that dropped the last one.
    unsafe impl Sync for Obj {}

    model(|| {
        let obj = Arc::new(Obj {
            r: LockRef::with_count((), 2).unwrap(),
            slots: [UnsafeCell::new(0), UnsafeCell::new(0)],
        });
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let obj = obj.clone();
                thread::spawn(move || {
                    // SAFETY: slot `i` is ours while we hold the reference.
                    obj.slots[i].with_mut(|p| unsafe { *p = i as u32 + 1 });
                    let left = loop {
                        if let Ok(n) = obj.r.put_return() {
                            break n;
                        }
                    };
                    if left == 0 {
                        // SAFETY: the last reference is gone; nobody else
                        // touches the slots any more.
                        let sum: u32 = obj.slots.iter().map(|s| s.with(|p| unsafe { *p })).sum();
                        assert_eq!(sum, 3);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(obj.r.count(), 0);
    });
}

/// A locker that finds every ticket out (one short of wrapping `next`
/// onto `owner`; drawn here for waiters that never come) waits without
/// drawing, under every interleaving with a `try_lock`, so the lock never
/// reads free while held; once the tickets are served, it gets the lock.
#[test]
fn ticket_cap_stops_a_locker_from_wrapping_the_ticket() {
    // The locker at the cap spins (loom yields) until tickets are served.
    model_with_branches(10_000, || {
        let r = Arc::new(LockRef::new(0_u32));
        r.draw_tickets(u16::MAX);
        let capped = r.ticket_state();
        let locker = {
            let r = r.clone();
            thread::spawn(move || *r.lock() += 1)
        };
        let checker = {
            let r = r.clone();
            thread::spawn(move || {
                assert!(r.try_lock().is_none(), "the lock reads free while held");
                assert_eq!(r.ticket_state(), capped, "a ticket drawn past the cap");
                r.return_tickets(u16::MAX);
            })
        };
        checker.join().unwrap();
        locker.join().unwrap();
        assert_eq!(*r.lock(), 1);
        let (owner, next) = r.ticket_state();
        assert_eq!(owner, next);
    });
}

/// Data a lock holder wrote, outside the lockref, before unlocking: a
/// thread that then takes a reference through a lookup reads it, so the
/// reference's `Acquire` (or the fence that stands for it) must order it.
struct Published(loom::cell::UnsafeCell<u32>);

// SAFETY: written once before the publishing unlock, read only after an
// acquiring reference or lock; loom checks exactly that.
unsafe impl Sync for Published {}

/// A holder sets the count from 0 to `to` under the lock after writing
/// data; a lookup's `get_not_zero` fails at 0 or succeeds at `to` and then
/// reads the data.
fn lookup_sees_what_the_lock_holder_published(to: i32) {
    model(move || {
        let r = Arc::new(LockRef::with_count((), 0).unwrap());
        let data = Arc::new(Published(loom::cell::UnsafeCell::new(0)));
        let writer = {
            let (r, data) = (r.clone(), data.clone());
            thread::spawn(move || {
                let mut g = r.lock();
                // SAFETY: nobody reads before the unlock publishes it.
                data.0.with_mut(|p| unsafe { *p = 7 });
                g.set_count(to).unwrap();
            })
        };
        // The lookup runs on a thread of its own: loom 0.7 explores far
        // fewer interleavings of work done on the model's main thread.
        let lookup = thread::spawn(move || {
            if r.get_not_zero() {
                // SAFETY: the reference's Acquire ordered the write before us.
                assert_eq!(data.0.with(|p| unsafe { *p }), 7);
            }
        });
        writer.join().unwrap();
        lookup.join().unwrap();
    });
}

/// `get_not_zero`/`get_not_dead` take their reference with `Acquire`: a
/// lookup sees what the last lock holder wrote (fails if it is `Relaxed`).
#[test]
fn lookup_reference_acquires_what_the_holder_published() {
    lookup_sees_what_the_lock_holder_published(1);
}

/// On a saturated count the lookup's reference is taken without a write;
/// the `Acquire` fence there gives it the same ordering (fails without it).
#[test]
fn saturated_lookup_reference_acquires_what_the_holder_published() {
    lookup_sees_what_the_lock_holder_published(SATURATED);
}

/// `try_lock` acquires: a thread that gets the lock after a holder sees
/// what the holder wrote (fails if `try_lock` is `Relaxed`).
#[test]
fn try_lock_acquires_what_the_previous_holder_wrote() {
    model(|| {
        let r = Arc::new(LockRef::new(()));
        let data = Arc::new(Published(loom::cell::UnsafeCell::new(0)));
        let writer = {
            let (r, data) = (r.clone(), data.clone());
            thread::spawn(move || {
                let _g = r.lock();
                // SAFETY: under the lock.
                data.0.with_mut(|p| unsafe { *p += 1 });
            })
        };
        let trier = thread::spawn(move || {
            if let Some(_g) = r.try_lock() {
                // SAFETY: under the lock.
                data.0.with_mut(|p| unsafe { *p += 1 });
            }
        });
        writer.join().unwrap();
        trier.join().unwrap();
    });
}
