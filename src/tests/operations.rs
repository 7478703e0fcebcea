//! Each lockless operation in each state, and the guard's count changes.

use super::*;
use crate::raw::policy::{ExpBackoff, KernelRetry, Policy, WaitUnlock};
use crate::{CasWord, CountError, LockRef, PutError, PutOrLock, LOCKLESS, SATURATED};

#[test]
fn construct() {
    assert_eq!(LockRef::<()>::new(()).count(), Some(1));
    assert_eq!(LockRef::<()>::with_count((), 0).unwrap().count(), Some(0));
    let r = LockRef::<()>::with_count((), SATURATED).unwrap();
    assert_eq!(r.count(), Some(SATURATED));
    assert_eq!(
        LockRef::<()>::with_count((), SATURATED + 1).err(),
        Some(CountError::OutOfRange)
    );
    assert_eq!(LockRef::<u8>::default().into_inner(), 0);
}

#[test]
fn get_live_zero_saturated() {
    fn check<P: Policy>() {
        let r = LockRef::with_raw((), CasWord::<P>::new());
        r.get();
        r.get();
        assert_eq!(r.count(), Some(3));
        let zero = LockRef::with_raw((), CasWord::<P>::with_count(0).unwrap());
        zero.get();
        assert_eq!(zero.count(), Some(1));
        let s = saturated::<P>();
        s.get();
        assert_eq!(s.count(), Some(SATURATED));
        let near = LockRef::with_raw((), CasWord::<P>::with_count(SATURATED - 1).unwrap());
        near.get();
        near.get();
        assert_eq!(near.count(), Some(SATURATED));
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
        let zero = LockRef::with_raw((), CasWord::<P>::with_count(0).unwrap());
        assert!(!zero.get_not_zero());
        assert_eq!(zero.count(), Some(0));
        let r = LockRef::with_raw((), CasWord::<P>::new());
        assert!(r.get_not_zero());
        assert_eq!(r.count(), Some(2));
        let d = dead::<P>();
        assert!(!d.get_not_zero());
        assert_eq!(d.count(), None);
        let s = saturated::<P>();
        assert!(s.get_not_zero());
        assert_eq!(s.count(), Some(SATURATED));
    }
    for_each_policy!(check);
}

#[test]
fn get_not_dead_states() {
    fn check<P: Policy>() {
        let zero = LockRef::with_raw((), CasWord::<P>::with_count(0).unwrap());
        assert!(zero.get_not_dead());
        assert_eq!(zero.count(), Some(1));
        let d = dead::<P>();
        assert!(!d.get_not_dead());
        assert_eq!(d.count(), None);
        let s = saturated::<P>();
        assert!(s.get_not_dead());
        assert_eq!(s.count(), Some(SATURATED));
    }
    for_each_policy!(check);
}

#[test]
fn put_return_states() {
    let r = LockRef::<()>::with_count((), 2).unwrap();
    if !LOCKLESS {
        assert_eq!(r.put_return(), Err(PutError::Unsupported));
        assert_eq!(r.count(), Some(2));
        return;
    }
    assert_eq!(r.put_return(), Ok(1));
    assert_eq!(r.put_return(), Ok(0));
    assert_eq!(r.put_return(), Err(PutError::NotPositive));
    assert_eq!(r.count(), Some(0));
    let d = dead::<KernelRetry>();
    assert_eq!(d.put_return(), Err(PutError::NotPositive));
    assert_eq!(d.count(), None);
    let s = saturated::<KernelRetry>();
    assert_eq!(s.put_return(), Ok(SATURATED));
    assert_eq!(s.count(), Some(SATURATED));
    let locked = LockRef::<()>::new(());
    let g = locked.lock();
    assert_eq!(locked.put_return(), Err(PutError::Locked));
    drop(g);
    assert_eq!(locked.count(), Some(1));
    // A policy with no attempts cannot drop lock-free: it reports why.
    let n = LockRef::with_raw((), CasWord::<NoAttempts>::new());
    assert_eq!(n.put_return(), Err(PutError::Contended));
    assert_eq!(n.count(), Some(1));
}

