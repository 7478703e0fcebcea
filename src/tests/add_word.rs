//! The experimental fetch_add word: every operation in every state, adds
//! landing while the lock is held, the exact kill, and a stress test with
//! exact final counts.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::experimental::AddWord;
use crate::{CountError, LockRef, PutError, PutOrLock, SATURATED};

use super::{lockref_at, ITERS, THREADS};

/// A lockref on the fetch_add word.
type OnAddWord<T> = LockRef<T, AddWord>;

/// # Safety
///
/// The caller owns a reference on `r`.
unsafe fn put(r: &OnAddWord<()>) -> Result<u32, PutError> {
    // SAFETY: the caller's.
    unsafe { r.put_owned() }
}

/// The guard of a put that had to lock, or `None` if it put.
fn locked<T>(p: PutOrLock<'_, T, AddWord>) -> Option<crate::LockRefGuard<'_, T, AddWord>> {
    match p {
        PutOrLock::Put => None,
        PutOrLock::Locked(g) => Some(g),
    }
}

#[test]
fn gets_and_puts_count() {
    let r = LockRef::with_raw((), AddWord::new());
    assert_eq!(r.count(), Some(1));
    r.get();
    assert!(r.get_not_dead());
    assert!(r.get_not_zero());
    assert_eq!(r.count(), Some(4));
    // SAFETY: four references are ours.
    unsafe {
        assert_eq!(put(&r), Ok(3));
        assert_eq!(put(&r), Ok(2));
        assert_eq!(put(&r), Ok(1));
        assert_eq!(put(&r), Ok(0));
    }
    assert_eq!(r.count(), Some(0));
    assert!(!r.get_not_zero(), "zero: no reference by get_not_zero");
    assert_eq!(r.count(), Some(0), "and no trace of the attempt");
    assert!(r.get_not_dead(), "a revive from zero");
    assert_eq!(r.count(), Some(1));
}

#[test]
fn adds_land_while_the_lock_is_held() {
    let r = LockRef::with_raw(5u32, AddWord::new());
    let mut g = r.lock();
    *g += 1;
    // Lockless operations do not wait for the lock: the count moves under
    // the holder, who sees at least what it knows of.
    r.get();
    assert!(r.get_not_dead());
    assert_eq!(g.count(), Some(3));
    // SAFETY: `get` took this reference.
    assert_eq!(unsafe { r.put_owned() }, Ok(2));
    assert!(r.try_lock().is_none());
    drop(g);
    assert_eq!(*r.lock(), 6);
}

#[test]
fn kill_if_zero_is_exact() {
    let r = LockRef::with_raw((), AddWord::new());
    assert!(!r.lock().kill_if_zero(), "count one: alive");
    // SAFETY: `new`'s reference.
    assert_eq!(unsafe { r.put_owned() }, Ok(0));
    assert!(r.get_not_dead(), "revived before the kill");
    assert!(!r.lock().kill_if_zero(), "the revive wins");
    // SAFETY: the revive's reference.
    assert_eq!(unsafe { r.put_owned() }, Ok(0));
    let mut g = r.lock();
    assert!(g.kill_if_zero());
    assert_eq!(g.count(), None);
    assert!(!g.kill_if_zero(), "killed once");
    drop(g);
    assert!(r.is_dead());
    assert!(!r.get_not_dead(), "no reference on a dead object");
    assert!(!r.get_not_zero());
    // SAFETY: not a reference, but the contract allows a put on a dead
    // object to be refused (the debug assertion is for zero only).
    assert_eq!(unsafe { r.put_owned() }, Err(PutError::NotPositive));
    assert!(r.is_dead(), "and every refused add undone");
}

#[test]
#[should_panic(expected = "dead object")]
fn get_on_a_dead_object_panics() {
    let r = lockref_at::<AddWord, _>((), 0);
    assert!(r.lock().kill_if_zero());
    r.get();
}

#[test]
fn the_guard_counts_exactly_and_refuses_at_zero() {
    let r = lockref_at::<AddWord, _>((), 0);
    let mut g = r.lock();
    assert_eq!(g.decrement(), Err(CountError::Underflow));
    assert_eq!(g.count(), Some(0), "refused without a transient");
    assert_eq!(g.increment(), Ok(1));
    assert_eq!(g.decrement(), Ok(0));
    assert!(g.kill_if_zero());
    assert_eq!(g.increment(), Err(CountError::Dead));
    assert_eq!(g.decrement(), Err(CountError::Dead));
}

#[test]
fn a_saturated_count_never_moves() {
    assert_eq!(
        AddWord::with_count(SATURATED + 1).err(),
        Some(CountError::OutOfRange)
    );
    let r = lockref_at::<AddWord, _>((), SATURATED - 1);
    r.get();
    assert_eq!(r.count(), Some(SATURATED));
    r.get();
    assert!(r.get_not_dead() && r.get_not_zero());
    // SAFETY: we own (more than) these references.
    unsafe {
        assert_eq!(r.put_owned(), Ok(SATURATED));
        assert_eq!(r.put_owned(), Ok(SATURATED));
    }
    let mut g = r.lock();
    assert_eq!(g.decrement(), Ok(SATURATED));
    assert!(!g.kill_if_zero());
    drop(g);
    assert_eq!(r.count(), Some(SATURATED));
}

#[test]
fn put_or_lock_puts_unless_last_and_never_moves_a_last_count() {
    let r = lockref_at::<AddWord, _>((), 3);
    assert!(locked(r.put_or_lock()).is_none());
    assert_eq!(r.count(), Some(2));
    // Lockless while the lock is held: adds land under it on this word.
    let g = r.lock();
    assert!(locked(r.put_or_lock()).is_none());
    drop(g);
    let mut last = locked(r.put_or_lock()).expect("the last reference locks");
    assert_eq!(last.count(), Some(1), "nothing changed before the lock");
    assert_eq!(last.decrement(), Ok(0));
    drop(last);
    // At zero and on dead it locks, changing nothing.
    let g = locked(r.put_or_lock()).expect("zero locks");
    assert_eq!(g.count(), Some(0));
    drop(g);
    assert!(r.lock().kill_if_zero());
    let mut g = locked(r.put_or_lock()).expect("dead locks");
    assert_eq!(g.decrement(), Err(CountError::Dead));
}

#[test]
fn put_many_or_lock_and_decrement_by_refuse_more_than_counted() {
    let r = lockref_at::<AddWord, _>((), 5);
    assert!(locked(r.put_many_or_lock(3)).is_none());
    assert_eq!(r.count(), Some(2));
    let mut g = locked(r.put_many_or_lock(2)).expect("as many as counted locks");
    assert_eq!(g.decrement_by(3), Err(CountError::Underflow));
    assert_eq!(g.count(), Some(2), "a refused decrement changes nothing");
    assert_eq!(g.decrement_by(2), Ok(0));
    assert_eq!(g.decrement_by(1), Err(CountError::Underflow));
    drop(g);
    assert!(locked(r.put_many_or_lock(u32::MAX)).is_some());
    let s = lockref_at::<AddWord, _>((), SATURATED);
    assert!(locked(s.put_many_or_lock(u32::MAX)).is_none());
    assert_eq!(s.lock().decrement_by(u32::MAX), Ok(SATURATED));
    assert_eq!(s.count(), Some(SATURATED));
    assert_eq!(
        r.raw().word_for_tests() & 0xFFFF_FFFF,
        1 << 30,
        "exactly zero"
    );
}

/// Threads getting and putting through every path, one killing at zero at
/// the end: the count is exact and the kill happens once.
#[test]
fn concurrent_gets_and_puts_stay_exact() {
    let r = LockRef::with_raw(0usize, AddWord::new());
    let locked = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (r, locked) = (&r, &locked);
            s.spawn(move || {
                for i in 0..ITERS {
                    match (i + t) % 3 {
                        0 => r.get(),
                        1 => assert!(r.get_not_dead()),
                        _ => assert!(r.get_not_zero()),
                    }
                    if i % 16 == 0 {
                        let mut g = r.lock();
                        *g += 1;
                        locked.fetch_add(1, Ordering::Relaxed);
                    }
                    // SAFETY: the reference taken above.
                    assert!(unsafe { r.put_owned() }.unwrap() >= 1);
                }
            });
        }
    });
    assert_eq!(r.count(), Some(1));
    assert_eq!(*r.lock(), locked.load(Ordering::Relaxed));
    // SAFETY: `new`'s reference.
    assert_eq!(unsafe { r.put_owned() }, Ok(0));
    assert!(r.lock().kill_if_zero());
}

