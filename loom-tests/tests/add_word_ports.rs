//! The `LockRef` models of `tests/lockref.rs`, ported to the experimental
//! fetch_add word (`AddLockRef`) under the same names wherever its
//! semantics allow, every racing side on a spawned thread. Run with
//! `--cfg loom --cfg lockref_loom`.
//!
//! Not ported, and why:
//!
//! - `concurrent_get_put_keep_count_exact_exp_backoff`, `..._wait_unlock`,
//!   `locked_fallback_after_retries_run_out`,
//!   `wait_unlock_policy_keeps_forward_progress`: contention policies
//!   bound a compare-and-swap loop; this word's get and put are one add
//!   that cannot fail, and it has no policy.
//! - `ticket_lock_mutual_exclusion_across_wrap`,
//!   `ticket_cap_stops_a_locker_from_wrapping_the_ticket`: this word's lock
//!   is one test-and-set bit, with no tickets to wrap;
//!   `lock_is_mutually_exclusive_while_adds_land` stands for them.
//! - `mark_dead_under_lock_vs_get_not_dead`, `lockless_updates_vs_guard`,
//!   `saturation_under_concurrent_gets`, `last_put_sees_every_holders_writes`:
//!   ported in `tests/add_word.rs` as `kill_races_lookup`,
//!   `adds_land_while_the_lock_is_held`, `saturation_under_concurrent_adds`
//!   and `last_put_sees_every_holders_writes`.
//! - `saturated_lookup_reference_acquires_what_the_holder_published`: the
//!   original raises the count from zero to saturated with `set_count`,
//!   which this word does not have (an absolute store would erase the adds
//!   landing under the lock); a saturated `get_not_zero` has the same
//!   `Acquire` fence as the compare-and-swap word's.
#![cfg(loom)]

use lockref::experimental::{AddLockRef, AddLockRefGuard};
use lockref_loom_tests::model;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// Drops a held reference as a `CountedRef` without a grace section does:
/// lockless unless it is the last, which is dropped under the lock and
/// kills at zero. Returns whether this put killed.
fn put_last_kills(r: &AddLockRef<bool>) -> bool {
    match r.put_or_lock() {
        None => false,
        Some(g) => drop_last(g),
    }
}

/// The last reference, under the lock: dropped, and a kill at zero
/// (recorded in the data) unless a lookup revived the object meanwhile.
fn drop_last(mut g: AddLockRefGuard<'_, bool>) -> bool {
    assert!(!*g, "a reference to a killed object");
    if g.decrement().expect("a held reference") != 0 {
        return false;
    }
    let killed = g.kill_if_zero();
    *g = killed;
    killed
}

/// Two threads get and put concurrently (lockless, and the last under the
/// lock): the count ends exact.
#[test]
fn concurrent_get_put_keep_count_exact() {
    model(|| {
        let r = Arc::new(AddLockRef::new(false));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || {
                    r.get();
                    assert!(!put_last_kills(&r), "the model's own reference stays");
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), Some(1));
    });
}

/// The last holder's `put_or_lock` races a lookup's `get_not_dead` at count
/// one. On this word the lookup's add may land while the putter holds the
/// lock, between its decrement and its kill: then `kill_if_zero` fails and
/// the lookup's own last put decides. Exactly one of them kills; a
/// reference never sees a killed object; the object never ends unkilled
/// with nobody holding it.
#[test]
fn put_or_lock_races_get_at_count_one() {
    model(|| {
        let r = Arc::new(AddLockRef::new(false)); // data: killed
        let lookup = {
            let r = r.clone();
            thread::spawn(move || r.get_not_dead() && put_last_kills(&r))
        };
        let owner = {
            let r = r.clone();
            thread::spawn(move || put_last_kills(&r))
        };
        let (by_lookup, by_owner) = (lookup.join().unwrap(), owner.join().unwrap());
        assert!(by_lookup ^ by_owner, "killed exactly once");
        assert!(r.is_dead() && *r.lock());
    });
}

/// Two lockers update the data (a read, a yield, a write) while a third
/// thread's gets and puts land on the word: the test-and-set lock excludes
/// (loom's cell tracking flags overlap) and the count ends exact.
#[test]
fn lock_is_mutually_exclusive_while_adds_land() {
    model(|| {
        let r = Arc::new(AddLockRef::new(0_u32));
        let mut handles: Vec<_> = (0..2)
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
        let r2 = r.clone();
        handles.push(thread::spawn(move || {
            r2.get();
            // SAFETY: the reference just taken.
            assert!(unsafe { r2.put_return() }.unwrap() >= 1);
        }));
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*r.lock(), 2);
        assert_eq!(r.count(), Some(1));
    });
}

/// Data written outside the lockref, ordered only by the word.
struct Published(UnsafeCell<u32>);

// SAFETY: written once before the publishing operation, read only after an
// acquiring one; loom checks exactly that.
unsafe impl Sync for Published {}

/// A holder writes data, then makes the object findable: its count goes
/// from zero to one under the lock (`increment`, where the
/// compare-and-swap word's model uses `set_count`). A lookup's
/// `get_not_zero` fails at zero, or succeeds on that count, possibly
/// before the unlock (adds land under this word's lock), and then reads
/// the data: the increment must publish it (`Release`), the lookup acquire.
#[test]
fn lookup_reference_acquires_what_the_holder_published() {
    model(|| {
        let r = Arc::new(AddLockRef::with_count((), 0).unwrap());
        let data = Arc::new(Published(UnsafeCell::new(0)));
        let writer = {
            let (r, data) = (r.clone(), data.clone());
            thread::spawn(move || {
                let mut g = r.lock();
                // SAFETY: nobody reads before the increment publishes it.
                data.0.with_mut(|p| unsafe { *p = 7 });
                g.increment().unwrap();
            })
        };
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

/// `try_lock` acquires: a thread that gets the lock after a holder sees
/// what the holder wrote (fails if `try_lock` is `Relaxed`).
#[test]
fn try_lock_acquires_what_the_previous_holder_wrote() {
    model(|| {
        let r = Arc::new(AddLockRef::new(()));
        let data = Arc::new(Published(UnsafeCell::new(0)));
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
