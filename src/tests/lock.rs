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
    assert_eq!(r.count(), Some(1));
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
            assert_eq!(r.count(), Some(1), "iteration {i}");
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

/// With every ticket out (one holder and 65 534 waiters), another locker
/// waits without drawing: `next` never wraps onto `owner`, so the word
/// never reads unlocked while held (before the cap, it did, and `try_lock`
/// then handed out a second guard). White-box: the waiters' tickets are
/// drawn directly.
#[test]
fn a_locker_past_the_ticket_cap_waits_without_drawing() {
    // On the heap and `'static`, so that a failure can panic without
    // joining a locker that may never get the lock (it is leaked then).
    let raw = std::boxed::Box::into_raw(std::boxed::Box::new(LockRef::new(0_u32)));
    // SAFETY: freed only at the end, after the locker is joined.
    let r: &'static LockRef<u32> = unsafe { &*raw };
    let held = r.lock();
    let first = r.ticket_state();
    // The holder's ticket is out; draw the rest for waiters that never come.
    r.draw_tickets(u16::MAX - 1);
    let capped = (first.0, first.0.wrapping_add(u16::MAX));
    assert_eq!(r.ticket_state(), capped);
    let locker = thread::spawn(move || *r.lock() += 1);
    for _ in 0..super::ITERS {
        if let Some(second) = r.try_lock() {
            core::mem::forget(second);
            panic!("the lock reads free while held: a second guard");
        }
        assert_eq!(r.ticket_state(), capped, "a ticket drawn past the cap");
        thread::yield_now();
    }
    // Serve the holder's ticket and the phantom waiters': the locker
    // draws the last one and gets the lock.
    core::mem::forget(held);
    r.return_tickets(u16::MAX);
    locker.join().unwrap();
    assert_eq!(*r.lock(), 1);
    let (owner, next) = r.ticket_state();
    assert_eq!(owner, next, "unlocked, every ticket served");
    // SAFETY: the locker is joined; nothing uses `r` after this.
    drop(unsafe { std::boxed::Box::from_raw(raw) });
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
