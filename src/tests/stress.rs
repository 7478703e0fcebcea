//! Bounded multi-thread stress with exact final counts.

use std::sync::Barrier;
use std::thread;
use std::vec::Vec;

use super::*;
use crate::raw::policy::{ExpBackoff, KernelRetry, Policy, WaitUnlock};
use crate::{LockRef, PutOrLock, LOCKLESS, SATURATED};

/// Concurrent gets and puts keep the count exact, for every policy.
#[test]
fn stress_get_put_exact() {
    fn check<P: Policy>() {
        let r = LockRef::with_raw((), CasWord::<P>::new());
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
        assert_eq!(r.count(), Some(1));
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
    assert_eq!(r.count(), Some(1));
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
    assert_eq!(r.count(), Some(SATURATED));
    if LOCKLESS {
        assert_eq!(r.put_return(), Ok(SATURATED));
    }
    assert!(matches!(r.put_or_lock(), PutOrLock::Put));
    assert_eq!(r.count(), Some(SATURATED));
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
