//! [`LockRefGuard`], the held lock, and [`PutOrLock`], what a last put
//! hands back.

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};

use crate::error::CountError;
use crate::lockref::LockRef;
use crate::raw::raw_lockref::{RawLockRef, RawLockRefExact};
use crate::raw::CasWord;
use crate::sync::MutPtr;

/// What [`LockRef::put_or_lock`] did.
///
/// ```
/// use lockref::{LockRef, PutOrLock};
///
/// let r = LockRef::new(());
/// if let PutOrLock::Locked(mut last) = r.put_or_lock() {
///     last.decrement().unwrap();
///     last.mark_dead();
/// }
/// assert!(r.is_dead());
/// ```
#[must_use = "a Locked guard holds the lock until it is dropped"]
pub enum PutOrLock<'a, T, W: RawLockRef = CasWord> {
    /// A reference was dropped; the count stayed at one or more.
    Put,
    /// The count was one or less (or dead): nothing changed and the lock is
    /// held, so the caller decides (typically: drop the last reference and
    /// kill or keep the object).
    Locked(LockRefGuard<'a, T, W>),
}

/// The lock of a [`LockRef`], held: reaches the data (`Deref`,
/// `DerefMut`) and the count. Dropping it unlocks. The one guard of every
/// word: what needs a count frozen under the lock
/// ([`set_count`](Self::set_count), [`mark_dead`](Self::mark_dead)) is
/// there only on a [`RawLockRefExact`] word.
///
/// It cannot be sent to another thread:
///
/// ```compile_fail
/// let r = lockref::LockRef::<u32>::new(0);
/// let guard = r.lock();
/// std::thread::scope(|s| {
///     s.spawn(move || drop(guard));
/// });
/// ```
///
/// # Invariants
///
/// While it exists, the lock of `lockref` is held with `ticket` (and
/// released only by its drop), so nothing else reaches the data; on a
/// [`RawLockRefExact`] word only this guard changes the count.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockRefGuard<'a, T, W: RawLockRef = CasWord> {
    lockref: &'a LockRef<T, W>,
    ticket: W::Ticket,
    /// The access to the data, tracked by loom under `cfg(lockref_loom)`; dropped
    /// before the unlock.
    data: ManuallyDrop<MutPtr<T>>,
    /// Not `Send`: the lock belongs to the thread that took it.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: sharing `&LockRefGuard` shares only `&T` (and reads of the count),
// so `T: Sync` suffices, as for `MutexGuard`.
unsafe impl<T: Sync, W: RawLockRef + Sync> Sync for LockRefGuard<'_, T, W> {}

impl<'a, T, W: RawLockRef> LockRefGuard<'a, T, W> {
    /// The guard of the lock just taken with `ticket`.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of `lockref` with `ticket` and hands it to
    /// the guard, whose drop releases it.
    #[inline]
    pub(crate) unsafe fn new(lockref: &'a LockRef<T, W>, ticket: W::Ticket) -> Self {
        // INVARIANT: the caller took the lock with `ticket` and gives it up.
        Self {
            lockref,
            ticket,
            data: ManuallyDrop::new(lockref.data().get_mut()),
            _not_send: PhantomData,
        }
    }

    /// The count, `None` if dead: exact on a [`RawLockRefExact`] word (only
    /// this guard changes it now); on the `fetch_add` word at least the
    /// references this holder knows of, since other threads' gets and puts
    /// still land.
    ///
    /// ```
    /// let r = lockref::LockRef::new(());
    /// assert_eq!(r.lock().count(), Some(1));
    /// ```
    #[inline]
    pub fn count(&self) -> Option<u32> {
        // SAFETY: the guard holds the lock (type invariant).
        unsafe { self.lockref.raw().count_locked() }
    }

