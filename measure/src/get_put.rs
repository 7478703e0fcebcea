//! One reference taken and dropped: the operation every comparison times.

use std::sync::atomic::{AtomicU64, Ordering};

use std::ptr::NonNull;

use lockref::policy::Policy;
use lockref::{CountedRef, Fate, LockRef, LockRefGuard, RefCounted};

/// Something that takes and drops one reference (or, for a mutex,
/// increments and decrements a count under it).
pub trait GetPut: Sync {
    /// One get + put.
    fn get_put(&self);
}

/// The physical floor: `fetch_add` + `fetch_sub`, one locked instruction
/// each, with `Arc`'s orderings (Relaxed in, Release out). Nothing that
/// keeps a count in shared memory can do less.
///
/// ```
/// use lockref_measure::{Floor, GetPut};
///
/// let floor = Floor::new();
/// floor.get_put();
/// ```
#[derive(Debug)]
pub struct Floor(AtomicU64);

impl Floor {
    /// A count of one (the benchmark's own reference).
    pub fn new() -> Self {
        Floor(AtomicU64::new(1))
    }
}

impl Default for Floor {
    fn default() -> Self {
        Self::new()
    }
}

impl GetPut for Floor {
    #[inline]
    fn get_put(&self) {
        // Relaxed, Release: as `Arc::clone` and `Arc::drop` (the count
        // never reaches zero here, so no Acquire).
        self.0.fetch_add(1, Ordering::Relaxed);
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// A [`LockRef`] with policy `P`: `get`, then `put_return`, falling back to
/// a decrement under the lock when the lockless put gives up, as `dput`
/// does.
///
/// ```
/// use lockref::policy::KernelRetry;
/// use lockref_measure::{GetPut, LockRefGetPut};
///
/// let r = LockRefGetPut::<KernelRetry>::new();
/// r.get_put();
/// assert_eq!(r.lockref().count(), 1);
/// ```
#[derive(Debug)]
pub struct LockRefGetPut<P: Policy>(LockRef<(), P>);

impl<P: Policy> LockRefGetPut<P> {
    /// One reference, held by the benchmark itself.
    pub fn new() -> Self {
        LockRefGetPut(LockRef::with_policy(()))
    }

    /// The lockref.
    pub fn lockref(&self) -> &LockRef<(), P> {
        &self.0
    }
}

impl<P: Policy> Default for LockRefGetPut<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Policy> GetPut for LockRefGetPut<P> {
    #[inline]
    fn get_put(&self) {
        lockref_get_put(&self.0);
    }
}

/// `get` + `put_return` on `r`, with the locked decrement when the
/// lockless put gives up.
#[inline]
pub fn lockref_get_put<T: Send, P: Policy>(r: &LockRef<T, P>) {
    r.get();
    if r.put_return().is_err() {
        let _ = r.lock().decrement();
    }
}

/// The experimental fetch_add word: `get`, then `put_return`, one locked
/// instruction each (its put never gives up: it needs no fallback).
///
/// ```
/// use lockref_measure::{AddWordGetPut, GetPut};
///
/// let r = AddWordGetPut::new();
/// r.get_put();
/// assert_eq!(r.lockref().count(), Some(1));
/// ```
#[derive(Debug)]
pub struct AddWordGetPut(lockref::experimental::AddLockRef<()>);

impl AddWordGetPut {
    /// One reference, held by the benchmark itself.
    pub fn new() -> Self {
        AddWordGetPut(lockref::experimental::AddLockRef::new(()))
    }

    /// The lockref.
    pub fn lockref(&self) -> &lockref::experimental::AddLockRef<()> {
        &self.0
    }
}

impl Default for AddWordGetPut {
    fn default() -> Self {
        Self::new()
    }
}

impl GetPut for AddWordGetPut {
    #[inline]
    fn get_put(&self) {
        self.0.get();
        // SAFETY: the reference `get` just took.
        let _ = unsafe { self.0.put_return() };
    }
}

/// An object counted by [`CountedRef`]: the handle's clone and drop are
/// what [`CountedRefGetPut`] measures.
pub struct Counted {
    lockref: LockRef<()>,
}

// SAFETY: made only by `CountedRefGetPut::new` (a `Box`), counted only by
// `CountedRef`; `release` frees the box once.
unsafe impl RefCounted for Counted {
    type Word = LockRef<()>;
    type Grace = ();

    fn lockref(&self) -> &LockRef<()> {
        &self.lockref
    }

    fn last_put(&self, _: &mut LockRefGuard<'_, ()>) -> Fate {
        Fate::Kill
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: from `CountedRefGetPut::new`'s box; dead, unreferenced.
        drop(unsafe { Box::from_raw(this.as_ptr()) });
        None
    }
}

/// [`CountedRef`] clone + drop: the owned handle over the same word, to
/// compare with [`LockRefGetPut`] (raw `get` + `put_return`).
///
/// ```
/// use lockref_measure::{CountedRefGetPut, GetPut};
///
/// let r = CountedRefGetPut::new();
/// r.get_put();
/// ```
pub struct CountedRefGetPut(CountedRef<Counted>);

impl CountedRefGetPut {
    /// An object with one reference, held by the benchmark.
    pub fn new() -> Self {
        let obj = Box::new(Counted {
            lockref: LockRef::new(()),
        });
        // SAFETY: a new object's count of one is this handle's.
        CountedRefGetPut(unsafe { CountedRef::from_raw(NonNull::from(Box::leak(obj))) })
    }
}

impl Default for CountedRefGetPut {
    fn default() -> Self {
        Self::new()
    }
}

impl GetPut for CountedRefGetPut {
    #[inline]
    fn get_put(&self) {
        drop(std::hint::black_box(self.0.clone()));
    }
}
