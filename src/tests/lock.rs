//! The lock: try_lock, get_mut, the ticket wrap, Debug, and lockless
//! operations against a held lock.

use std::format;
use std::sync::mpsc;
use std::thread;

use super::*;
use crate::policy::{ExpBackoff, KernelRetry, Policy, WaitUnlock};
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
