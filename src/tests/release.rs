//! After a releasing put the object is not the putter's: for every
//! operation that gives up a reference, the thread that sees zero frees the
//! object at once while the other threads are still in their puts. Nothing
//! here can fail in a plain run; the tests are for Miri (under Stacked and
//! Tree Borrows) and ThreadSanitizer, which report any touch of the object
//! (a statistics counter, a read, an assertion) after its release as a
//! use-after-free or a data race with the free. `.ci/run` runs them under
//! both, for every feature combination.

use core::ptr::NonNull;
use std::boxed::Box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::thread;
use std::vec::Vec;

use crate::raw::policy::{ExpBackoff, KernelRetry, Policy, WaitUnlock};
use crate::{
    CasWord, CountedRef, Fate, LockRef, LockRefGuard, PutError, PutOrLock, RawLockRef, RefCounted,
};

use super::{lockref_at, AnyWord, NoAttempts};

/// Threads putting at once.
const PUTTERS: usize = if cfg!(miri) { 3 } else { 4 };
/// Objects raced to their free, one after the other.
const ROUNDS: usize = if cfg!(miri) { 4 } else { 300 };

/// A pointer handed to the putting threads.
struct Shared<O>(NonNull<O>);

// SAFETY: the objects raced here are `Sync`; each thread uses the pointer
// only while it owns a reference, and only the one that saw zero frees.
unsafe impl<O: Sync> Send for Shared<O> {}

impl<O> Shared<O> {
    /// The pointer (a method, so that a closure captures the whole
    /// `Shared`, not its `!Send` field).
    fn get(self) -> NonNull<O> {
        self.0
    }
}

/// Boxes `make(count)` with `PUTTERS * per` references, starts `PUTTERS`
/// threads that give up `per` each with `put` (which returns whether it
/// brought the count to zero), and frees the box on the thread that did,
/// at once. Checks that exactly one thread saw zero. `ROUNDS` times.
fn race_to_free<O: Sync + 'static>(
    make: impl Fn(u32) -> O,
    per: u32,
    put: impl Fn(NonNull<O>, u32) -> bool + Send + Sync + 'static,
) {
    race_to_free_rounds(ROUNDS, make, per, put);
}

