//! Reviving a dead word (`LockRefGuard::revive`), for type-stable memory.

use crate::{CountError, LockRef, SATURATED};

/// A revival (type-stable memory reused for a new object): refused on a
/// live word and above `SATURATED`, with nothing changed; afterwards the
/// word counts and dies as a new one does.
#[test]
fn revive_brings_back_only_a_dead_word() {
    let r = LockRef::with_count((), 0).unwrap();
    // SAFETY: nothing else points at `r`.
    assert_eq!(unsafe { r.lock().revive(1) }, Err(CountError::NotDead));
    assert_eq!(r.count(), Some(0));
    r.lock().mark_dead();
    // SAFETY: as above.
    let too_many = unsafe { r.lock().revive(SATURATED + 1) };
    assert_eq!(too_many, Err(CountError::OutOfRange));
    assert!(r.is_dead() && !r.get_not_dead());
    // SAFETY: as above.
    unsafe { r.lock().revive(1) }.unwrap();
    assert!(r.get_not_dead());
    assert_eq!(r.count(), Some(2));
    let mut g = r.lock();
    assert_eq!((g.decrement(), g.decrement()), (Ok(1), Ok(0)));
    assert!(g.kill_if_zero());
    drop(g);
    assert!(r.is_dead());
}

/// `LockRef::revive`, the revival without the lock: one compare-and-swap
/// on a free dead word, the lock taken around it on a held one (or a
/// build without the lockless path); refused on a live word and above
/// `SATURATED`, as under the lock.
#[test]
fn revive_without_the_lock_brings_back_only_a_dead_word() {
    let r = LockRef::with_count((), 0).unwrap();
    // SAFETY: nothing else points at `r`.
    assert_eq!(unsafe { r.revive(1) }, Err(CountError::NotDead));
    r.lock().mark_dead();
    // SAFETY: as above.
    let too_many = unsafe { r.revive(SATURATED + 1) };
    assert_eq!(too_many, Err(CountError::OutOfRange));
    assert!(r.is_dead());
    // SAFETY: as above.
    unsafe { r.revive(2) }.unwrap();
    assert_eq!(r.count(), Some(2));
    assert!(!r.lock_is_held(), "the lock is left free");
}

/// The revival's path, counted: lockless on a free word, the locked
/// fallback on a held one.
#[cfg(feature = "stats")]
#[test]
fn revive_without_the_lock_is_one_lockless_operation() {
    let r = LockRef::with_count((), 0).unwrap();
    r.lock().mark_dead();
    r.raw().reset_stats();
    // SAFETY: nothing else points at `r`.
    unsafe { r.revive(1) }.unwrap();
    let s = r.raw().stats();
    if crate::LOCKLESS {
        assert_eq!((s.operations, s.lockless, s.lock_acquisitions), (1, 1, 0));
    } else {
        assert_eq!((s.operations, s.fallbacks, s.lock_acquisitions), (1, 1, 1));
    }
}
