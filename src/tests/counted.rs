//! `CountedRef`: clone and drop, keep or kill at zero, `try_get`, raw
//! hand-off, `put_many`, `kill_unused`, the cascade, the grace strategy;
//! each on both words (`CasWord` and, with `unstable-add-word`, the
//! experimental `AddWord`).

use core::ptr::NonNull;
use std::boxed::Box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::vec::Vec;

use super::{lockref_at, AnyWord};
use crate::{CountError, CountedRef, Fate, LockRef, LockRefGuard, RefCounted, SATURATED};

/// What the tests observe: releases (kills) so far.
#[derive(Default)]
struct World {
    released: AtomicUsize,
}

/// A test object: kept at zero while its data says so, else killed; may
/// hold a reference on a parent.
struct Obj<W: AnyWord> {
    lockref: LockRef<bool, W>,
    world: Arc<World>,
    parent: Option<NonNull<Obj<W>>>,
}

// SAFETY: `Obj`s are only made by `new_obj` (a `Box`), their count is
// changed only by `CountedRef`, and `release` frees the box once.
unsafe impl<W: AnyWord> RefCounted for Obj<W> {
    type Data = bool;
    type Word = W;
    type Grace = ();

    fn lockref(&self) -> &LockRef<bool, W> {
        &self.lockref
    }

    fn last_put(&self, keep: &mut LockRefGuard<'_, bool, W>) -> Fate {
        if **keep {
            Fate::Keep
        } else {
            Fate::Kill
        }
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: from `new_obj`'s box; dead and unreferenced.
        let obj = unsafe { Box::from_raw(this.as_ptr()) };
        obj.world.released.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the object held one reference on its parent.
        obj.parent.map(|p| unsafe { CountedRef::from_raw(p) })
    }
}

// SAFETY: the parent pointer is a counted reference, shareable.
unsafe impl<W: AnyWord> Send for Obj<W> {}
// SAFETY: as above.
unsafe impl<W: AnyWord> Sync for Obj<W> {}

fn world() -> Arc<World> {
    Arc::default()
}

fn new_obj<W: AnyWord>(
    world: &Arc<World>,
    keep: bool,
    parent: Option<CountedRef<Obj<W>>>,
) -> CountedRef<Obj<W>> {
    new_obj_counted(world, keep, parent, 1)
}

fn new_obj_counted<W: AnyWord>(
    world: &Arc<World>,
    keep: bool,
    parent: Option<CountedRef<Obj<W>>>,
    count: u32,
) -> CountedRef<Obj<W>> {
    let obj = Box::new(Obj {
        lockref: lockref_at(keep, count),
        world: world.clone(),
        parent: parent.map(CountedRef::into_raw),
    });
    // SAFETY: a new object's count is the handle's (and, saturated, any
    // number of references).
    unsafe { CountedRef::from_raw(NonNull::from(Box::leak(obj))) }
}

fn clone_and_drop_count_and_the_last_put_kills<W: AnyWord>() {
    let w = world();
    let a = new_obj::<W>(&w, false, None);
    let b = a.clone();
    assert_eq!(b.lockref.count(), Some(2));
    drop(a);
    assert_eq!(w.released.load(Ordering::Relaxed), 0);
    drop(b);
    assert_eq!(w.released.load(Ordering::Relaxed), 1);
}

fn keep_leaves_a_findable_object_at_zero<W: AnyWord>() {
    let w = world();
    let a = new_obj::<W>(&w, true, None);
    let raw = CountedRef::as_ptr(&a);
    drop(a);
    // SAFETY: kept at zero, not freed.
    let obj = unsafe { raw.as_ref() };
    assert_eq!(obj.lockref.count(), Some(0));
    assert_eq!(w.released.load(Ordering::Relaxed), 0);
    // SAFETY: alive (kept).
    let revived = unsafe { CountedRef::try_get(raw) }.expect("kept, not dead");
    assert_eq!(revived.lockref.count(), Some(1));
    *revived.lockref.lock() = false;
    drop(revived);
    assert_eq!(w.released.load(Ordering::Relaxed), 1);
}

fn try_get_fails_on_a_dead_object<W: AnyWord>() {
    let w = world();
    let a = new_obj::<W>(&w, true, None);
    let raw = CountedRef::as_ptr(&a);
    drop(a);
    // Kill it by hand without freeing: mark dead under the lock.
    // SAFETY: kept at zero, not freed.
    let mut guard = unsafe { raw.as_ref() }.lockref.lock();
    assert!(guard.kill_if_zero());
    drop(guard);
    // SAFETY: dead but not freed.
    assert!(unsafe { CountedRef::try_get(raw) }.is_none());
    // SAFETY: nothing references it; free it as `release` would.
    drop(unsafe { Box::from_raw(raw.as_ptr()) });
}

