//! Loom models of `LockRef`, one per race. Run with `--cfg loom --cfg
//! lockref_loom --cfg lockref_white_box`. Every racing side runs on a
//! spawned thread: loom 0.7 explores far fewer interleavings of work done
//! on the model's main thread.
//!
//! A model whose property holds on every word is generic over the word
//! and runs once per word (`on_each_word!`: the compare-and-swap word and
//! the fetch_add word). The others depend on what only the
//! compare-and-swap word does, and say so: its count is frozen under the
//! lock (`lockless_updates_vs_guard`, `mark_dead` and `set_count`), its
//! loop has a policy and a bound (`locked_fallback_after_retries_run_out`,
//! `wait_unlock_policy_keeps_forward_progress`), and it saturates
//! in one compare-and-swap (`saturation_under_concurrent_gets`; the
//! fetch_add word's pinning is `tests/add_word.rs`'s
//! `saturation_under_concurrent_adds`). The lock's sleep and wake are
//! `tests/park.rs`'s.
#![cfg(loom)]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use lockref::policy::ExpBackoff;
use lockref::{CasWord, LockRef, LockRefGuard, PutOrLock, RawLockRef, SATURATED};
use lockref_loom_tests::{model, OneAttempt, WaitTwice, Word};
use loom::sync::Arc;
use loom::thread;

/// A lockref on `W` with `count` references.
fn at<W: Word, T>(data: T, count: u32) -> LockRef<T, W> {
    LockRef::with_raw(data, W::with_count(count).unwrap())
}

/// Drops a reference as `dput`'s fast path does: lockless, else under the
/// lock.
fn put<T, W: RawLockRef>(r: &LockRef<T, W>) {
    // SAFETY: every caller owns the reference it puts.
    if unsafe { r.put_owned() }.is_err() {
        r.lock().decrement().expect("a held reference to drop");
    }
}

/// Drops a held reference as a `CountedRef` without a grace section does:
/// lockless unless it is the last, which is dropped under the lock and
/// kills at zero. Returns whether this put killed.
fn put_last_kills<W: RawLockRef>(r: &LockRef<bool, W>) -> bool {
    match r.put_or_lock() {
        PutOrLock::Put => false,
        PutOrLock::Locked(g) => drop_last(g),
    }
}

/// The last reference, under the lock: dropped, and a kill at zero
/// (recorded in the data) unless a lookup revived the object meanwhile
/// (possible on the fetch_add word only).
fn drop_last<W: RawLockRef>(mut g: LockRefGuard<'_, bool, W>) -> bool {
    assert!(!*g, "a reference to a killed object");
    if g.decrement().expect("a held reference") != 0 {
        return false;
    }
    let killed = g.kill_if_zero();
    *g = killed;
    killed
}

