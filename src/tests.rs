//! Unit tests: every operation in every state (unlocked, locked, dead,
//! saturated, zero), the ticket wrap, and bounded multi-thread stress tests
//! with exact final counts. They also run under Miri (smaller loops).

use std::format;
use std::sync::mpsc;
use std::sync::Barrier;
use std::thread;
use std::vec::Vec;

use crate::policy::{ExpBackoff, KernelRetry, Policy, WaitUnlock};
use crate::{CountError, LockRef, PutError, PutOrLock, DEAD, LOCKLESS, SATURATED};

/// Iterations per thread in the stress tests.
const ITERS: usize = if cfg!(miri) { 50 } else { 20_000 };
/// Threads in the stress tests (oversubscribes a 2-core machine).
const THREADS: usize = if cfg!(miri) { 3 } else { 4 };

/// A policy that never tries the lockless path: every operation falls back.
#[derive(Default)]
struct NoAttempts;

impl Policy for NoAttempts {
    const MAX_ATTEMPTS: u32 = 0;
    fn cas_failed(&mut self) {}
    fn lock_held(&mut self) -> bool {
        true
    }
}

fn dead<P: Policy>() -> LockRef<(), P> {
    let r = LockRef::<(), P>::with_policy_and_count((), 0).unwrap();
    r.lock().mark_dead();
    r
}

fn saturated<P: Policy>() -> LockRef<(), P> {
    LockRef::<(), P>::with_policy_and_count((), SATURATED).unwrap()
}

/// Runs `f` for every policy, and for one that always falls back.
macro_rules! for_each_policy {
    ($f:ident) => {{
        $f::<KernelRetry>();
        $f::<WaitUnlock>();
        $f::<ExpBackoff>();
        $f::<NoAttempts>();
    }};
}

#[test]
fn construct() {
    assert_eq!(LockRef::<()>::new(()).count(), 1);
    assert_eq!(LockRef::<()>::with_count((), 0).unwrap().count(), 0);
    let r = LockRef::<()>::with_count((), SATURATED).unwrap();
    assert_eq!(r.count(), SATURATED);
    assert_eq!(
        LockRef::<()>::with_count((), -1).err(),
        Some(CountError::OutOfRange)
    );
    assert_eq!(LockRef::<u8>::default().into_inner(), 0);
}

#[test]
fn get_live_zero_saturated() {
    fn check<P: Policy>() {
        let r = LockRef::<(), P>::with_policy(());
        r.get();
        r.get();
        assert_eq!(r.count(), 3);
        let zero = LockRef::<(), P>::with_policy_and_count((), 0).unwrap();
        zero.get();
        assert_eq!(zero.count(), 1);
        let s = saturated::<P>();
        s.get();
        assert_eq!(s.count(), SATURATED);
        let near = LockRef::<(), P>::with_policy_and_count((), SATURATED - 1).unwrap();
        near.get();
        near.get();
        assert_eq!(near.count(), SATURATED);
    }
    for_each_policy!(check);
}

#[test]
#[should_panic(expected = "dead object")]
fn get_dead_panics() {
    dead::<KernelRetry>().get();
}

#[test]
#[should_panic(expected = "dead object")]
fn get_dead_panics_locked_path() {
    dead::<NoAttempts>().get();
}

#[test]
fn get_not_zero_states() {
    fn check<P: Policy>() {
        let zero = LockRef::<(), P>::with_policy_and_count((), 0).unwrap();
        assert!(!zero.get_not_zero());
        assert_eq!(zero.count(), 0);
        let r = LockRef::<(), P>::with_policy(());
        assert!(r.get_not_zero());
        assert_eq!(r.count(), 2);
        let d = dead::<P>();
        assert!(!d.get_not_zero());
        assert_eq!(d.count(), DEAD);
        let s = saturated::<P>();
        assert!(s.get_not_zero());
        assert_eq!(s.count(), SATURATED);
    }
    for_each_policy!(check);
}

#[test]
fn get_not_dead_states() {
    fn check<P: Policy>() {
        let zero = LockRef::<(), P>::with_policy_and_count((), 0).unwrap();
        assert!(zero.get_not_dead());
        assert_eq!(zero.count(), 1);
        let d = dead::<P>();
        assert!(!d.get_not_dead());
        assert_eq!(d.count(), DEAD);
        let s = saturated::<P>();
        assert!(s.get_not_dead());
        assert_eq!(s.count(), SATURATED);
    }
    for_each_policy!(check);
}