#[test]
fn put_return_locked_waiting_policy_gives_up() {
    if !LOCKLESS {
        return;
    }
    // WaitUnlock waits on a held lock, but only within its budget.
    let r = LockRef::with_raw((), CasWord::<WaitUnlock>::new());
    let g = r.lock();
    assert_eq!(r.put_return(), Err(PutError::Contended));
    drop(g);
    assert_eq!(r.put_return(), Ok(0));
}

#[test]
fn put_or_lock_states() {
    fn check<P: Policy>() {
        let r = LockRef::with_raw((), CasWord::<P>::with_count(3).unwrap());
        assert!(matches!(r.put_or_lock(), PutOrLock::Put));
        assert_eq!(r.count(), Some(2));
        assert!(matches!(r.put_or_lock(), PutOrLock::Put));
        for count in [1, 0] {
            let r = LockRef::with_raw((), CasWord::<P>::with_count(count).unwrap());
            match r.put_or_lock() {
                PutOrLock::Locked(g) => assert_eq!(g.count(), Some(count)),
                PutOrLock::Put => panic!("put the last reference at {count}"),
            }
            // The guard was dropped: the lock is free again.
            assert!(r.try_lock().is_some());
        }
        let d = dead::<P>();
        assert!(matches!(d.put_or_lock(), PutOrLock::Locked(g) if g.is_dead()));
        let s = saturated::<P>();
        assert!(matches!(s.put_or_lock(), PutOrLock::Put));
        assert_eq!(s.count(), Some(SATURATED));
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
    assert_eq!(g.count(), Some(0));
    assert_eq!(g.increment(), Ok(1));
    assert_eq!(g.set_count(SATURATED + 1), Err(CountError::OutOfRange));
    assert_eq!(g.count(), Some(1));
    g.set_count(10).unwrap();
    assert_eq!(g.decrement(), Ok(9));
    g.mark_dead();
    assert!(g.is_dead());
    assert_eq!(g.count(), None);
    assert_eq!(g.increment(), Err(CountError::Dead));
    assert_eq!(g.decrement(), Err(CountError::Dead));
    assert_eq!(g.set_count(1), Err(CountError::Dead));
    assert_eq!(g.count(), None);
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
    assert_eq!(g.count(), Some(SATURATED));
}

/// `put_many_owned`: `n` references without the lock, zero included;
/// refused with nothing changed when fewer are held, or the lock is held;
/// a saturated count stays.
#[test]
fn put_many_owned_states() {
    fn check<P: Policy>() {
        let r = LockRef::with_raw((), CasWord::<P>::with_count(5).unwrap());
        let raw = r.raw();
        if !LOCKLESS {
            // SAFETY: we own the five references; refused: nothing moves.
            assert_eq!(unsafe { raw.put_many_owned(2) }, Err(PutError::Unsupported));
            return;
        }
        // SAFETY: we own five references; each call gives up what it
        // reports, and a refusal gives up none.
        unsafe {
            assert_eq!(raw.put_many_owned(2), Ok(3));
            assert_eq!(raw.put_many_owned(4), Err(PutError::NotPositive));
            assert_eq!(r.count(), Some(3), "a refusal moves nothing");
            let g = r.lock();
            assert_eq!(raw.put_many_owned(1), Err(PutError::Locked));
            drop(g);
            assert_eq!(raw.put_many_owned(3), Ok(0));
        }
        assert_eq!(r.count(), Some(0));
        let s = saturated::<P>();
        // SAFETY: a saturated count is leaked: nothing moves.
        assert_eq!(unsafe { s.raw().put_many_owned(2) }, Ok(SATURATED));
    }
    // The locked refusal needs a policy that gives up at a held lock.
    check::<KernelRetry>();
    check::<ExpBackoff>();
}

/// `kill_if_zero_unlocked`: dead in one compare-and-swap at zero with the
/// lock free; nothing at a live count above zero, on a dead or saturated
/// word; refused (for the locked decision) while the lock is held.
#[test]
fn kill_if_zero_unlocked_states() {
    let zero = LockRef::<()>::with_count((), 0).unwrap();
    if !LOCKLESS {
        assert_eq!(
            zero.raw().kill_if_zero_unlocked(),
            Err(PutError::Unsupported)
        );
        return;
    }
    let g = zero.lock();
    assert_eq!(zero.raw().kill_if_zero_unlocked(), Err(PutError::Locked));
    drop(g);
    assert_eq!(zero.count(), Some(0), "refused: nothing moved");
    assert_eq!(zero.raw().kill_if_zero_unlocked(), Ok(true));
    assert!(zero.is_dead() && !zero.get_not_dead());
    assert_eq!(
        zero.raw().kill_if_zero_unlocked(),
        Ok(false),
        "dead already"
    );
    let one = LockRef::<()>::new(());
    assert_eq!(one.raw().kill_if_zero_unlocked(), Ok(false));
    assert_eq!(one.count(), Some(1));
    let s = saturated::<KernelRetry>();
    assert_eq!(s.raw().kill_if_zero_unlocked(), Ok(false));
    assert_eq!(s.count(), Some(SATURATED));
}

/// `put_many_unless_last`: `n` references dropped without the lock while
/// more than `n` are held; at the last (or fewer) nothing changes and the
/// caller is told so; refused with nothing changed while the lock is
/// held; a saturated count stays.
#[test]
fn put_many_unless_last_states() {
    let r = LockRef::<()>::with_count((), 5).unwrap();
    if !LOCKLESS {
        assert_eq!(r.raw().put_many_unless_last(1), Err(PutError::Unsupported));
        return;
    }
    assert_eq!(r.raw().put_many_unless_last(2), Ok(true));
    assert_eq!(r.count(), Some(3));
    assert_eq!(r.raw().put_many_unless_last(3), Ok(false), "the last three");
    assert_eq!(r.raw().put_many_unless_last(4), Ok(false), "more than held");
    assert_eq!(r.count(), Some(3), "nothing moved");
    let g = r.lock();
    assert_eq!(r.raw().put_many_unless_last(1), Err(PutError::Locked));
    drop(g);
    assert_eq!(r.count(), Some(3));
    let s = saturated::<KernelRetry>();
    assert_eq!(s.raw().put_many_unless_last(2), Ok(true));
    assert_eq!(s.count(), Some(SATURATED));
}

/// `put_many_and_kill`: exactly `n` held with the lock free, dead in one
/// compare-and-swap; more or fewer held, dead or saturated, nothing
/// changes; refused with nothing changed while the lock is held.
#[test]
fn put_many_and_kill_states() {
    fn put_and_kill<P: Policy>(r: &LockRef<(), CasWord<P>>, n: u32) -> Result<bool, PutError> {
        // SAFETY: the test owns every reference counted, and only a call
        // that kills (the last `n`) gives any up.
        unsafe { r.raw().put_many_and_kill(n) }
    }
    let r = LockRef::<()>::with_count((), 3).unwrap();
    if !LOCKLESS {
        assert_eq!(put_and_kill(&r, 3), Err(PutError::Unsupported));
        return;
    }
    assert_eq!(put_and_kill(&r, 2), Ok(false), "not the last two");
    assert_eq!(put_and_kill(&r, 4), Ok(false), "more than held");
    assert_eq!(put_and_kill(&r, 0), Err(PutError::NotPositive));
    assert_eq!(r.count(), Some(3), "nothing moved");
    let g = r.lock();
    assert_eq!(put_and_kill(&r, 3), Err(PutError::Locked));
    drop(g);
    assert_eq!(r.count(), Some(3));
    assert_eq!(put_and_kill(&r, 3), Ok(true));
    assert!(r.is_dead() && !r.get_not_dead());
    assert_eq!(put_and_kill(&r, 3), Ok(false), "dead already");
    let s = saturated::<KernelRetry>();
    assert_eq!(put_and_kill(&s, 1), Ok(false));
    assert_eq!(s.count(), Some(SATURATED));
}
