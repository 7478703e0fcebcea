//! [`LockRefWord`]: what [`CountedRef`](crate::CountedRef) needs of the
//! lockref an object embeds, so that an object can be counted by either
//! word: [`LockRef`] (the compare-and-swap word, the default) or, with
//! 64-bit atomics, the experimental `fetch_add` word
//! [`AddLockRef`](crate::experimental::AddLockRef).

use core::ops::DerefMut;

use crate::error::{CountError, PutError};
use crate::guard::{LockRefGuard, PutOrLock};
use crate::lockref::LockRef;
use crate::policy::Policy;

mod sealed {
    /// Only this crate's words: [`CountedRef`](crate::CountedRef)'s
    /// soundness rests on what each operation promises below.
    pub trait Sealed {}
}

/// A lockref [`RefCounted`](crate::RefCounted) objects can embed: the
/// operations [`CountedRef`](crate::CountedRef) is built from, with the
/// same meaning on both words (sealed: implemented by [`LockRef`] and
/// `experimental::AddLockRef`).
///
/// The difference that matters to code using the guard: under
/// [`LockRef`]'s lock the count is frozen, under `AddLockRef`'s other
/// threads' gets and puts still land. Both decisions made here are exact on
/// both words anyway: [`kill_if_zero`](Self::kill_if_zero) kills only if
/// the count is zero *at the kill*, and a revive either lands before it (no
/// kill) or on the dead count (the revive fails).
///
/// ```
/// use lockref::{LockRef, LockRefWord};
///
/// fn take_and_give_back<W: LockRefWord>(w: &W) {
///     w.get();
///     assert!(w.put_or_lock().is_none()); // not the last: put locklessly
/// }
/// take_and_give_back(&LockRef::new(()));
/// # #[cfg(all(target_has_atomic = "64", not(lockref_lock_only)))]
/// take_and_give_back(&lockref::experimental::AddLockRef::new(()));
/// ```
pub trait LockRefWord: sealed::Sealed {
    /// What the lock guards.
    type Data;
    /// The held lock.
    type Guard<'a>: DerefMut<Target = Self::Data>
    where
        Self: 'a;

    /// Takes a reference; the caller holds one (`lockref_get`). Panics on
    /// a dead object.
    fn get(&self);

    /// Takes a reference unless the object is dead, from zero too
    /// (`lockref_get_not_dead`). `Acquire` on success.
    fn get_not_dead(&self) -> bool;

    /// Drops an owned reference unless it is the last (count one or less,
    /// or dead): then takes the lock without changing the count and returns
    /// the guard (`lockref_put_or_lock`). `None`: the reference was
    /// dropped. `Release` when it drops; the lock's `Acquire` otherwise.
    fn put_or_lock(&self) -> Option<Self::Guard<'_>>;

    /// As [`put_or_lock`](Self::put_or_lock) for `n` references: dropped
    /// locklessly unless the count is `n` or less (or dead); a saturated
    /// count stays.
    fn put_many_or_lock(&self, n: u32) -> Option<Self::Guard<'_>>;

    /// Drops an owned reference without the lock and returns the count
    /// left, zero included (`lockref_put_return`); `Err` when it did
    /// nothing (the compare-and-swap word refuses while locked, contended,
    /// or at zero), and the caller takes [`put_or_lock`](Self::put_or_lock).
    /// `Release`, and `Acquire` when it reaches zero.
    ///
    /// # Safety
    ///
    /// The caller owns a reference, which this gives up on `Ok`. (The
    /// `fetch_add` word decrements before it checks: see
    /// `AddLockRef::put_return`.)
    unsafe fn put_owned(&self) -> Result<u32, PutError>;

    /// Takes the lock.
    fn lock(&self) -> Self::Guard<'_>;

