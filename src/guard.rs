//! [`LockRefGuard`], the held lock, and [`PutOrLock`], what a last put
//! hands back.

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};

use crate::count::{decremented, incremented, DEAD, SATURATED};
use crate::error::CountError;
use crate::lockref::LockRef;
use crate::policy::{DefaultPolicy, Policy};
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
pub enum PutOrLock<'a, T, P: Policy = DefaultPolicy> {
    /// A reference was dropped; the count stayed at one or more.
    Put,
    /// The count was one or less (or dead): nothing changed and the lock is
    /// held, so the caller decides (typically: drop the last reference and
    /// kill or keep the object).
    Locked(LockRefGuard<'a, T, P>),
}

/// The lock of a [`LockRef`], held: reaches the data (`Deref`,
/// `DerefMut`) and the count. Dropping it unlocks.
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
/// While it exists, the lock of `lockref` is held with `ticket`, so nothing
/// else reaches the data and only this guard changes the count.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockRefGuard<'a, T, P: Policy = DefaultPolicy> {
    lockref: &'a LockRef<T, P>,
    ticket: u16,
    /// The access to the data, tracked by loom under `cfg(lockref_loom)`; dropped
    /// before the unlock.
    data: ManuallyDrop<MutPtr<T>>,
    /// Not `Send`: the lock belongs to the thread that took it.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: sharing `&LockRefGuard` shares only `&T` (and reads of the count),
// so `T: Sync` suffices, as for `MutexGuard`.
unsafe impl<T: Sync, P: Policy> Sync for LockRefGuard<'_, T, P> {}

impl<'a, T, P: Policy> LockRefGuard<'a, T, P> {
    #[inline]
    pub(crate) fn new(lockref: &'a LockRef<T, P>, ticket: u16) -> Self {
        // INVARIANT: the caller took the lock with `ticket`.
        Self {
            lockref,
            ticket,
            data: ManuallyDrop::new(lockref.data.get_mut()),
            _not_send: PhantomData,
        }
    }

    /// The count (reliable: only this guard changes it now).
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// assert_eq!(r.lock().count(), 1);
    /// ```
    #[inline]
    pub fn count(&self) -> i32 {
        self.lockref.raw.count_locked()
    }

    /// Whether the object is dead (`__lockref_is_dead`).
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// let mut g = r.lock();
    /// assert!(!g.is_dead());
    /// g.mark_dead();
    /// assert!(g.is_dead());
    /// ```
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.count() < 0
    }

    /// Takes a reference under the lock (the kernel's `count++` under
    /// `d_lock`, as `dget_dlock`), from zero too. At [`SATURATED`] the
    /// count stays. Returns the new count.
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`], changing nothing.
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::with_count((), 0).unwrap();
    /// assert_eq!(r.lock().increment(), Ok(1));
    /// ```
    #[inline]
    pub fn increment(&mut self) -> Result<i32, CountError> {
        let old = self.count();
        let new = incremented(old).ok_or(CountError::Dead)?;
        self.lockref.raw.set_count_locked(old, new);
        Ok(new)
    }

    /// Drops a reference under the lock. At [`SATURATED`] the count stays.
    /// Returns the new count.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] at zero, [`CountError::Dead`] when dead;
    /// nothing changes.
    ///
    /// ```
    /// use lockref::{CountError, LockRef};
    ///
    /// let r = LockRef::<()>::new(());
    /// let mut g = r.lock();
    /// assert_eq!(g.decrement(), Ok(0));
    /// assert_eq!(g.decrement(), Err(CountError::Underflow));
    /// ```
    #[inline]
    pub fn decrement(&mut self) -> Result<i32, CountError> {
        let old = self.count();
        let new = decremented(old).ok_or(if old < 0 {
            CountError::Dead
        } else {
            CountError::Underflow
        })?;
        self.lockref.raw.set_count_locked(old, new);
        Ok(new)
    }

    /// Drops `n` references under the lock. At [`SATURATED`] the count
    /// stays. Returns the new count.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if fewer than `n` are held,
    /// [`CountError::Dead`] when dead; nothing changes.
    ///
    /// ```
    /// use lockref::{CountError, LockRef};
    ///
    /// let r = LockRef::<()>::with_count((), 3).unwrap();
    /// let mut g = r.lock();
    /// assert_eq!(g.decrement_by(4), Err(CountError::Underflow));
    /// assert_eq!(g.decrement_by(3), Ok(0));
    /// ```
    #[inline]
    pub fn decrement_by(&mut self, n: u32) -> Result<i32, CountError> {
        let old = self.count();
        if old < 0 {
            return Err(CountError::Dead);
        }
        if old == SATURATED {
            return Ok(SATURATED);
        }
        if (old as u32) < n {
            return Err(CountError::Underflow);
        }
        let new = old - n as i32;
        self.lockref.raw.set_count_locked(old, new);
        Ok(new)
    }

    /// Sets the count of a live object to `count`, `0 ..= SATURATED`. A
    /// saturated count is left as it is (it never moves again).
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`] if dead (death is final),
    /// [`CountError::OutOfRange`] if `count` is negative (use
    /// [`mark_dead`](Self::mark_dead)); nothing changes.
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// let mut g = r.lock();
    /// g.set_count(5).unwrap();
    /// assert_eq!(g.count(), 5);
    /// ```
    #[inline]
    pub fn set_count(&mut self, count: i32) -> Result<(), CountError> {
        let old = self.count();
        if old < 0 {
            return Err(CountError::Dead);
        }
        if count < 0 {
            return Err(CountError::OutOfRange);
        }
        if old != SATURATED {
            self.lockref.raw.set_count_locked(old, count);
        }
        Ok(())
    }

    /// Marks the object dead (`lockref_mark_dead`): from now on no
    /// reference can be taken ([`LockRef::get_not_dead`] and friends fail,
    /// [`LockRef::get`] panics). Final. Only possible under the lock, which
    /// is why it is a guard method.
    ///
    /// A [`SATURATED`] count is left as it is: it never changes again, and
    /// the object it counts is leaked, never killed (its holders are
    /// uncounted, so no one may free it).
    ///
    /// ```
    /// use lockref::{LockRef, SATURATED};
    ///
    /// let r = LockRef::<()>::with_count((), 0).unwrap();
    /// r.lock().mark_dead();
    /// assert!(!r.get_not_dead());
    ///
    /// let leaked = LockRef::<()>::with_count((), SATURATED).unwrap();
    /// leaked.lock().mark_dead();
    /// assert_eq!(leaked.count(), SATURATED);
    /// ```
    #[inline]
    pub fn mark_dead(&mut self) {
        let old = self.count();
        if old == SATURATED {
            return;
        }
        self.lockref.raw.set_count_locked(old, DEAD);
    }
}

impl<T, P: Policy> Deref for LockRefGuard<'_, T, P> {
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

impl<T, P: Policy> DerefMut for LockRefGuard<'_, T, P> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference handed out by the guard.
        unsafe { MutPtr::deref(&self.data) }
    }
}

impl<T, P: Policy> Drop for LockRefGuard<'_, T, P> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `data` is dropped exactly once, here, and never used
        // after; ending the tracked access before the unlock keeps loom's
        // view of it inside the critical section.
        unsafe { ManuallyDrop::drop(&mut self.data) };
        self.lockref.raw.unlock(self.ticket);
    }
}

impl<T: fmt::Debug, P: Policy> fmt::Debug for LockRefGuard<'_, T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockRefGuard")
            .field("count", &self.count())
            .field("data", &**self)
            .finish()
    }
}