    /// Whether the object is dead (`__lockref_is_dead`). Reliable: death
    /// is final and only a lock holder kills.
    ///
    /// ```
    /// let r = lockref::LockRef::new(());
    /// let mut g = r.lock();
    /// assert!(!g.is_dead());
    /// g.mark_dead();
    /// assert!(g.is_dead());
    /// ```
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.count().is_none()
    }

    /// Takes a reference under the lock (the kernel's `count++` under
    /// `d_lock`, as `dget_dlock`), from zero too. At
    /// [`SATURATED`](crate::SATURATED) the count stays. Returns the new
    /// count.
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`], changing nothing.
    ///
    /// ```
    /// let r = lockref::LockRef::with_count((), 0).unwrap();
    /// assert_eq!(r.lock().increment(), Ok(1));
    /// ```
    #[inline]
    pub fn increment(&mut self) -> Result<u32, CountError> {
        // SAFETY: the guard holds the lock (type invariant).
        unsafe { self.lockref.raw().increment_locked() }
    }

    /// Drops a reference under the lock. At [`SATURATED`](crate::SATURATED)
    /// the count stays. Returns the new count.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] at zero, [`CountError::Dead`] when dead;
    /// nothing changes.
    ///
    /// ```
    /// use lockref::{CountError, LockRef};
    ///
    /// let r = LockRef::new(());
    /// let mut g = r.lock();
    /// assert_eq!(g.decrement(), Ok(0));
    /// assert_eq!(g.decrement(), Err(CountError::Underflow));
    /// ```
    #[inline]
    pub fn decrement(&mut self) -> Result<u32, CountError> {
        self.decrement_by(1)
    }

    /// Drops `n` references under the lock. At
    /// [`SATURATED`](crate::SATURATED) the count stays. Returns the new
    /// count.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if fewer than `n` are held,
    /// [`CountError::Dead`] when dead; nothing changes.
    ///
    /// ```
    /// use lockref::{CountError, LockRef};
    ///
    /// let r = LockRef::with_count((), 3).unwrap();
    /// let mut g = r.lock();
    /// assert_eq!(g.decrement_by(4), Err(CountError::Underflow));
    /// assert_eq!(g.decrement_by(3), Ok(0));
    /// ```
    #[inline]
    pub fn decrement_by(&mut self, n: u32) -> Result<u32, CountError> {
        // SAFETY: the guard holds the lock (type invariant).
        unsafe { self.lockref.raw().decrement_by_locked(n) }
    }

    /// Marks the object dead if its count is zero at this instant, and
    /// returns whether it did: the kill that is exact on every word (on
    /// the `fetch_add` word a lookup may revive the object while the lock
    /// is held; then this fails and the reviver's last put decides again).
    /// A saturated count is never zero: the object is leaked.
    ///
    /// ```
    /// let r = lockref::LockRef::with_count((), 1).unwrap();
    /// let mut g = r.lock();
    /// assert!(!g.kill_if_zero()); // a reference is out
    /// g.decrement().unwrap();
    /// assert!(g.kill_if_zero());
    /// assert!(g.is_dead());
    /// ```
    #[inline]
    pub fn kill_if_zero(&mut self) -> bool {
        // SAFETY: the guard holds the lock (type invariant).
        unsafe { self.lockref.raw().kill_if_zero_locked() }
    }
}