#[test]
fn put_return_states() {
    let r = LockRef::<()>::with_count((), 2).unwrap();
    if !LOCKLESS {
        assert_eq!(r.put_return(), Err(PutError::Unsupported));
        assert_eq!(r.count(), 2);
        return;
    }
    assert_eq!(r.put_return(), Ok(1));
    assert_eq!(r.put_return(), Ok(0));
    assert_eq!(r.put_return(), Err(PutError::NotPositive));
    assert_eq!(r.count(), 0);
    let d = dead::<KernelRetry>();
    assert_eq!(d.put_return(), Err(PutError::NotPositive));
    assert_eq!(d.count(), DEAD);
    let s = saturated::<KernelRetry>();
    assert_eq!(s.put_return(), Ok(SATURATED as u32));
    assert_eq!(s.count(), SATURATED);
    let locked = LockRef::<()>::new(());
    let g = locked.lock();
    assert_eq!(locked.put_return(), Err(PutError::Locked));
    drop(g);
    assert_eq!(locked.count(), 1);
    // A policy with no attempts cannot drop lock-free: it reports why.
    let n = LockRef::<(), NoAttempts>::with_policy(());
    assert_eq!(n.put_return(), Err(PutError::Contended));
    assert_eq!(n.count(), 1);
}

#[test]
fn put_return_locked_waiting_policy_gives_up() {
    if !LOCKLESS {
        return;
    }
    // WaitUnlock waits on a held lock, but only within its budget.
    let r = LockRef::<(), WaitUnlock>::with_policy(());
    let g = r.lock();
    assert_eq!(r.put_return(), Err(PutError::Contended));
    drop(g);
    assert_eq!(r.put_return(), Ok(0));
}

#[test]
fn put_or_lock_states() {
    fn check<P: Policy>() {
        let r = LockRef::<(), P>::with_policy_and_count((), 3).unwrap();
        assert!(matches!(r.put_or_lock(), PutOrLock::Put));
        assert_eq!(r.count(), 2);
        assert!(matches!(r.put_or_lock(), PutOrLock::Put));
        for count in [1, 0] {
            let r = LockRef::<(), P>::with_policy_and_count((), count).unwrap();
            match r.put_or_lock() {
                PutOrLock::Locked(g) => assert_eq!(g.count(), count),
                PutOrLock::Put => panic!("put the last reference at {count}"),
            }
            // The guard was dropped: the lock is free again.
            assert!(r.try_lock().is_some());
        }
        let d = dead::<P>();
        assert!(matches!(d.put_or_lock(), PutOrLock::Locked(g) if g.is_dead()));
        let s = saturated::<P>();
        assert!(matches!(s.put_or_lock(), PutOrLock::Put));
        assert_eq!(s.count(), SATURATED);
    }
    for_each_policy!(check);
}

#[test]
fn guard_count_ops_and_errors_leave_count() {
    let r = LockRef::<u32>::with_count(5, 0).unwrap();
    let mut g = r.lock();
    assert_eq!(*g, 5);
    *g += 1;
    assert_eq!(g.decrement(), Err(CountError::Underflow));
    assert_eq!(g.count(), 0);
    assert_eq!(g.increment(), Ok(1));
    assert_eq!(g.set_count(-3), Err(CountError::OutOfRange));
    assert_eq!(g.count(), 1);
    g.set_count(10).unwrap();
    assert_eq!(g.decrement(), Ok(9));
    g.mark_dead();
    assert!(g.is_dead());
    assert_eq!(g.count(), DEAD);
    assert_eq!(g.increment(), Err(CountError::Dead));
    assert_eq!(g.decrement(), Err(CountError::Dead));
    assert_eq!(g.set_count(1), Err(CountError::Dead));
    assert_eq!(g.count(), DEAD);
    drop(g);
    assert!(r.is_dead());
    assert_eq!(r.into_inner(), 6);
}

#[test]
fn guard_saturated_count_never_moves() {
    let r = saturated::<KernelRetry>();
    let mut g = r.lock();
    assert_eq!(g.increment(), Ok(SATURATED));
    assert_eq!(g.decrement(), Ok(SATURATED));
    g.set_count(3).unwrap();
    assert_eq!(g.count(), SATURATED);
}

