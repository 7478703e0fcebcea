//! Loom models of the experimental fetch_add word (`AddWord`), one per
//! race the design has to survive, every racing side on a spawned thread;
//! and the counterexample that rules out a fetch_add `put_or_lock`. Run
//! with `--cfg loom --cfg lockref_loom --cfg lockref_white_box`. The
//! `LockRef` models that hold on every word run on this one too
//! (`tests/lockref.rs`, `add_word::`).
#![cfg(loom)]

use lockref::experimental::AddWord;
use lockref::{LockRef, SATURATED};
use lockref_loom_tests::model;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// # Safety
///
/// The caller owns a reference on `r`.
unsafe fn put<T>(r: &LockRef<T, AddWord>) -> u32 {
    // SAFETY: the caller's.
    unsafe { r.put_owned() }.expect("a held reference")
}

/// Two threads get and put (every get path) while a third holds the lock
/// and writes the data: the count ends exact and the holder's view is at
/// least the one reference it knows of.
#[test]
fn adds_land_while_the_lock_is_held() {
    model(|| {
        let r = Arc::new(LockRef::with_raw(0u32, AddWord::new()));
        let getters: Vec<_> = [false, true]
            .into_iter()
            .map(|lookup| {
                let r = r.clone();
                thread::spawn(move || {
                    if lookup {
                        assert!(r.get_not_dead());
                    } else {
                        r.get();
                    }
                    // SAFETY: the reference just taken.
                    unsafe { put(&r) };
                })
            })
            .collect();
        let holder = {
            let r = r.clone();
            thread::spawn(move || {
                let mut g = r.lock();
                *g += 1;
                let seen = g.count().unwrap();
                assert!((1..=3).contains(&seen), "{seen}");
                assert!(
                    !g.kill_if_zero(),
                    "never at zero: the holder's own reference"
                );
            })
        };
        for h in getters {
            h.join().unwrap();
        }
        holder.join().unwrap();
        assert_eq!(r.count(), Some(1));
        assert_eq!(*r.lock(), 1);
    });
}

/// A kill at zero races a lookup: exactly one wins. Either the lookup's add
/// lands first (it holds a reference and the kill fails), or the kill
/// lands first (the lookup sees dead and undoes). Never a reference to a
/// dead object, never a missed kill with no reference out.
#[test]
fn kill_races_lookup() {
    model(|| {
        let r = Arc::new(LockRef::with_raw((), AddWord::with_count(0).unwrap()));
        let lookup = {
            let r = r.clone();
            thread::spawn(move || r.get_not_dead())
        };
        let killer = {
            let r = r.clone();
            thread::spawn(move || r.lock().kill_if_zero())
        };
        let got = lookup.join().unwrap();
        let killed = killer.join().unwrap();
        assert!(got != killed, "got {got}, killed {killed}");
        if got {
            assert_eq!(r.count(), Some(1));
        } else {
            assert!(r.is_dead());
        }
    });
}

/// Lookups racing on a dead object undo their adds: it stays dead, and no
/// lookup succeeds; `get_not_zero` (a CAS) leaves no trace at all.
#[test]
fn undo_on_a_dead_object_races_lookups() {
    model(|| {
        let r = LockRef::with_raw((), AddWord::with_count(0).unwrap());
        assert!(r.lock().kill_if_zero());
        let r = Arc::new(r);
        let before = r.raw().word_for_tests();
        let handles: Vec<_> = [true, false]
            .into_iter()
            .map(|by_add| {
                let r = r.clone();
                thread::spawn(move || {
                    if by_add {
                        r.get_not_dead()
                    } else {
                        r.get_not_zero()
                    }
                })
            })
            .collect();
        for h in handles {
            assert!(!h.join().unwrap());
        }
        assert_eq!(r.raw().word_for_tests(), before, "every refused add undone");
        assert!(!r.lock().kill_if_zero());
    });
}

/// The fast_dput shape: a put to zero (then the lock and the exact kill)
/// races a lookup that revives the object and puts it to zero again. Both
/// may see zero and both go for the kill; exactly one kill succeeds and the
/// object ends dead. (Memory safety of this shape needs a grace period,
/// as in the kernel; the model checks the count's logic.)
#[test]
fn put_to_zero_races_revive_and_put() {
    model(|| {
        let r = Arc::new(LockRef::with_raw((), AddWord::new()));
        let last_put = |r: &LockRef<(), AddWord>| -> bool {
            // SAFETY: the caller's reference.
            let left = unsafe { put(r) };
            left == 0 && r.lock().kill_if_zero()
        };
        let owner = {
            let r = r.clone();
            thread::spawn(move || last_put(&r))
        };
        let reviver = {
            let r = r.clone();
            thread::spawn(move || r.get_not_dead() && last_put(&r))
        };
        let kills = u32::from(owner.join().unwrap()) + u32::from(reviver.join().unwrap());
        assert_eq!(kills, 1);
        assert!(r.is_dead());
    });
}

/// Concurrent adds at the saturation boundary: the count saturates and
/// stays saturated, however the adds, puts and pins interleave. (A put may
/// count on a transient near the boundary; the pin erases it. Undoing
/// instead of pinning let the count drift back below saturation: this
/// model caught that.)
#[test]
fn saturation_under_concurrent_adds() {
    model(|| {
        let r = Arc::new(LockRef::with_raw(
            (),
            AddWord::with_count(SATURATED - 1).unwrap(),
        ));
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let r = r.clone();
                thread::spawn(move || {
                    if i == 0 {
                        r.get();
                    } else {
                        assert!(r.get_not_dead());
                    }
                    // SAFETY: the reference just taken (saturated or not).
                    let left = unsafe { put(&r) };
                    assert!(left >= SATURATED - 2, "{left}");
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), Some(SATURATED));
    });
}