fn into_raw_and_from_raw_hand_a_reference_over<W: AnyWord>() {
    let w = world();
    let a = new_obj::<W>(&w, false, None);
    let raw = CountedRef::into_raw(a.clone());
    assert_eq!(a.lockref.count(), Some(2));
    // SAFETY: `raw` carries the reference `into_raw` gave up.
    let back = unsafe { CountedRef::from_raw(raw) };
    assert!(CountedRef::ptr_eq(&a, &back));
    drop(back);
    assert_eq!(a.lockref.count(), Some(1));
}

fn put_many_drops_n_refuses_more_and_decides_at_zero<W: AnyWord>() {
    let w = world();
    let a = new_obj::<W>(&w, false, None);
    for _ in 0..5 {
        let _ = CountedRef::into_raw(a.clone());
    }
    let raw = CountedRef::as_ptr(&a);
    assert_eq!(a.lockref.count(), Some(6));
    // SAFETY: we own the 5 raw references.
    unsafe {
        assert_eq!(CountedRef::put_many(raw, 3), Ok(()));
        assert_eq!(a.lockref.count(), Some(3));
        assert_eq!(CountedRef::put_many(raw, 4), Err(CountError::Underflow));
        assert_eq!(
            CountedRef::put_many(raw, u32::MAX),
            Err(CountError::Underflow)
        );
        assert_eq!(a.lockref.count(), Some(3), "a refused put changes nothing");
        assert_eq!(CountedRef::put_many(raw, 0), Ok(()));
        assert_eq!(CountedRef::put_many(raw, 2), Ok(()));
    }
    assert_eq!(a.lockref.count(), Some(1));
    let raw = CountedRef::into_raw(a);
    // SAFETY: the last reference.
    assert_eq!(unsafe { CountedRef::put_many(raw, 1) }, Ok(()));
    assert_eq!(w.released.load(Ordering::Relaxed), 1);
}

fn put_many_on_a_saturated_count_moves_nothing<W: AnyWord>() {
    let w = world();
    let a = new_obj_counted::<W>(&w, false, None, SATURATED);
    let raw = CountedRef::as_ptr(&a);
    // SAFETY: a saturated count counts every reference anyone claims.
    unsafe {
        assert_eq!(CountedRef::put_many(raw, 7), Ok(()));
        assert_eq!(CountedRef::put_many(raw, u32::MAX), Ok(()));
    }
    assert_eq!(a.lockref.count(), Some(SATURATED));
    let raw = CountedRef::as_ptr(&a);
    drop(a);
    assert_eq!(w.released.load(Ordering::Relaxed), 0, "leaked, never freed");
    // SAFETY: nothing else uses it; free the leak so Miri's leak check
    // stays meaningful.
    drop(unsafe { Box::from_raw(raw.as_ptr()) });
}

fn kill_unused_kills_only_at_zero<W: AnyWord>() {
    let w = world();
    let a = new_obj::<W>(&w, true, None);
    let raw = CountedRef::as_ptr(&a);
    // SAFETY: alive (referenced).
    assert!(!unsafe { CountedRef::kill_unused(raw) });
    drop(a);
    // SAFETY: kept at zero, not freed.
    assert!(unsafe { CountedRef::kill_unused(raw) });
    assert_eq!(w.released.load(Ordering::Relaxed), 1);
}

fn a_long_cascade_is_a_loop_not_a_recursion<W: AnyWord>() {
    let depth = if cfg!(miri) { 200 } else { 200_000 };
    let w = world();
    let mut leaf = new_obj::<W>(&w, false, None);
    for _ in 0..depth {
        leaf = new_obj(&w, false, Some(leaf));
    }
    drop(leaf);
    assert_eq!(w.released.load(Ordering::Relaxed), depth + 1);
}