#[test]
fn try_lock_and_get_mut() {
    let mut r = LockRef::<u32>::new(1);
    *r.get_mut() = 9;
    let g = r.try_lock().expect("free");
    assert!(r.try_lock().is_none());
    assert_eq!(*g, 9);
    drop(g);
    assert!(r.try_lock().is_some());
    assert_eq!(r.count(), 1);
}

#[test]
fn ticket_wrap_keeps_count_and_lock() {
    // Start two tickets below the 16-bit wrap and cross it with every kind
    // of lock use, with counts that force a borrow (0 <-> 1) in between.
    for start in [0xfffd_u16, 0xfffe, 0xffff] {
        let r = LockRef::<u32>::at_ticket(0, 1, start);
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
            assert_eq!(r.count(), 1, "iteration {i}");
        }
        assert_eq!(*r.lock(), 6);
    }
}

#[test]
fn ticket_wrap_with_a_waiter() {
    // A second thread queues behind the holder exactly at the wrap.
    let r = LockRef::<u32>::at_ticket(0, 1, 0xffff);
    let g = r.lock();
    thread::scope(|s| {
        s.spawn(|| *r.lock() += 1);
        // The waiter can only finish after we unlock, whenever it runs.
        drop(g);
    });
    assert_eq!(*r.lock(), 1);
    assert!(r.try_lock().is_some());
}

#[test]
fn debug_shows_count_and_data() {
    let r = LockRef::<u32>::new(3);
    assert_eq!(format!("{r:?}"), "LockRef { count: 1, data: 3 }");
    let g = r.lock();
    assert_eq!(format!("{r:?}"), "LockRef { count: 1, data: <locked> }");
    assert_eq!(format!("{g:?}"), "LockRefGuard { count: 1, data: 3 }");
}

/// While one thread holds the lock, another's operations wait (or fail,
/// for put_return) and never change the count under it.
#[test]
fn lockless_ops_never_change_count_under_the_lock() {
    fn check<P: Policy>() {
        let r = LockRef::<u32, P>::with_policy_and_count(0, 2).unwrap();
        let (tx, rx) = mpsc::channel();
        thread::scope(|s| {
            let mut g = r.lock();
            let r = &r;
            s.spawn(move || {
                rx.recv().unwrap();
                r.get();
                assert!(r.get_not_dead());
                assert!(r.get_not_zero());
                assert!(matches!(r.put_or_lock(), PutOrLock::Put));
            });
            tx.send(()).unwrap();
            // However the other thread is scheduled, the count is ours.
            for _ in 0..ITERS {
                assert_eq!(g.count(), 2);
                *g += 1;
            }
            g.set_count(5).unwrap();
        });
        assert_eq!(r.count(), 7);
        assert_eq!(*r.lock(), ITERS as u32);
    }
    for_each_policy!(check);
}

