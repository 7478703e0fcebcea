//! The lock: try_lock, get_mut, Debug, and lockless operations against a
//! held lock. Its waiters' sleep is `tests::park`.

use std::format;
use std::sync::mpsc;
use std::thread;

use super::*;
use crate::raw::policy::{ExpBackoff, KernelRetry, Policy, WaitUnlock};
use crate::{LockRef, PutOrLock};

#[test]
fn try_lock_and_get_mut() {
    let mut r = LockRef::<u32>::new(1);
    *r.get_mut() = 9;
    let g = r.try_lock().expect("free");
    assert!(r.try_lock().is_none());
    assert_eq!(*g, 9);
    drop(g);
    assert!(r.try_lock().is_some());
    assert_eq!(r.count(), Some(1));
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
        let r = LockRef::with_raw(0, CasWord::<P>::with_count(2).unwrap());
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
                assert_eq!(g.count(), Some(2));
                *g += 1;
            }
            g.set_count(5).unwrap();
        });
        assert_eq!(r.count(), Some(7));
        assert_eq!(*r.lock(), ITERS as u32);
    }
    for_each_policy!(check);
}

/// Two shared borrows of one guard coexist (and `Debug` between them):
/// under Miri's Stacked Borrows this fails if `Deref` goes through a
/// `&mut T`.
#[test]
fn two_shared_derefs_of_one_guard() {
    let r = LockRef::new(5_u32);
    let guard = r.lock();
    let a: &u32 = &guard;
    let b: &u32 = &guard;
    let shown = format!("{guard:?}");
    assert_eq!(*a + *b, 10);
    assert!(shown.contains('5'));
}

/// A policy that never falls back to the lock (it waits while the lock is
/// held, within a budget no test reaches), so the only locker is the test.
#[derive(Default)]
struct NeverLocks;

impl Policy for NeverLocks {
    const MAX_ATTEMPTS: u32 = u32::MAX;
    fn cas_failed(&mut self) {}
    fn lock_held(&mut self) -> bool {
        core::hint::spin_loop();
        true
    }
}

/// `try_lock` fails only when the lock is held: lockless count changes
/// racing it (which made its compare-and-swap fail, about once in 10^5) do
/// not make it fail.
#[test]
fn try_lock_is_not_spurious_under_lockless_traffic() {
    if !crate::LOCKLESS {
        // No lockless traffic without the lockless paths: every get and
        // put takes the lock, and `try_lock` fails when they hold it.
        return;
    }
    let r = LockRef::with_raw((), CasWord::<NeverLocks>::new());
    let stop = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                r.get();
                r.put_return().expect("never falls back");
            }
        });
        let tries = if cfg!(miri) { 200 } else { 1_000_000 };
        let failed = (0..tries).filter(|_| r.try_lock().is_none()).count();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(failed, 0, "try_lock failed with the lock free");
    });
    assert_eq!(r.count(), Some(1));
}