/// Two threads get and put concurrently, one putting locklessly (else
/// under the lock), the other as a `CountedRef` does (`put_or_lock`): the
/// count ends exact.
fn concurrent_get_put_keep_count_exact<W: Word>() {
    model(|| {
        let r = Arc::new(at::<W, _>(false, 1));
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let r = r.clone();
                thread::spawn(move || {
                    r.get();
                    if i == 0 {
                        put(&r);
                    } else {
                        assert!(!put_last_kills(&r), "the model's own reference stays");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), Some(1));
    });
}

/// The last holder's `put_or_lock` races a lookup's `get_not_dead` at
/// count one. Either the put saw the last reference, locked, dropped it
/// and killed, and the lookup failed (or its reference came and went
/// first); or the lookup's reference kept the object and its own last put
/// killed. On the fetch_add word the lookup's add may also land while the
/// putter holds the lock, between its decrement and its kill: then
/// `kill_if_zero` fails and the lookup's last put decides. Exactly one of
/// them kills; a reference never sees a killed object; the object never
/// ends unkilled with nobody holding it.
fn put_or_lock_races_get_at_count_one<W: Word>() {
    model(|| {
        let r = Arc::new(at::<W, _>(false, 1)); // data: killed
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

/// Two holders use the object, then drop their references lock-free; the
/// one whose put returns zero reads what both wrote (as `Arc::drop` before
/// freeing). Loom flags the read if a put's Release or the Acquire at zero
/// were missing.
fn last_put_sees_every_holders_writes<W: Word>() {
    use loom::cell::UnsafeCell;

    struct Obj<W: Word> {
        r: LockRef<(), W>,
        slots: [UnsafeCell<u32>; 2],
    }
    // SAFETY: each slot is written by one thread while it holds a
    // reference, and read only by the thread that dropped the last one.
    unsafe impl<W: Word> Sync for Obj<W> {}

    model(|| {
        let obj = Arc::new(Obj::<W> {
            r: at((), 2),
            slots: [UnsafeCell::new(0), UnsafeCell::new(0)],
        });
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let obj = obj.clone();
                thread::spawn(move || {
                    // SAFETY: slot `i` is ours while we hold the reference.
                    obj.slots[i].with_mut(|p| unsafe { *p = i as u32 + 1 });
                    let left = loop {
                        // SAFETY: our reference, given up on `Ok`.
                        if let Ok(n) = unsafe { obj.r.put_owned() } {
                            break n;
                        }
                    };
                    if left == 0 {
                        // SAFETY: the last reference is gone; nobody else
                        // touches the slots any more.
                        let sum: u32 = obj.slots.iter().map(|s| s.with(|p| unsafe { *p })).sum();
                        assert_eq!(sum, 3);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(obj.r.count(), Some(0));
    });
}

/// Data a lock holder wrote, outside the lockref, before it made the
/// object findable: a thread that then takes a reference through a lookup
/// reads it, so the reference's `Acquire` (or the fence that stands for
/// it) must order it.
struct Published(loom::cell::UnsafeCell<u32>);

// SAFETY: written once before the publishing operation, read only after an
// acquiring reference or lock; loom checks exactly that.
unsafe impl Sync for Published {}

/// A holder writes data, then raises the count from zero under the lock
/// with `raise`; a lookup's `get_not_zero` fails at zero or succeeds on the
/// raised count (on the fetch_add word possibly before the unlock) and
/// then reads the data.
fn lookup_sees_what_the_lock_holder_published<W: Word>(raise: fn(&mut LockRefGuard<'_, (), W>)) {
    model(move || {
        let r = Arc::new(at::<W, _>((), 0));
        let data = Arc::new(Published(loom::cell::UnsafeCell::new(0)));
        let writer = {
            let (r, data) = (r.clone(), data.clone());
            thread::spawn(move || {
                let mut g = r.lock();
                // SAFETY: nobody reads before the count is raised.
                data.0.with_mut(|p| unsafe { *p = 7 });
                raise(&mut g);
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

/// `get_not_zero`/`get_not_dead` take their reference with `Acquire`: a
/// lookup sees what the last lock holder wrote before an `increment` from
/// zero (fails if the reference is `Relaxed`, or, on the fetch_add word,
/// where the lookup can land before the unlock, if the increment does not
/// release).
fn lookup_reference_acquires_what_the_holder_published<W: Word>() {
    lookup_sees_what_the_lock_holder_published::<W>(|g| {
        g.increment().unwrap();
    });
}

/// `try_lock` acquires: a thread that gets the lock after a holder sees
/// what the holder wrote (fails if `try_lock` is `Relaxed`).
fn try_lock_acquires_what_the_previous_holder_wrote<W: Word>() {
    model(|| {
        let r = Arc::new(at::<W, _>((), 1));
        let data = Arc::new(Published(loom::cell::UnsafeCell::new(0)));
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

/// The models above, once per word.
macro_rules! on_each_word {
    ($($model:ident),* $(,)?) => {
        mod cas_word {
            $(#[test] fn $model() { super::$model::<lockref::CasWord>() })*
        }
        mod add_word {
            $(#[test] fn $model() { super::$model::<lockref::experimental::AddWord>() })*
        }
    };
}

on_each_word!(
    concurrent_get_put_keep_count_exact,
    put_or_lock_races_get_at_count_one,
    last_put_sees_every_holders_writes,
    lookup_reference_acquires_what_the_holder_published,
    try_lock_acquires_what_the_previous_holder_wrote,
);

/// The count is exact with the other policies' loops too.
#[test]
fn concurrent_get_put_keep_count_exact_exp_backoff() {
    concurrent_get_put_keep_count_exact::<CasWord<ExpBackoff>>();
}

#[test]
fn concurrent_get_put_keep_count_exact_wait_unlock() {
    concurrent_get_put_keep_count_exact::<CasWord<WaitTwice>>();
}

// ----- the compare-and-swap word only -----

/// A killer marks a count-0 object dead under the lock only if nobody took
/// a reference; a lookup's get_not_dead races it. No reference is granted
/// after death, and none is lost before it.
#[test]
fn mark_dead_under_lock_vs_get_not_dead() {
    model(|| {
        let r = Arc::new(LockRef::with_count((), 0).unwrap());
        let lookup = {
            let r = r.clone();
            thread::spawn(move || r.get_not_dead())
        };
        let killer = {
            let r = r.clone();
            thread::spawn(move || {
                let mut g = r.lock();
                if g.count() == Some(0) {
                    g.mark_dead();
                    true
                } else {
                    false
                }
            })
        };
        let killed = killer.join().unwrap();
        let found = lookup.join().unwrap();
        assert_ne!(found, killed);
        assert_eq!(r.count(), if found { Some(1) } else { None });
    });
}

/// A lookup through a stale pointer (type-stable memory) races the reuse
/// of the dead object's memory: the reuser writes the new object, then
/// revives the word under the lock. The lookup gets nothing, or a
/// reference that sees the new object whole (no data race on it); no
/// reference is lost.
#[test]
fn revive_races_a_stale_get_not_dead() {
    model(|| {
        let r = Arc::new(LockRef::with_count((), 0).unwrap());
        r.lock().mark_dead();
        let object = Arc::new(loom::cell::UnsafeCell::new(0u32));
        let lookup = {
            let (r, object) = (r.clone(), object.clone());
            thread::spawn(move || {
                r.get_not_dead().then(|| {
                    object.with(|v| {
                        // SAFETY: a reference taken orders this read after
                        // the reuser's write (the revival's unlock is
                        // Release, the get's success Acquire).
                        unsafe { *v }
                    })
                })
            })
        };
        let reuser = {
            let (r, object) = (r.clone(), object.clone());
            thread::spawn(move || {
                // SAFETY: the word is dead, so no lookup reads the object.
                object.with_mut(|v| unsafe { *v = 7 });
                let mut g = r.lock();
                // SAFETY: the only stale lookup checks what it got (here:
                // the new object's value).
                unsafe { g.revive(1) }.expect("dead");
            })
        };
        reuser.join().unwrap();
        let found = lookup.join().unwrap();
        assert!(found.is_none() || found == Some(7));
        assert_eq!(r.count(), Some(1 + u32::from(found.is_some())));
    });
}

/// Lockless gets and puts race a guard that reads and writes the data and
/// the count: no lost update to either, and the count never changes
/// lock-free while the guard holds the lock.
#[test]
fn lockless_updates_vs_guard() {
    model(|| {
        let r = Arc::new(LockRef::new(0_u32));
        let other = {
            let r = r.clone();
            thread::spawn(move || {
                r.get();
                put(&r);
            })
        };
        let holder = {
            let r = r.clone();
            thread::spawn(move || {
                let mut g = r.lock();
                let before = g.count();
                *g += 1;
                thread::yield_now();
                assert_eq!(g.count(), before, "count changed under the lock");
                g.increment().unwrap();
            })
        };
        holder.join().unwrap();
        other.join().unwrap();
        let g = r.lock();
        assert_eq!(*g, 1);
        assert_eq!(g.count(), Some(2));
    });
}

/// With a one-attempt budget, a failed compare-and-swap sends the operation
/// to the locked fallback; counts stay exact, and loom did reach the
/// fallback in some execution.
#[test]
fn locked_fallback_after_retries_run_out() {
    static FELL_BACK: AtomicBool = AtomicBool::new(false);
    model(|| {
        let r = Arc::new(LockRef::with_raw((), CasWord::<OneAttempt>::new()));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || r.get())
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), Some(3));
        let stats = r.raw().stats();
        assert_eq!(stats.operations, 2);
        assert_eq!(stats.lockless + stats.fallbacks, 2);
        if stats.fallbacks > 0 {
            assert_eq!(stats.cas_failures, stats.fallbacks);
            FELL_BACK.store(true, SeqCst);
        }
    });
    assert!(FELL_BACK.load(SeqCst), "no execution reached the fallback");
}

/// The wait-while-locked policy (the 2024 proposal) waits on a held lock,
/// but within its budget: the operation still completes (under the lock)
/// while a holder keeps it.
#[test]
fn wait_unlock_policy_keeps_forward_progress() {
    model(|| {
        let r = Arc::new(LockRef::with_raw(0, CasWord::<WaitTwice>::new()));
        let holder = {
            let r = r.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    *r.lock() += 1;
                }
            })
        };
        let getter = {
            let r = r.clone();
            thread::spawn(move || r.get())
        };
        getter.join().unwrap();
        holder.join().unwrap();
        assert_eq!(r.count(), Some(2));
        assert_eq!(*r.lock(), 2);
    });
}

/// Concurrent gets near the top saturate and stay; a put never brings a
/// saturated count back down.
#[test]
fn saturation_under_concurrent_gets() {
    model(|| {
        let r = Arc::new(LockRef::with_count((), SATURATED - 1).unwrap());
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || {
                    r.get();
                    assert_eq!(r.put_return(), Ok(SATURATED));
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.count(), Some(SATURATED));
    });
}

/// On a saturated count the lookup's reference is taken without a write;
/// the `Acquire` fence there gives it the same ordering (fails without
/// it). The count jumps from zero to saturated with `set_count`, which
/// only the compare-and-swap word has.
#[test]
fn saturated_lookup_reference_acquires_what_the_holder_published() {
    lookup_sees_what_the_lock_holder_published::<CasWord>(|g| g.set_count(SATURATED).unwrap());
}