/// [`race_to_free`], `rounds` times.
fn race_to_free_rounds<O: Sync + 'static>(
    rounds: usize,
    make: impl Fn(u32) -> O,
    per: u32,
    put: impl Fn(NonNull<O>, u32) -> bool + Send + Sync + 'static,
) {
    let put = Arc::new(put);
    for _ in 0..rounds {
        let ptr = NonNull::from(Box::leak(Box::new(make(PUTTERS as u32 * per))));
        let zeros = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..PUTTERS)
            .map(|_| {
                let (shared, put, zeros) = (Shared(ptr), put.clone(), zeros.clone());
                thread::spawn(move || {
                    let ptr = shared.get();
                    if put(ptr, per) {
                        zeros.fetch_add(1, Ordering::Relaxed);
                        // SAFETY: this thread saw the count reach zero: no
                        // reference is left, and nobody else frees.
                        drop(unsafe { Box::from_raw(ptr.as_ptr()) });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(zeros.load(Ordering::Relaxed), 1, "exactly one last put");
    }
}

/// Gives up `n` references with `put_many_or_lock` (`put_or_lock` for one),
/// finishing under the lock when they are the last. Returns whether the
/// count reached zero (the lock is released by then).
///
/// # Safety
///
/// The caller owns `n` references on the live object at `w`.
unsafe fn put_or_lock_n<D, W: RawLockRef>(w: NonNull<LockRef<D, W>>, n: u32) -> bool {
    // SAFETY: the caller's references keep it alive until the put.
    let w = unsafe { w.as_ref() };
    let guard = if n == 1 {
        w.put_or_lock()
    } else {
        w.put_many_or_lock(n)
    };
    // `Put`: given up without the lock; the object is no longer ours.
    let PutOrLock::Locked(mut guard) = guard else {
        return false;
    };
    let left = guard.decrement_by(n).expect("the references were counted");
    drop(guard);
    left == 0
}

/// Gives up one reference with `put_owned` (`LockRef::put_return` on the
/// compare-and-swap word), falling back to `put_or_lock` when it refuses
/// (contended, or no lockless path). Returns whether it reached zero.
///
/// # Safety
///
/// The caller owns a reference on the live object at `w`.
unsafe fn put_return_or_lock<D, W: RawLockRef>(w: NonNull<LockRef<D, W>>) -> bool {
    // SAFETY: the caller's reference keeps it alive until the put.
    match unsafe { w.as_ref().put_owned() } {
        Ok(left) => left == 0,
        // SAFETY: refused: the reference is still ours.
        Err(_) => unsafe { put_or_lock_n(w, 1) },
    }
}

fn lockref_puts_free_on_zero<P: Policy + 'static>() {
    let make = |count: u32| lockref_at::<CasWord<P>, _>(7, count);
    // `race_to_free` hands each thread `per` references it owns: the
    // safety contract of each put below.
    // SAFETY: see above.
    race_to_free(make, 1, |w, _| unsafe { put_return_or_lock(w) });
    // SAFETY: see above.
    race_to_free(make, 1, |w, n| unsafe { put_or_lock_n(w, n) });
    // SAFETY: see above.
    race_to_free(make, 3, |w, n| unsafe { put_or_lock_n(w, n) });
    // The typed API as a user writes it: `put_return`, then the lock.
    race_to_free(make, 1, |w, _| {
        // SAFETY: the thread's reference keeps it alive until the put.
        let r = unsafe { w.as_ref() };
        match r.put_return() {
            Ok(left) => left == 0,
            Err(PutError::Contended | PutError::Locked | PutError::Unsupported) => {
                match r.put_or_lock() {
                    PutOrLock::Put => false,
                    PutOrLock::Locked(mut last) => {
                        let left = last.decrement().expect("counted");
                        drop(last);
                        left == 0
                    }
                }
            }
            Err(e) => panic!("a counted reference refused: {e}"),
        }
    });
}

#[test]
fn lockref_put_return_put_or_lock_and_put_many_or_lock_free_on_zero() {
    lockref_puts_free_on_zero::<KernelRetry>();
    lockref_puts_free_on_zero::<WaitUnlock>();
    lockref_puts_free_on_zero::<ExpBackoff>();
    lockref_puts_free_on_zero::<NoAttempts>();
}

#[cfg(all(
    feature = "unstable-add-word",
    target_has_atomic = "64",
    not(lockref_lock_only)
))]
#[test]
fn add_word_puts_free_on_zero() {
    use crate::experimental::AddWord;
    let make = |count: u32| lockref_at::<AddWord, _>(7u64, count);
    // SAFETY: each thread owns `per` references (as above).
    race_to_free(make, 1, |w, _| unsafe { put_return_or_lock(w) });
    // SAFETY: as above.
    race_to_free(make, 1, |w, n| unsafe { put_or_lock_n(w, n) });
    // SAFETY: as above.
    race_to_free(make, 3, |w, n| unsafe { put_or_lock_n(w, n) });
}

/// The grace section of `Boxed<_, true>`: a read lock, which `release`
/// waits out (write-locks) before it frees; a one-lock RCU.
static GRACE_LOCK: RwLock<()> = RwLock::new(());

/// An object freed by `release` as soon as it is killed, with a field
/// beside the lockref that a late touch would read. With `GRACE`, its puts
/// are lockless to zero (`put_owned`) inside a read-side section.
struct Boxed<W: AnyWord, const GRACE: bool> {
    lockref: LockRef<(), W>,
    payload: u64,
}

// SAFETY: made only by `boxed` (a `Box`), counted only by `CountedRef`,
// freed once by `release`, after every grace section entered before its
// death (the write lock waits for them); never kept at zero.
unsafe impl<W: AnyWord, const GRACE: bool> RefCounted for Boxed<W, GRACE> {
    type Data = ();
    type Word = W;
    type Grace = RwLockReadGuard<'static, ()>;
    fn lockref(&self) -> &LockRef<(), W> {
        &self.lockref
    }
    fn last_put(&self, _: &mut LockRefGuard<'_, (), W>) -> Fate {
        Fate::Kill
    }
    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        drop(GRACE_LOCK.write().unwrap());
        // SAFETY: from `boxed`'s box; dead and unreferenced, and no grace
        // section that could still look at it is left.
        drop(unsafe { Box::from_raw(this.as_ptr()) });
        None
    }
    fn grace() -> Option<Self::Grace> {
        GRACE.then(|| GRACE_LOCK.read().unwrap())
    }
    /// Always killed: with a grace section, the put that reads its
    /// references as the last drops them and kills in one swap, and one
    /// that learns it was the last after all drops to zero and kills in a
    /// second; both race the other putters here.
    fn killed_at_zero(&self) -> bool {
        GRACE
    }
}

/// A `Boxed` with `count` references, handed out raw.
fn boxed<W: AnyWord, const GRACE: bool>(count: u32) -> NonNull<Boxed<W, GRACE>> {
    NonNull::from(Box::leak(Box::new(Boxed {
        lockref: lockref_at((), count),
        payload: 7,
    })))
}