impl<T, W: RawLockRefExact> LockRefGuard<'_, T, W> {
    /// Sets the count of a live object to `count`, `0 ..= SATURATED`. A
    /// saturated count is left as it is (it never moves again).
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`] if dead (death is final),
    /// [`CountError::OutOfRange`] above [`SATURATED`](crate::SATURATED);
    /// nothing changes.
    ///
    /// ```
    /// let r = lockref::LockRef::new(());
    /// let mut g = r.lock();
    /// g.set_count(5).unwrap();
    /// assert_eq!(g.count(), Some(5));
    /// ```
    #[inline]
    pub fn set_count(&mut self, count: u32) -> Result<(), CountError> {
        // SAFETY: the guard holds the lock (type invariant).
        unsafe { self.lockref.raw().set_count_locked(count) }
    }

    /// Marks the object dead (`lockref_mark_dead`), whatever its count:
    /// from now on no reference can be taken ([`LockRef::get_not_dead`]
    /// and friends fail, [`LockRef::get`] panics). Final. Only possible
    /// under the lock, which is why it is a guard method.
    ///
    /// A [`SATURATED`](crate::SATURATED) count is left as it is: it never
    /// changes again, and the object it counts is leaked, never killed (its
    /// holders are uncounted, so no one may free it).
    ///
    /// ```
    /// use lockref::{LockRef, SATURATED};
    ///
    /// let r = LockRef::with_count((), 0).unwrap();
    /// r.lock().mark_dead();
    /// assert!(!r.get_not_dead());
    ///
    /// let leaked = LockRef::with_count((), SATURATED).unwrap();
    /// leaked.lock().mark_dead();
    /// assert_eq!(leaked.count(), Some(SATURATED));
    /// ```
    #[inline]
    pub fn mark_dead(&mut self) {
        // SAFETY: the guard holds the lock (type invariant).
        unsafe { self.lockref.raw().mark_dead_locked() }
    }

    /// Brings a dead object back with `count` references: its memory now
    /// holds a new object of the same type (type-stable memory, the
    /// kernel's `SLAB_TYPESAFE_BY_RCU`: a slot of a pool, reused without
    /// being freed). A lookup through a stale pointer that takes a
    /// reference after this gets one on the new object, so it must check
    /// which object it got.
    ///
    /// # Errors
    ///
    /// [`CountError::NotDead`] if alive, [`CountError::OutOfRange`] above
    /// [`SATURATED`](crate::SATURATED): nothing changes.
    ///
    /// # Safety
    ///
    /// Nothing relies on the death any more: the old object's teardown
    /// (its [`RefCounted::release`](crate::RefCounted::release)) is over,
    /// and every holder of a pointer to it that may still take a reference
    /// checks, after taking it, that the object is the one it looked for,
    /// and puts the reference back if not.
    ///
    /// ```
    /// use lockref::{CountError, LockRef};
    ///
    /// let slot = LockRef::with_count(0u64, 0).unwrap();
    /// slot.lock().mark_dead();
    /// // SAFETY: nothing else points at this slot.
    /// unsafe { slot.lock().revive(1) }.unwrap();
    /// assert_eq!(slot.count(), Some(1));
    /// assert_eq!(unsafe { slot.lock().revive(1) }, Err(CountError::NotDead));
    /// ```
    #[inline]
    pub unsafe fn revive(&mut self, count: u32) -> Result<(), CountError> {
        // SAFETY: the guard holds the lock (type invariant); the caller
        // vouches for the rest.
        unsafe { self.lockref.raw().revive_locked(count) }
    }
}

impl<T, W: RawLockRef> Deref for LockRefGuard<'_, T, W> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: by the type invariant the lock is held, so no other
        // thread reaches the data, and this guard hands out a `&mut T` only
        // through `&mut self`, which cannot coexist with this borrow. The
        // shared reference is made from the raw pointer, never from a
        // `&mut T`, so several of them (two derefs, `Debug`) can coexist.
        self.data.with(|ptr| unsafe { &*ptr })
    }
}

impl<T, W: RawLockRef> DerefMut for LockRefGuard<'_, T, W> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference handed out by the guard.
        unsafe { MutPtr::deref(&self.data) }
    }
}

impl<T, W: RawLockRef> Drop for LockRefGuard<'_, T, W> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `data` is dropped exactly once, here, and never used
        // after; ending the tracked access before the unlock keeps loom's
        // view of it inside the critical section.
        unsafe { ManuallyDrop::drop(&mut self.data) };
        // SAFETY: the guard holds the lock with `ticket` (type invariant)
        // and this drop is where it gives it up.
        // INVARIANT: the guard ends here.
        unsafe { self.lockref.raw().unlock(self.ticket) };
    }
}

impl<T: fmt::Debug, W: RawLockRef> fmt::Debug for LockRefGuard<'_, T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockRefGuard")
            .field("count", &crate::raw::count::ShowCount(self.count()))
            .field("data", &**self)
            .finish()
    }
}