/// Concurrent gets and puts keep the count exact, for every policy.
#[test]
fn stress_get_put_exact() {
    fn check<P: Policy>() {
        let r = LockRef::<(), P>::with_policy(());
        thread::scope(|s| {
            for t in 0..THREADS {
                let r = &r;
                s.spawn(move || {
                    for i in 0..ITERS {
                        r.get();
                        if (i + t) % 3 == 0 {
                            assert!(r.get_not_dead());
                            assert!(matches!(r.put_or_lock(), PutOrLock::Put));
                        }
                        match r.put_return() {
                            Ok(n) => assert!(n >= 1),
                            // Locked, contended or no lockless path: do it
                            // under the lock, as dput does.
                            Err(_) => {
                                let mut g = r.lock();
                                assert!(g.decrement().unwrap() >= 1);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(r.count(), 1);
    }
    for_each_policy!(check);
}

/// Lockless traffic racing lock holders that change the data and the
/// count: no lost update on either.
#[test]
fn stress_lockless_vs_guard() {
    let r = LockRef::<u64>::with_count(0, 1).unwrap();
    let start = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (r, start) = (&r, &start);
            s.spawn(move || {
                start.wait();
                for _ in 0..ITERS {
                    if t % 2 == 0 {
                        let mut g = r.lock();
                        *g += 1;
                        g.increment().unwrap();
                        g.decrement().unwrap();
                    } else {
                        r.get();
                        while r.put_return().is_err() {
                            // Retry lock-free; the holder will let go.
                            if !LOCKLESS {
                                r.lock().decrement().unwrap();
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    assert_eq!(r.count(), 1);
    assert_eq!(*r.lock(), (ITERS * THREADS.div_ceil(2)) as u64);
}

/// Concurrent gets near the top saturate and stay; puts never unsaturate.
#[test]
fn stress_saturation() {
    let r = LockRef::<()>::with_count((), SATURATED - 10).unwrap();
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..100 {
                    r.get();
                }
            });
        }
    });
    assert_eq!(r.count(), SATURATED);
    if LOCKLESS {
        assert_eq!(r.put_return(), Ok(SATURATED as u32));
    }
    assert!(matches!(r.put_or_lock(), PutOrLock::Put));
    assert_eq!(r.count(), SATURATED);
}

/// The lock is fair: every waiter gets it, and the protected counter is
/// exact.
#[test]
fn stress_lock_exact() {
    let r = LockRef::<Vec<usize>>::new(Vec::new());
    thread::scope(|s| {
        for t in 0..THREADS {
            let r = &r;
            s.spawn(move || {
                for _ in 0..ITERS / 10 {
                    r.lock().push(t);
                }
            });
        }
    });
    let v = r.into_inner();
    assert_eq!(v.len(), THREADS * (ITERS / 10));
    for t in 0..THREADS {
        assert_eq!(v.iter().filter(|&&x| x == t).count(), ITERS / 10);
    }
}

#[cfg(feature = "stats")]
mod stats {
    use super::*;
    use crate::StatsSnapshot;

    #[test]
    fn lockless_paths_are_counted() {
        let r = LockRef::<()>::new(());
        r.get();
        assert!(r.get_not_dead());
        assert!(r.get_not_zero());
        let _ = r.put_return();
        assert!(matches!(r.put_or_lock(), PutOrLock::Put));
        let s = r.stats();
        assert_eq!(s.operations, 5);
        if LOCKLESS {
            // No fallback and no lock. (Compare-and-swap failures are
            // possible even alone: the loop uses a weak compare-and-swap,
            // which may fail spuriously on LL/SC machines and under Miri.)
            assert_eq!((s.lockless, s.fallbacks, s.lock_acquisitions), (5, 0, 0));
        } else {
            assert_eq!(s.lock_acquisitions, 4);
            assert_eq!(s.fallbacks, 5);
        }
    }

    #[test]
    fn fallbacks_and_locks_are_counted() {
        let r = LockRef::<(), NoAttempts>::with_policy(());
        r.get();
        let _ = r.put_return();
        drop(r.lock());
        let s = r.stats();
        assert_eq!(s.operations, 3);
        assert_eq!(s.fallbacks, 2);
        assert_eq!(s.lock_acquisitions, 2); // get's fallback and the lock
        assert_eq!(s.lockless, 0);
        r.reset_stats();
        assert_eq!(r.stats(), StatsSnapshot::default());
    }

    #[test]
    fn refusals_are_lockless_and_write_nothing() {
        if !LOCKLESS {
            return;
        }
        let d = dead::<KernelRetry>();
        d.reset_stats();
        assert!(!d.get_not_dead());
        assert!(!d.get_not_zero());
        let s = d.stats();
        assert_eq!((s.operations, s.lockless, s.fallbacks), (2, 2, 0));
    }

    #[test]
    fn put_or_lock_at_one_takes_the_lock_once() {
        let r = LockRef::<()>::new(());
        drop(r.put_or_lock());
        let s = r.stats();
        assert_eq!((s.operations, s.fallbacks, s.lock_acquisitions), (1, 1, 1));
    }

    #[test]
    fn get_while_locked_falls_back_once() {
        if !LOCKLESS {
            return;
        }
        let r = LockRef::<()>::new(());
        let (tx, rx) = mpsc::channel();
        thread::scope(|s| {
            let g = r.lock();
            let r = &r;
            s.spawn(move || {
                rx.recv().unwrap();
                r.get();
            });
            tx.send(()).unwrap();
            // Hold the lock until the other thread has given up the
            // lockless path and queued on the lock (its ticket is drawn).
            while r.stats().fallbacks == 0 {
                std::thread::yield_now();
            }
            drop(g);
        });
        let s = r.stats();
        assert_eq!(s.fallbacks, 1);
        assert_eq!(s.lock_acquisitions, 2);
        assert_eq!(r.count(), 2);
    }
}