/// `PUTTERS` threads each drop `per` handles (or forget `per` raw
/// references) to one object at once; the last put's `release` frees it.
fn counted_ref_race<W: AnyWord, const GRACE: bool>(per: u32, forget: bool) {
    for _ in 0..ROUNDS {
        let ptr = boxed::<W, GRACE>(PUTTERS as u32 * per);
        let threads: Vec<_> = (0..PUTTERS)
            .map(|_| {
                let shared = Shared(ptr);
                thread::spawn(move || {
                    let ptr = shared.get();
                    if forget {
                        // SAFETY: this thread owns `per` of the references.
                        unsafe { CountedRef::put_many(ptr, per) }.unwrap();
                    } else {
                        let handles: Vec<_> = (0..per)
                            // SAFETY: as above, one per handle.
                            .map(|_| unsafe { CountedRef::from_raw(ptr) })
                            .collect();
                        assert_eq!(handles[0].payload, 7);
                        drop(handles);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}

fn counted_ref_puts_free_on_zero<W: AnyWord>() {
    counted_ref_race::<W, false>(1, false);
    counted_ref_race::<W, false>(2, false);
    counted_ref_race::<W, false>(1, true);
    counted_ref_race::<W, false>(3, true);
    // Lockless to zero under the grace section.
    counted_ref_race::<W, true>(1, false);
    counted_ref_race::<W, true>(2, false);
}

#[test]
fn counted_ref_drop_and_put_many_free_on_zero() {
    counted_ref_puts_free_on_zero::<CasWord<KernelRetry>>();
    counted_ref_puts_free_on_zero::<CasWord<NoAttempts>>();
    #[cfg(all(
        feature = "unstable-add-word",
        target_has_atomic = "64",
        not(lockref_lock_only)
    ))]
    counted_ref_puts_free_on_zero::<crate::experimental::AddWord>();
}

/// Data whose size is not a multiple of the word's alignment: the
/// `LockRef` has tail padding, which a releasing call's `&self` would
/// protect if it lay outside the lockref's cell (see
/// `tests::freed_under_a_call`). Each put races the free once per run;
/// `.ci/run` runs this under Miri with many seeds (`-Zmiri-many-seeds`),
/// both aliasing models, with and without `stats`.
fn padded_data_races<D: Copy + Send + 'static>(data: D) {
    let make = move |count: u32| lockref_at::<CasWord, _>(data, count);
    // `race_to_free` hands each thread `per` references it owns: the
    // safety contract of each put below.
    // SAFETY: see above.
    race_to_free_rounds(1, make, 1, |w, _| unsafe { put_return_or_lock(w) });
    // SAFETY: as above.
    race_to_free_rounds(1, make, 1, |w, n| unsafe { put_or_lock_n(w, n) });
    // SAFETY: as above.
    race_to_free_rounds(1, make, 2, |w, n| unsafe { put_or_lock_n(w, n) });
}

/// The `CountedRef` doc example's shape: an object holding a
/// `LockRef<bool>` beside a field of its own, freed by `release`.
struct Inode {
    _ino: u64,
    lockref: LockRef<bool>,
}

// SAFETY: made only in `padded_data_races_to_the_free`'s box, counted
// only by `CountedRef`, freed once by `release`; never kept at zero.
unsafe impl RefCounted for Inode {
    type Data = bool;
    type Word = CasWord;
    type Grace = ();
    fn lockref(&self) -> &LockRef<bool> {
        &self.lockref
    }
    fn last_put(&self, keep: &mut LockRefGuard<'_, bool>) -> Fate {
        if **keep {
            Fate::Keep
        } else {
            Fate::Kill
        }
    }
    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: from the test's box; dead and unreferenced.
        drop(unsafe { Box::from_raw(this.as_ptr()) });
        None
    }
}

#[test]
fn padded_data_races_to_the_free() {
    padded_data_races(true);
    padded_data_races(7_u8);
    padded_data_races(7_i32);
    padded_data_races([7_u8; 3]);
    let ptr = NonNull::from(Box::leak(Box::new(Inode {
        _ino: 7,
        lockref: lockref_at(false, PUTTERS as u32),
    })));
    let threads: Vec<_> = (0..PUTTERS)
        .map(|_| {
            let shared = Shared(ptr);
            // SAFETY: each thread owns one of the `PUTTERS` references.
            thread::spawn(move || drop(unsafe { CountedRef::from_raw(shared.get()) }))
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
