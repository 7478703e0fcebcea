//! [`LockRef`]: a spinlock, a reference count and the data the lock guards.

use core::fmt;
use core::marker::PhantomData;

use crate::error::{CountError, PutError};
use crate::guard::{LockRefGuard, PutOrLock};
use crate::policy::{DefaultPolicy, Policy};
use crate::raw::RawLockRef;
use crate::sync::UnsafeCell;

/// A spinlock and a reference count in one 64-bit word, and a `T` that only
/// the lock reaches: the kernel's `struct lockref` with the fields it
/// protects (a dentry's `d_lock` and what it guards).
///
/// Reference counting is lockless while the lock is free: one
/// compare-and-swap of the whole word per attempt, so a count change never
/// happens while the lock is held. When the lock is held, or the
/// compare-and-swap keeps failing (the [`Policy`] `P` decides how to wait,
/// within a bound), the same operation is done under the lock. The lock is a
/// fair ticket spinlock, held through a [`LockRefGuard`] that also reads and
/// writes the count.
///
/// The count is an `i32`: negative is dead (no new references), zero is a
/// live object nobody references (a cache may keep it), [`SATURATED`](crate::SATURATED) is a
/// count that overflowed and never changes again. Dropping a reference at
/// zero is refused, never wrapped.
///
/// # Kernel mapping
///
/// | kernel | here |
/// |---|---|
/// | `lockref_init` | [`LockRef::new`] (count 1), [`LockRef::with_count`] |
/// | `lockref_get` | [`LockRef::get`] |
/// | `lockref_get_not_zero` | [`LockRef::get_not_zero`] |
/// | `lockref_get_not_dead` | [`LockRef::get_not_dead`] |
/// | `lockref_put_return` | [`LockRef::put_return`] |
/// | `lockref_put_or_lock` | [`LockRef::put_or_lock`] |
/// | `spin_lock(&lockref->lock)` | [`LockRef::lock`], [`LockRef::try_lock`] |
/// | `lockref->count` under the lock | [`LockRefGuard::count`], [`LockRefGuard::set_count`], [`LockRefGuard::increment`], [`LockRefGuard::decrement`] |
/// | `lockref_mark_dead` | [`LockRefGuard::mark_dead`] |
/// | `__lockref_is_dead` | [`LockRefGuard::is_dead`] (reliable), [`LockRef::is_dead`] (snapshot) |
/// | `d_count()` | [`LockRef::count`] (snapshot) |
///
/// # Examples
///
/// ```
/// use lockref::LockRef;
///
/// let inode = LockRef::new(String::from("inode 42"));
/// inode.get(); // a second reference: lockless, no lock taken
/// assert_eq!(inode.count(), 2);
/// {
///     let mut guard = inode.lock(); // the data only through the lock
///     guard.push_str(" (dirty)");
///     assert_eq!(guard.count(), 2);
/// }
/// assert_eq!(inode.put_return(), Ok(1));
/// ```
pub struct LockRef<T, P: Policy = DefaultPolicy> {
    pub(crate) raw: RawLockRef,
    pub(crate) data: UnsafeCell<T>,
    _policy: PhantomData<fn() -> P>,
}

// SAFETY: `LockRef` gives access to `T` only through the lock (a guard) or
// `&mut self`, as `Mutex` does, so sharing it between threads can only move
// `T` accesses between threads, never alias them: `T: Send` suffices. The
// count and lock are atomics. `P` is a policy type used only inside calls.
unsafe impl<T: Send, P: Policy> Sync for LockRef<T, P> {}

impl<T> LockRef<T> {
    crate::sync::const_fn! {
        /// An unlocked lockref holding one reference (`lockref_init`), with
        /// the [`DefaultPolicy`]; [`with_policy`](LockRef::with_policy)
        /// picks another. A `const fn` (except under `--cfg lockref_loom`), so a
        /// static root or mount needs no lazy initialization.
        ///
        /// ```
        /// static ROOT: lockref::LockRef<u32> = lockref::LockRef::new(0);
        ///
        /// let r = lockref::LockRef::new(7_u32);
        /// assert_eq!(r.count(), 1);
        /// ROOT.get();
        /// assert_eq!(ROOT.count(), 2);
        /// ```
        #[inline]
        pub fn new(data: T) -> Self {
            Self::with_policy(data)
        }
    }

