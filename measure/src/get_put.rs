//! One reference taken and dropped: the operation every comparison times.

use std::sync::atomic::{AtomicU64, Ordering};

use lockref::policy::Policy;
use lockref::LockRef;

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
