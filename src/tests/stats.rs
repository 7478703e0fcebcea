//! The `stats` counters: which path each operation took.

use std::sync::mpsc;
use std::thread;

use super::*;
use crate::raw::policy::KernelRetry;
use crate::{LockRef, PutOrLock, LOCKLESS};

use crate::StatsSnapshot;

#[test]
fn lockless_paths_are_counted() {
    let r = LockRef::<()>::new(());
    r.get();
    assert!(r.get_not_dead());
    assert!(r.get_not_zero());
    let _ = r.put_return();
    assert!(matches!(r.put_or_lock(), PutOrLock::Put));
    let s = r.raw().stats();
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
    let r = LockRef::with_raw((), CasWord::<NoAttempts>::new());
    r.get();
    let _ = r.put_return();
    drop(r.lock());
    let s = r.raw().stats();
    assert_eq!(s.operations, 3);
    assert_eq!(s.fallbacks, 2);
    assert_eq!(s.lock_acquisitions, 2); // get's fallback and the lock
    assert_eq!(s.lockless, 0);
    r.raw().reset_stats();
    assert_eq!(r.raw().stats(), StatsSnapshot::default());
}

#[test]
fn refusals_are_lockless_and_write_nothing() {
    if !LOCKLESS {
        return;
    }
    let d = dead::<KernelRetry>();
    d.raw().reset_stats();
    assert!(!d.get_not_dead());
    assert!(!d.get_not_zero());
    let s = d.raw().stats();
    assert_eq!((s.operations, s.lockless, s.fallbacks), (2, 2, 0));
}

#[test]
fn put_or_lock_at_one_takes_the_lock_once() {
    let r = LockRef::<()>::new(());
    drop(r.put_or_lock());
    let s = r.raw().stats();
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
        while r.raw().stats().fallbacks == 0 {
            std::thread::yield_now();
        }
        drop(g);
    });
    let s = r.raw().stats();
    assert_eq!(s.fallbacks, 1);
    assert_eq!(s.lock_acquisitions, 2);
    assert_eq!(r.count(), Some(2));
}