    /// An unlocked lockref with `count` references, `0 ..= SATURATED`, with
    /// the [`DefaultPolicy`]. Starting at a high count is how tests reach
    /// saturation.
    ///
    /// # Errors
    ///
    /// [`CountError::OutOfRange`] if `count` is negative (a dead object is
    /// made by [`LockRefGuard::mark_dead`], not constructed).
    ///
    /// ```
    /// use lockref::{CountError, LockRef, SATURATED};
    ///
    /// let r = LockRef::with_count((), SATURATED - 1).unwrap();
    /// r.get();
    /// r.get(); // saturated: stays, the object is leaked, never freed
    /// assert_eq!(r.count(), SATURATED);
    /// assert_eq!(LockRef::with_count((), -1).err(), Some(CountError::OutOfRange));
    /// ```
    #[inline]
    pub fn with_count(data: T, count: i32) -> Result<Self, CountError> {
        Self::with_policy_and_count(data, count)
    }
}

impl<T, P: Policy> LockRef<T, P> {
    crate::sync::const_fn! {
        /// [`LockRef::new`] with the contention policy `P` (also `const`).
        ///
        /// ```
        /// use lockref::{policy::ExpBackoff, LockRef};
        ///
        /// let r = LockRef::<_, ExpBackoff>::with_policy(0_u32);
        /// r.get();
        /// assert_eq!(r.count(), 2);
        /// ```
        #[inline]
        pub fn with_policy(data: T) -> Self {
            Self::from_raw(RawLockRef::new(1), data)
        }
    }

    /// [`LockRef::with_count`] with the contention policy `P`.
    ///
    /// # Errors
    ///
    /// [`CountError::OutOfRange`] if `count` is negative.
    ///
    /// ```
    /// use lockref::{policy::WaitUnlock, LockRef};
    ///
    /// let r = LockRef::<_, WaitUnlock>::with_policy_and_count((), 0).unwrap();
    /// assert!(!r.get_not_zero());
    /// ```
    #[inline]
    pub fn with_policy_and_count(data: T, count: i32) -> Result<Self, CountError> {
        if count < 0 {
            return Err(CountError::OutOfRange);
        }
        Ok(Self::from_raw(RawLockRef::new(count), data))
    }

    crate::sync::const_fn! {
        #[inline]
        pub(crate) fn from_raw(raw: RawLockRef, data: T) -> Self {
            Self {
                raw,
                data: UnsafeCell::new(data),
                _policy: PhantomData,
            }
        }
    }

    /// The count now: a snapshot that other threads may change at once
    /// (the kernel's `d_count()`). Under the lock use
    /// [`LockRefGuard::count`]. Orders nothing.
    ///
    /// ```
    /// assert_eq!(lockref::LockRef::<()>::new(()).count(), 1);
    /// ```
    #[inline]
    pub fn count(&self) -> i32 {
        self.raw.count()
    }