/// A dead word stays dead however many refused puts and lookups land on it
/// at once: before the dead count was stored mid-region, a refused put's
/// transient (one below the dead value) read as saturated, so a concurrent
/// `get_not_dead` or `get_not_zero` took a reference on the dead object
/// and pinned the word back to a saturated count.
#[test]
fn refused_puts_and_lookups_never_resurrect_a_dead_object() {
    let rounds = if cfg!(miri) { 2 } else { 200 };
    for _ in 0..rounds {
        let r = lockref_at::<AddWord, _>((), 0);
        assert!(r.lock().kill_if_zero());
        let dead_word = r.raw().word_for_tests();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let r = &r;
                s.spawn(move || {
                    for _ in 0..ITERS / 20 {
                        if t % 2 == 0 {
                            // SAFETY: the contract allows a put on a dead
                            // object: it is refused, and undone.
                            assert_eq!(unsafe { r.put_owned() }, Err(PutError::NotPositive));
                        } else {
                            assert!(!r.get_not_dead(), "a reference on a dead object");
                            assert!(!r.get_not_zero(), "a reference on a dead object");
                        }
                    }
                });
            }
        });
        assert_eq!(
            r.raw().word_for_tests(),
            dead_word,
            "still dead, every transient undone"
        );
    }
}