    /// Under the lock: drops `n` references and returns the count left.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if fewer than `n` are counted,
    /// [`CountError::Dead`] on a dead object: nothing changes.
    fn decrement_by(guard: &mut Self::Guard<'_>, n: u32) -> Result<u32, CountError>;

    /// Under the lock: whether the count is zero and the object not dead
    /// now. On the `fetch_add` word, where puts land under the lock, it is
    /// a read-modify-write that changes nothing, ordered with every get and
    /// put (see `AddLockRefGuard::count`), and
    /// [`kill_if_zero`](Self::kill_if_zero) checks again.
    fn is_unused(guard: &Self::Guard<'_>) -> bool;

    /// Under the lock: marks the object dead if its count is zero now.
    /// Returns whether it did; `false` means a reference exists (a lookup
    /// revived it), whose last put decides again.
    fn kill_if_zero(guard: &mut Self::Guard<'_>) -> bool;
}

impl<T, P: Policy> sealed::Sealed for LockRef<T, P> {}

impl<T, P: Policy> LockRefWord for LockRef<T, P> {
    type Data = T;
    type Guard<'a>
        = LockRefGuard<'a, T, P>
    where
        Self: 'a;

    #[inline]
    fn get(&self) {
        LockRef::get(self);
    }

    #[inline]
    fn get_not_dead(&self) -> bool {
        LockRef::get_not_dead(self)
    }

    #[inline]
    fn put_or_lock(&self) -> Option<LockRefGuard<'_, T, P>> {
        match LockRef::put_or_lock(self) {
            PutOrLock::Put => None,
            PutOrLock::Locked(guard) => Some(guard),
        }
    }

    #[inline]
    fn put_many_or_lock(&self, n: u32) -> Option<LockRefGuard<'_, T, P>> {
        match LockRef::put_many_or_lock(self, n) {
            PutOrLock::Put => None,
            PutOrLock::Locked(guard) => Some(guard),
        }
    }

    #[inline]
    unsafe fn put_owned(&self) -> Result<u32, PutError> {
        // Safe on this word: it refuses a put at zero without changing it.
        LockRef::put_return(self)
    }

    #[inline]
    fn lock(&self) -> LockRefGuard<'_, T, P> {
        LockRef::lock(self)
    }

    #[inline]
    fn decrement_by(guard: &mut LockRefGuard<'_, T, P>, n: u32) -> Result<u32, CountError> {
        // A count left after a successful decrement is never negative.
        guard.decrement_by(n).map(|left| left.unsigned_abs())
    }

    #[inline]
    fn is_unused(guard: &LockRefGuard<'_, T, P>) -> bool {
        guard.count() == 0
    }

    #[inline]
    fn kill_if_zero(guard: &mut LockRefGuard<'_, T, P>) -> bool {
        // The count is frozen under this word's lock: the check is exact.
        let zero = guard.count() == 0;
        if zero {
            guard.mark_dead();
        }
        zero
    }
}

#[cfg(all(target_has_atomic = "64", not(lockref_lock_only)))]
mod add_word {
    use super::{sealed, LockRefWord};
    use crate::error::{CountError, PutError};
    use crate::experimental::{AddLockRef, AddLockRefGuard};

    impl<T> sealed::Sealed for AddLockRef<T> {}

    impl<T> LockRefWord for AddLockRef<T> {
        type Data = T;
        type Guard<'a>
            = AddLockRefGuard<'a, T>
        where
            Self: 'a;

        #[inline]
        fn get(&self) {
            AddLockRef::get(self);
        }

        #[inline]
        fn get_not_dead(&self) -> bool {
            AddLockRef::get_not_dead(self)
        }

        #[inline]
        fn put_or_lock(&self) -> Option<AddLockRefGuard<'_, T>> {
            AddLockRef::put_or_lock(self)
        }

        #[inline]
        fn put_many_or_lock(&self, n: u32) -> Option<AddLockRefGuard<'_, T>> {
            AddLockRef::put_many_or_lock(self, n)
        }

        #[inline]
        unsafe fn put_owned(&self) -> Result<u32, PutError> {
            // SAFETY: the caller owns the reference (this fn's contract).
            unsafe { AddLockRef::put_return(self) }
        }

        #[inline]
        fn lock(&self) -> AddLockRefGuard<'_, T> {
            AddLockRef::lock(self)
        }

        #[inline]
        fn decrement_by(guard: &mut AddLockRefGuard<'_, T>, n: u32) -> Result<u32, CountError> {
            guard.decrement_by(n)
        }

        #[inline]
        fn is_unused(guard: &AddLockRefGuard<'_, T>) -> bool {
            guard.count() == Some(0)
        }

        #[inline]
        fn kill_if_zero(guard: &mut AddLockRefGuard<'_, T>) -> bool {
            guard.kill_if_zero()
        }
    }
}