    /// Whether the count reads dead now: a snapshot, reliable only under
    /// the lock ([`LockRefGuard::is_dead`]). Once dead, always dead.
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// assert!(!r.is_dead());
    /// r.lock().mark_dead();
    /// assert!(r.is_dead());
    /// ```
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.count() < 0
    }

    /// Takes a reference; the caller already holds one (`lockref_get`).
    /// At [`SATURATED`](crate::SATURATED) the count stays.
    ///
    /// Ordering: none (`Relaxed`), as `Arc::clone`: the caller's reference
    /// keeps the object alive.
    ///
    /// # Panics
    ///
    /// If the object is dead: a caller holding a reference cannot see that,
    /// and a reference to an object being torn down would be a
    /// use-after-free. Use [`get_not_dead`](Self::get_not_dead) where death
    /// is possible.
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// r.get();
    /// assert_eq!(r.count(), 2);
    /// ```
    #[inline]
    pub fn get(&self) {
        self.raw.get::<P>();
    }

    /// Takes a reference unless the count is zero or dead
    /// (`lockref_get_not_zero`). Returns whether it did.
    ///
    /// Ordering: `Acquire` when it takes the reference, so the caller sees
    /// what was written before the last unlock or releasing put.
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::with_count((), 0).unwrap();
    /// assert!(!r.get_not_zero());
    /// r.lock().set_count(1).unwrap();
    /// assert!(r.get_not_zero());
    /// assert_eq!(r.count(), 2);
    /// ```
    #[inline]
    #[must_use = "if it returned false, no reference was taken"]
    pub fn get_not_zero(&self) -> bool {
        self.raw.get_at_least::<P>(1)
    }

    /// Takes a reference unless the object is dead, even at count zero
    /// (`lockref_get_not_dead`): how a lookup that found the object
    /// without a reference legitimizes it. Returns whether it did.
    ///
    /// Ordering: `Acquire` when it takes the reference (see
    /// [`get_not_zero`](Self::get_not_zero)).
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::with_count((), 0).unwrap();
    /// assert!(r.get_not_dead());
    /// r.lock().mark_dead();
    /// assert!(!r.get_not_dead());
    /// ```
    #[inline]
    #[must_use = "if it returned false, no reference was taken"]
    pub fn get_not_dead(&self) -> bool {
        self.raw.get_at_least::<P>(0)
    }

    /// Drops a reference without ever taking the lock
    /// (`lockref_put_return`): returns the new count, or why it could not,
    /// in which case nothing changed and the caller decides under the lock
    /// (as `dput` does). At [`SATURATED`](crate::SATURATED) the count stays.
    ///
    /// Ordering: `Release` when it drops the reference, and `Acquire` too
    /// when the new count is zero, as `Arc::drop`: a caller that sees zero
    /// sees every other holder's use of the object.
    ///
    /// # Errors
    ///
    /// [`PutError::NotPositive`] at zero or dead (refused, never wrapped),
    /// [`PutError::Locked`], [`PutError::Contended`], or
    /// [`PutError::Unsupported`] on a build without the lockless path.
    ///
    /// ```
    /// use lockref::{LockRef, PutError};
    ///
    /// let r = LockRef::<()>::with_count((), 2).unwrap();
    /// assert_eq!(r.put_return(), Ok(1));
    /// let guard = r.lock();
    /// # if lockref::LOCKLESS {
    /// assert_eq!(r.put_return(), Err(PutError::Locked));
    /// # }
    /// drop(guard);
    /// # if lockref::LOCKLESS {
    /// assert_eq!(r.put_return(), Ok(0));
    /// assert_eq!(r.put_return(), Err(PutError::NotPositive));
    /// # }
    /// ```
    #[inline]
    pub fn put_return(&self) -> Result<u32, PutError> {
        self.raw.put_return::<P>()
    }

    /// Drops a reference unless it is the last one (count one or less,
    /// dead included): then it takes the lock, changes nothing, and hands
    /// back the guard so the caller can decide under it
    /// (`lockref_put_or_lock`).
    ///
    /// Ordering: `Release` when it drops the reference; `Acquire` (the
    /// lock's) when it returns the guard.
    ///
    /// ```
    /// use lockref::{LockRef, PutOrLock};
    ///
    /// let r = LockRef::<()>::with_count((), 2).unwrap();
    /// assert!(matches!(r.put_or_lock(), PutOrLock::Put));
    /// match r.put_or_lock() {
    ///     PutOrLock::Locked(mut guard) => {
    ///         assert_eq!(guard.count(), 1); // the last reference: ours to drop
    ///         guard.decrement().unwrap();
    ///     }
    ///     PutOrLock::Put => unreachable!(),
    /// }
    /// assert_eq!(r.count(), 0);
    /// ```
    #[inline]
    pub fn put_or_lock(&self) -> PutOrLock<'_, T, P> {
        match self.raw.put_or_lock::<P>() {
            None => PutOrLock::Put,
            Some(ticket) => PutOrLock::Locked(LockRefGuard::new(self, ticket)),
        }
    }

    /// Drops `n` references at once unless that would leave none (the
    /// count is `n` or less, or dead): then it takes the lock, changes
    /// nothing, and hands back the guard, so the caller can check the
    /// count, drop them with [`LockRefGuard::decrement_by`] and decide. A
    /// saturated count stays (`Put`). For protocols that return many
    /// references in one message (FUSE `FORGET` with its `nlookup`).
    ///
    /// Ordering: as [`put_or_lock`](Self::put_or_lock).
    ///
    /// ```
    /// use lockref::{LockRef, PutOrLock};
    ///
    /// let r = LockRef::<()>::with_count((), 5).unwrap();
    /// assert!(matches!(r.put_many_or_lock(3), PutOrLock::Put));
    /// assert_eq!(r.count(), 2);
    /// match r.put_many_or_lock(2) {
    ///     PutOrLock::Locked(mut guard) => assert_eq!(guard.decrement_by(2), Ok(0)),
    ///     PutOrLock::Put => unreachable!(),
    /// }
    /// assert_eq!(r.count(), 0);
    /// ```
    #[inline]
    pub fn put_many_or_lock(&self, n: u32) -> PutOrLock<'_, T, P> {
        match self.raw.put_many_or_lock::<P>(n) {
            None => PutOrLock::Put,
            Some(ticket) => PutOrLock::Locked(LockRefGuard::new(self, ticket)),
        }
    }

    /// Takes the lock, waiting in line (a fair ticket lock), and returns
    /// the guard that reaches the data and the count.
    ///
    /// Ordering: `Acquire`; the guard's drop is `Release`.
    ///
    /// The lock is not reentrant: taking it (or calling `get`,
    /// `get_not_zero`, `get_not_dead` or `put_or_lock`, which may fall back
    /// to it) on an object whose guard the same thread holds spins forever.
    /// A panic while a guard is held unlocks on unwinding, without
    /// poisoning: the data is whatever the panicking code left. At most
    /// 65 535 tickets are out at once (the holder's and its waiters'); a
    /// locker beyond that waits without drawing one until a ticket is
    /// served, so the 16-bit tickets never wrap onto a held lock.
    ///
    /// ```
    /// let r = lockref::LockRef::<Vec<u8>>::new(Vec::new());
    /// r.lock().push(1);
    /// assert_eq!(*r.lock(), [1]);
    /// ```
    #[inline]
    pub fn lock(&self) -> LockRefGuard<'_, T, P> {
        let ticket = self.raw.lock();
        LockRefGuard::new(self, ticket)
    }

    /// Takes the lock only if it is free now.
    ///
    /// Ordering: `Acquire` when it succeeds.
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// let guard = r.try_lock().unwrap();
    /// assert!(r.try_lock().is_none());
    /// drop(guard);
    /// assert!(r.try_lock().is_some());
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<LockRefGuard<'_, T, P>> {
        self.raw
            .try_lock()
            .map(|ticket| LockRefGuard::new(self, ticket))
    }

    /// The data, through exclusive access: no lock needed.
    ///
    /// ```
    /// let mut r = lockref::LockRef::<u32>::new(1);
    /// *r.get_mut() += 1;
    /// assert_eq!(*r.lock(), 2);
    /// ```
    #[inline]
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` excludes every guard and every other access
        // to the cell for the returned lifetime.
        self.data.with_mut(|ptr| unsafe { &mut *ptr })
    }

    /// The data, consuming the lockref.
    ///
    /// ```
    /// assert_eq!(lockref::LockRef::<u32>::new(5).into_inner(), 5);
    /// ```
    #[inline]
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }

    /// This object's counters (feature `stats`).
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// r.get();
    /// let s = r.stats();
    /// assert_eq!(s.operations, 1);
    /// # if lockref::LOCKLESS {
    /// assert_eq!((s.lockless, s.fallbacks, s.lock_acquisitions), (1, 0, 0));
    /// # }
    /// ```
    #[cfg(feature = "stats")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stats")))]
    pub fn stats(&self) -> crate::StatsSnapshot {
        self.raw.stats().snapshot()
    }

    /// Sets this object's counters to zero (feature `stats`).
    ///
    /// ```
    /// let r = lockref::LockRef::<()>::new(());
    /// r.get();
    /// r.reset_stats();
    /// assert_eq!(r.stats(), lockref::StatsSnapshot::default());
    /// ```
    #[cfg(feature = "stats")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stats")))]
    pub fn reset_stats(&self) {
        self.raw.stats().reset();
    }
}

impl<T: Default, P: Policy> Default for LockRef<T, P> {
    /// `LockRef::with_policy(T::default())`: one reference.
    fn default() -> Self {
        Self::with_policy(T::default())
    }
}

impl<T: fmt::Debug, P: Policy> fmt::Debug for LockRef<T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("LockRef");
        d.field("count", &self.count());
        match self.try_lock() {
            Some(guard) => d.field("data", &&*guard),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}