/// A reference taken by the lookup is visible to the last putter: what
/// the lookup's thread wrote under the lock before its put is what the
/// putter that reaches zero reads.
#[test]
fn last_put_sees_the_revivers_writes() {
    model(|| {
        let r = Arc::new(LockRef::with_raw(0u32, AddWord::new()));
        let reviver = {
            let r = r.clone();
            thread::spawn(move || {
                assert!(r.get_not_dead());
                *r.lock() = 7;
                // SAFETY: the reference just taken.
                unsafe { put(&r) }
            })
        };
        let owner = {
            let r = r.clone();
            // SAFETY: `new`'s reference.
            thread::spawn(move || unsafe { put(&r) })
        };
        let (a, b) = (reviver.join().unwrap(), owner.join().unwrap());
        assert!(a == 0 || b == 0, "someone reached zero");
        let g = r.lock();
        assert_eq!(*g, 7);
        assert_eq!(g.count(), Some(0));
    });
}

/// What a holder wrote outside the lock before its put is visible to a
/// lookup that revives the object after the put reached zero (the put's
/// Release, the lookup's Acquire).
#[test]
fn revive_acquires_what_the_last_holder_published() {
    model(|| {
        let r = Arc::new((
            LockRef::with_raw((), AddWord::new()),
            loom::cell::UnsafeCell::new(0u32),
        ));
        let holder = {
            let r = r.clone();
            thread::spawn(move || {
                // SAFETY: the holder's reference is the only one: nobody
                // reads the cell until a revive after our put.
                r.1.with_mut(|p| unsafe { *p = 7 });
                // SAFETY: `new`'s reference.
                unsafe { put(&r.0) }
            })
        };
        let lookup = {
            let r = r.clone();
            thread::spawn(move || {
                // A revive of a count that reached zero (a lookup finds it
                // in a cache that keeps it): then the holder has put.
                if r.0.count() == Some(0) && r.0.get_not_dead() {
                    // SAFETY: after the holder's put, which published the
                    // write.
                    assert_eq!(r.1.with(|p| unsafe { *p }), 7);
                    // SAFETY: the reference just taken.
                    unsafe { put(&r.0) };
                }
            })
        };
        holder.join().unwrap();
        lookup.join().unwrap();
    });
}

/// Two lockers update the data (a read, a yield, a write) while a third
/// thread's get and put land on the word: the test-and-set lock excludes
/// (loom's cell tracking flags overlap) and the count ends exact. (The
/// compare-and-swap word's ticket lock has
/// `ticket_lock_mutual_exclusion_across_wrap` and
/// `lockless_updates_vs_guard`: with its waiters spinning in line, this
/// shape exceeds loom's branch budget there.)
#[test]
fn lock_is_mutually_exclusive_while_adds_land() {
    model(|| {
        let r = Arc::new(LockRef::with_raw(0_u32, AddWord::new()));
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
            assert!(unsafe { put(&r2) } >= 1);
        }));
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*r.lock(), 2);
        assert_eq!(r.count(), Some(1));
    });
}

/// The counterexample: `put_or_lock` cannot be one fetch_sub. It must not
/// let the count reach zero without the lock, so a decrement that found
/// the count at one has to be undone before locking, and in between the
/// word reads zero while the putter still holds its reference. A
/// concurrent exact kill (a CAS from zero to dead) then kills an object
/// with a reference out. Loom finds that interleaving; this test passes
/// only because it does.
#[test]
#[should_panic(expected = "killed with a reference out")]
fn a_put_that_undoes_shows_a_false_zero() {
    const ZERO: u64 = 1 << 30;
    const DEAD: u64 = 0xE000_0000;
    model(|| {
        // The word of a count of one, in `AddWord`'s encoding.
        let word = Arc::new(AtomicU64::new(ZERO + 1));
        let holder = {
            let word = word.clone();
            thread::spawn(move || {
                // put_or_lock as one fetch_sub: found one, so undo and
                // (not modelled) take the lock to decrement there.
                let old = word.fetch_sub(1, Ordering::Release);
                if old == ZERO + 1 {
                    word.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let killer = {
            let word = word.clone();
            thread::spawn(move || {
                word.compare_exchange(ZERO, DEAD, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            })
        };
        holder.join().unwrap();
        assert!(!killer.join().unwrap(), "killed with a reference out");
    });
}

/// A put refused on a dead object races a lookup: the put's transient
/// decrement (undone at once) never reads as anything but dead, so the
/// lookup fails under every interleaving and the word ends exactly dead.
/// (With the dead count stored at the bottom of its region, the transient
/// read as saturated and the lookup pinned the word back to saturated.)
#[test]
fn a_refused_put_on_a_dead_word_never_lets_a_lookup_in() {
    model(|| {
        let r = Arc::new(LockRef::with_raw((), AddWord::with_count(0).unwrap()));
        assert!(r.lock().kill_if_zero());
        let dead = r.raw().word_for_tests();
        let putter = {
            let r = r.clone();
            thread::spawn(move || {
                // SAFETY: a put on a dead object is refused (its Errors).
                assert!(unsafe { r.put_owned() }.is_err());
            })
        };
        let lookups: Vec<_> = [false, true]
            .into_iter()
            .map(|not_zero| {
                let r = r.clone();
                thread::spawn(move || {
                    let got = if not_zero {
                        r.get_not_zero()
                    } else {
                        r.get_not_dead()
                    };
                    assert!(!got, "a reference on a dead object");
                })
            })
            .collect();
        putter.join().unwrap();
        for l in lookups {
            l.join().unwrap();
        }
        assert_eq!(r.raw().word_for_tests(), dead, "every transient undone");
    });
}