fn concurrent_clones_and_drops_kill_exactly_once<W: AnyWord>() {
    let w = world();
    let a = new_obj::<W>(&w, false, None);
    thread::scope(|s| {
        let handles: Vec<_> = (0..super::THREADS)
            .map(|_| {
                let mine = a.clone();
                s.spawn(move || {
                    for _ in 0..super::ITERS {
                        drop(mine.clone());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
    assert_eq!(a.lockref.count(), Some(1));
    drop(a);
    assert_eq!(w.released.load(Ordering::Relaxed), 1);
}

/// An object with a grace section: its memory is never freed during the
/// test (so a put to zero without the lock is sound), and it stays while
/// `retain_unlocked` says so.
struct Graced<W: AnyWord> {
    lockref: LockRef<(), W>,
    retain: bool,
    released: AtomicUsize,
}

// SAFETY: never freed during the test (`release` only counts), which is
// the grace the contract asks for; `retain` never changes.
unsafe impl<W: AnyWord> RefCounted for Graced<W> {
    type Data = ();
    type Word = W;
    type Grace = ();

    fn lockref(&self) -> &LockRef<(), W> {
        &self.lockref
    }

    fn last_put(&self, _: &mut LockRefGuard<'_, (), W>) -> Fate {
        if self.retain {
            Fate::Keep
        } else {
            Fate::Kill
        }
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: the object outlives the test.
        unsafe { this.as_ref() }
            .released
            .fetch_add(1, Ordering::Relaxed);
        None
    }

    fn grace() -> Option<()> {
        Some(())
    }

    fn retain_unlocked(&self) -> bool {
        self.retain
    }

    fn killed_at_zero(&self) -> bool {
        !self.retain
    }
}

fn with_grace_the_last_put_keeps_without_the_lock_or_kills_under_it<W: AnyWord>() {
    for retain in [true, false] {
        let raw = NonNull::from(Box::leak(Box::new(Graced::<W> {
            lockref: lockref_at((), 1),
            retain,
            released: AtomicUsize::new(0),
        })));
        // SAFETY: the new object's count of one.
        let r = unsafe { CountedRef::from_raw(raw) };
        drop(r.clone());
        drop(r);
        // SAFETY: never freed by `release`; freed below.
        let obj = unsafe { raw.as_ref() };
        assert_eq!(obj.lockref.count(), retain.then_some(0));
        assert_eq!(obj.released.load(Ordering::Relaxed), usize::from(!retain));
        // SAFETY: unreferenced, from the box above.
        drop(unsafe { Box::from_raw(raw.as_ptr()) });
    }
}

/// Exact accounting of the last put with a grace section, on the default
/// word: one lockless operation whether the object stays (a put to zero)
/// or dies with its kill known before (the drop and the kill in one
/// compare-and-swap), and no lock either way.
#[cfg(feature = "stats")]
#[test]
fn the_last_put_with_a_grace_section_is_one_lockless_operation() {
    for retain in [true, false] {
        let raw = NonNull::from(Box::leak(Box::new(Graced::<crate::CasWord> {
            lockref: lockref_at((), 1),
            retain,
            released: AtomicUsize::new(0),
        })));
        // SAFETY: the new object's count of one.
        let r = unsafe { CountedRef::from_raw(raw) };
        drop(r.clone());
        r.lockref().raw().reset_stats();
        drop(r);
        // SAFETY: never freed by `release`; freed below.
        let obj = unsafe { raw.as_ref() };
        let s = obj.lockref.raw().stats();
        let expected = if crate::LOCKLESS {
            (1, 1, 0)
        } else {
            (s.operations, 0, s.lock_acquisitions)
        };
        assert_eq!(
            (s.operations, s.lockless, s.lock_acquisitions),
            expected,
            "retain: {retain}"
        );
        assert_eq!(obj.released.load(Ordering::Relaxed), usize::from(!retain));
        // SAFETY: unreferenced, from the box above.
        drop(unsafe { Box::from_raw(raw.as_ptr()) });
    }
}

/// The tests above, once per word.
macro_rules! on_each_word {
    ($($test:ident),* $(,)?) => {
        mod cas_word {
            $(#[test] fn $test() { super::$test::<crate::CasWord>() })*
            #[test]
            fn with_grace_the_last_put_keeps_without_the_lock_or_kills_under_it() {
                super::with_grace_the_last_put_keeps_without_the_lock_or_kills_under_it::<crate::CasWord>()
            }
        }
        #[cfg(all(
            feature = "unstable-add-word",
            target_has_atomic = "64",
            not(lockref_lock_only)
        ))]
        mod add_word {
            use crate::experimental::AddWord;
            $(#[test] fn $test() { super::$test::<AddWord>() })*
            #[test]
            fn with_grace_the_last_put_keeps_without_the_lock_or_kills_under_it() {
                super::with_grace_the_last_put_keeps_without_the_lock_or_kills_under_it::<AddWord>()
            }
        }
    };
}

on_each_word!(
    clone_and_drop_count_and_the_last_put_kills,
    keep_leaves_a_findable_object_at_zero,
    try_get_fails_on_a_dead_object,
    into_raw_and_from_raw_hand_a_reference_over,
    put_many_drops_n_refuses_more_and_decides_at_zero,
    put_many_on_a_saturated_count_moves_nothing,
    kill_unused_kills_only_at_zero,
    a_long_cascade_is_a_loop_not_a_recursion,
    concurrent_clones_and_drops_kill_exactly_once,
);
