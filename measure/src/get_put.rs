//! One reference taken and dropped: the operation every comparison times.

use std::sync::atomic::{AtomicU64, Ordering};

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use lockref::{CasWord, CountedRef, Fate, LockRef, LockRefGuard, RawLockRef, RefCounted};

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

/// A [`LockRef`] on the word `W` (the compare-and-swap word with its
/// policy, by default): `get`, then the lockless put (`put_owned`, which is
/// `put_return` on the compare-and-swap word), falling back to a decrement
/// under the lock when the lockless put gives up, as `dput` does.
///
/// ```
/// use lockref::{policy::KernelRetry, CasWord};
/// use lockref_measure::{GetPut, LockRefGetPut};
///
/// let r = LockRefGetPut::<CasWord<KernelRetry>>::new();
/// r.get_put();
/// assert_eq!(r.lockref().count(), Some(1));
/// ```
#[derive(Debug)]
pub struct LockRefGetPut<W: RawLockRef = CasWord>(LockRef<(), W>);

/// [`LockRefGetPut`] on the experimental fetch_add word: `get`, then
/// `put_owned`, one locked instruction each (its put never gives up: the
/// fallback never runs).
///
/// ```
/// use lockref_measure::{AddWordGetPut, GetPut};
///
/// let r = AddWordGetPut::new();
/// r.get_put();
/// assert_eq!(r.lockref().count(), Some(1));
/// ```
pub type AddWordGetPut = LockRefGetPut<lockref::experimental::AddWord>;

impl<W: RawLockRef + Default> LockRefGetPut<W> {
    /// One reference, held by the benchmark itself.
    pub fn new() -> Self {
        LockRefGetPut(LockRef::with_raw((), W::default()))
    }
}

impl<W: RawLockRef> LockRefGetPut<W> {
    /// The lockref.
    pub fn lockref(&self) -> &LockRef<(), W> {
        &self.0
    }
}

impl<W: RawLockRef + Default> Default for LockRefGetPut<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: RawLockRef + Sync> GetPut for LockRefGetPut<W> {
    #[inline]
    fn get_put(&self) {
        lockref_get_put(&self.0);
    }
}

/// `get` + the lockless put on `r`, with the locked decrement when the
/// lockless put gives up.
#[inline]
pub fn lockref_get_put<T, W: RawLockRef>(r: &LockRef<T, W>) {
    r.get();
    // SAFETY: the reference `get` just took is ours to give up.
    if unsafe { r.put_owned() }.is_err() {
        let _ = r.lock().decrement();
    }
}

/// An object counted by [`CountedRef`] on the word `W`: the handle's clone
/// and drop are what [`CountedRefGetPut`] measures. With `GRACE`, a drop is
/// the word's lockless put (the dentry's configuration: a grace section
/// makes a put to zero without the lock sound); without, it is
/// `put_or_lock`.
pub struct Counted<W: RawLockRef, const GRACE: bool> {
    lockref: LockRef<(), W>,
}

// SAFETY: made only by `CountedRefGetPut::new` (a `Box`), counted only by
// `CountedRef`. `release` frees nothing: the box is freed by
// `CountedRefGetPut`'s drop after the last handle is gone and the object
// dead, so its memory outlives every grace value (the `GRACE` contract).
unsafe impl<W: RawLockRef, const GRACE: bool> RefCounted for Counted<W, GRACE> {
    type Data = ();
    type Word = W;
    type Grace = ();

    fn lockref(&self) -> &LockRef<(), W> {
        &self.lockref
    }

    fn last_put(&self, _: &mut LockRefGuard<'_, (), W>) -> Fate {
        Fate::Kill
    }

    unsafe fn release(_: NonNull<Self>) -> Option<CountedRef<Self>> {
        None
    }

    fn grace() -> Option<()> {
        GRACE.then_some(())
    }
}

/// [`CountedRef`] clone + drop: the owned handle over the word `W`
/// ([`CasWord`] by default), to compare with [`LockRefGetPut`] (raw `get`
/// + put); `GRACE` as for [`Counted`].
///
/// ```
/// use lockref_measure::{CountedRefGetPut, GetPut};
///
/// let r = CountedRefGetPut::<lockref::CasWord, false>::new();
/// r.get_put();
/// let a = CountedRefGetPut::<lockref::experimental::AddWord, true>::new();
/// a.get_put();
/// ```
pub struct CountedRefGetPut<W: RawLockRef = CasWord, const GRACE: bool = false> {
    handle: ManuallyDrop<CountedRef<Counted<W, GRACE>>>,
}

impl<W: RawLockRef + Default, const GRACE: bool> CountedRefGetPut<W, GRACE> {
    /// An object with one reference, held by the benchmark.
    pub fn new() -> Self {
        let obj = Box::new(Counted {
            lockref: LockRef::with_raw((), W::default()),
        });
        // SAFETY: a new object's count of one is this handle's.
        let handle = unsafe { CountedRef::from_raw(NonNull::from(Box::leak(obj))) };
        CountedRefGetPut {
            handle: ManuallyDrop::new(handle),
        }
    }
}

impl<W: RawLockRef + Default, const GRACE: bool> Default for CountedRefGetPut<W, GRACE> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: RawLockRef, const GRACE: bool> Drop for CountedRefGetPut<W, GRACE> {
    fn drop(&mut self) {
        let ptr = CountedRef::as_ptr(&self.handle);
        // SAFETY: not used again. The last handle: its drop kills the
        // object (`release` frees nothing).
        unsafe { ManuallyDrop::drop(&mut self.handle) };
        // SAFETY: from `new`'s box, dead, no handle or grace left.
        drop(unsafe { Box::from_raw(ptr.as_ptr()) });
    }
}

impl<W: RawLockRef + Sync + Send, const GRACE: bool> GetPut for CountedRefGetPut<W, GRACE> {
    #[inline]
    fn get_put(&self) {
        drop(std::hint::black_box((*self.handle).clone()));
    }
}
