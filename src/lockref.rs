//! [`LockRef`]: a spinlock, a reference count and the data the lock guards.

use core::fmt;

use crate::error::{CountError, PutError};
use crate::guard::{LockRefGuard, PutOrLock};
use crate::raw::raw_lockref::{RawLockRef, RawLockRefExact};
use crate::raw::CasWord;
use crate::sync::UnsafeCell;

/// A spinlock and a reference count in one 64-bit word `W`, and a `T` that
/// only the lock reaches: the kernel's `struct lockref` with the fields it
/// protects (a dentry's `d_lock` and what it guards).
///
/// The word is a [`RawLockRef`]; the default, [`CasWord`], counts
/// locklessly while the lock is free: one compare-and-swap of the whole
/// word per attempt, so a count change never happens while the lock is
/// held. When the lock is held, or the compare-and-swap keeps failing (the
/// word's [`Policy`](crate::raw::policy::Policy) decides how to wait, within a
/// bound), the same operation is done under the lock. The lock is held
/// through a [`LockRefGuard`] that also reads and writes the count; a
/// waiter spins a short while, then sleeps in the word's
/// [`Park`](crate::park::Park) (with `std`, `parking_lot_core`; without,
/// it spins on), and the unlock wakes it.
///
/// Counts are `u32`: [`count`](Self::count) reads `None` for a dead object
/// (no new references), zero is a live object nobody references (a cache
/// may keep it), [`SATURATED`](crate::SATURATED) is a count that overflowed
/// and never changes again. Dropping a reference at zero is refused, never
/// wrapped.
///
/// # Kernel mapping
///
/// | kernel | here |
/// |---|---|
/// | `lockref_init` | [`LockRef::new`] (count 1), [`LockRef::with_count`], [`LockRef::with_raw`] |
/// | `lockref_get` | [`LockRef::get`] |
/// | `lockref_get_not_zero` | [`LockRef::get_not_zero`] |
/// | `lockref_get_not_dead` | [`LockRef::get_not_dead`] |
/// | `lockref_put_return` | [`LockRef::put_return`] |
/// | `lockref_put_or_lock` | [`LockRef::put_or_lock`] |
/// | `spin_lock(&lockref->lock)` | [`LockRef::lock`], [`LockRef::try_lock`] |
/// | `lockref->count` under the lock | [`LockRefGuard::count`], [`LockRefGuard::set_count`], [`LockRefGuard::increment`], [`LockRefGuard::decrement`] |
/// | `lockref_mark_dead` | [`LockRefGuard::mark_dead`] (or, exact on every word, [`LockRefGuard::kill_if_zero`]) |
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
/// assert_eq!(inode.count(), Some(2));
/// {
///     let mut guard = inode.lock(); // the data only through the lock
///     guard.push_str(" (dirty)");
///     assert_eq!(guard.count(), Some(2));
/// }
/// assert_eq!(inode.put_return(), Ok(1));
/// ```
///
/// # Layout: every byte in a cell
///
/// The word and the data are kept inside one `UnsafeCell`, so that no byte
/// of a `LockRef`, padding included, lies outside a cell. A `&LockRef`
/// argument of a call that gives up a reference (`put_or_lock`,
/// `put_return`, ...) stays live until the call returns, while another
/// holder may already have seen zero and freed the object; Rust's aliasing
/// rules (Stacked and Tree Borrows) forbid freeing bytes that such an
/// argument covers outside an `UnsafeCell`, and allow it inside one (the
/// rule that makes `Arc::drop` sound, rust-lang/rust#55005). With the data
/// beside the word, any `T` whose size is not a multiple of the word's
/// alignment would leave padding outside: a `LockRef<bool>` freed by the
/// last holder while another returns from its put was undefined behaviour.
/// The size and alignment are those of the two fields side by side.
pub struct LockRef<T, W: RawLockRef = CasWord> {
    cells: core::cell::UnsafeCell<Cells<T, W>>,
}

/// The word and the data, kept together inside [`LockRef`]'s one outer
/// `UnsafeCell` (see "Layout" there).
struct Cells<T, W> {
    raw: W,
    data: UnsafeCell<T>,
}

// SAFETY: `LockRef` gives access to `T` only through the lock (a guard) or
// `&mut self`, as `Mutex` does, so sharing it between threads can only move
// `T` accesses between threads, never alias them: `T: Send` suffices, with
// a word that may be shared (`W: Sync`: its operations are atomic).
unsafe impl<T: Send, W: RawLockRef + Sync> Sync for LockRef<T, W> {}

impl<T> LockRef<T> {
    crate::sync::const_fn! {
        /// An unlocked lockref holding one reference (`lockref_init`), on
        /// the default word; [`with_raw`](LockRef::with_raw) takes another.
        /// A `const fn` (except under `--cfg lockref_loom`), so a static
        /// root or mount needs no lazy initialization.
        ///
        /// ```
        /// static ROOT: lockref::LockRef<u32> = lockref::LockRef::new(0);
        ///
        /// let r = lockref::LockRef::new(7_u32);
        /// assert_eq!(r.count(), Some(1));
        /// ROOT.get();
        /// assert_eq!(ROOT.count(), Some(2));
        /// ```
        #[inline]
        pub fn new(data: T) -> Self {
            Self::with_raw(data, CasWord::new())
        }
    }

    /// An unlocked lockref with `count` references, `0 ..= SATURATED`, on
    /// the default word. Starting at a high count is how tests reach
    /// saturation.
    ///
    /// # Errors
    ///
    /// [`CountError::OutOfRange`] above [`SATURATED`](crate::SATURATED) (a
    /// dead object is made by [`LockRefGuard::mark_dead`], not
    /// constructed).
    ///
    /// ```
    /// use lockref::{CountError, LockRef, SATURATED};
    ///
    /// let r = LockRef::with_count((), SATURATED - 1).unwrap();
    /// r.get();
    /// r.get(); // saturated: stays, the object is leaked, never freed
    /// assert_eq!(r.count(), Some(SATURATED));
    /// assert_eq!(LockRef::with_count((), SATURATED + 1).err(), Some(CountError::OutOfRange));
    /// ```
    #[inline]
    pub fn with_count(data: T, count: u32) -> Result<Self, CountError> {
        Ok(Self::with_raw(data, CasWord::with_count(count)?))
    }
}

impl<T, W: RawLockRef> LockRef<T, W> {
    crate::sync::const_fn! {
        /// A lockref on the word `raw`, with whatever count it holds: how
        /// another policy or word is chosen (the type follows the value).
        ///
        /// ```
        /// use lockref::{policy::ExpBackoff, CasWord, LockRef};
        ///
        /// let r = LockRef::with_raw(0_u32, CasWord::<ExpBackoff>::with_count(0).unwrap());
        /// assert!(!r.get_not_zero());
        /// ```
        #[inline]
        pub fn with_raw(data: T, raw: W) -> Self {
            Self {
                cells: core::cell::UnsafeCell::new(Cells {
                    raw,
                    data: UnsafeCell::new(data),
                }),
            }
        }
    }

    /// The word.
    #[inline(always)]
    pub fn raw(&self) -> &W {
        // SAFETY: the cells live as long as `self`; the word is only ever
        // reached through shared references (it is atomic: `RawLockRef`'s
        // contract), and `&mut` to the cells is made only from `&mut self`.
        unsafe { &*core::ptr::addr_of!((*self.cells.get()).raw) }
    }

    /// The cell of the data, which the lock guards.
    #[inline(always)]
    pub(crate) fn data(&self) -> &UnsafeCell<T> {
        // SAFETY: as in `raw`: the data's own cell is only ever reached
        // through shared references, its contents through the lock.
        unsafe { &*core::ptr::addr_of!((*self.cells.get()).data) }
    }

    /// The count now: a snapshot that other threads may change at once
    /// (the kernel's `d_count()`); `None` if dead. Under the lock use
    /// [`LockRefGuard::count`]. Orders nothing.
    ///
    /// ```
    /// assert_eq!(lockref::LockRef::new(()).count(), Some(1));
    /// ```
    #[inline]
    pub fn count(&self) -> Option<u32> {
        self.raw().count()
    }

    /// Whether the count reads dead now: a snapshot, reliable only under
    /// the lock ([`LockRefGuard::is_dead`]). Once dead, always dead.
    ///
    /// ```
    /// let r = lockref::LockRef::new(());
    /// assert!(!r.is_dead());
    /// r.lock().mark_dead();
    /// assert!(r.is_dead());
    /// ```
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.count().is_none()
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
    /// let r = lockref::LockRef::new(());
    /// r.get();
    /// assert_eq!(r.count(), Some(2));
    /// ```
    #[inline]
    pub fn get(&self) {
        self.raw().get();
    }

    /// Takes a reference unless the count is zero or dead
    /// (`lockref_get_not_zero`). Returns whether it did.
    ///
    /// Ordering: `Acquire` when it takes the reference, so the caller sees
    /// what was written before the last unlock or releasing put.
    ///
    /// ```
    /// let r = lockref::LockRef::with_count((), 0).unwrap();
    /// assert!(!r.get_not_zero());
    /// r.lock().increment().unwrap();
    /// assert!(r.get_not_zero());
    /// assert_eq!(r.count(), Some(2));
    /// ```
    #[inline]
    #[must_use = "if it returned false, no reference was taken"]
    pub fn get_not_zero(&self) -> bool {
        self.raw().get_not_zero()
    }

    /// Takes a reference unless the object is dead, even at count zero
    /// (`lockref_get_not_dead`): how a lookup that found the object
    /// without a reference legitimizes it. Returns whether it did.
    ///
    /// Ordering: `Acquire` when it takes the reference (see
    /// [`get_not_zero`](Self::get_not_zero)).
    ///
    /// ```
    /// let r = lockref::LockRef::with_count((), 0).unwrap();
    /// assert!(r.get_not_dead());
    /// r.lock().mark_dead();
    /// assert!(!r.get_not_dead());
    /// ```
    #[inline]
    #[must_use = "if it returned false, no reference was taken"]
    pub fn get_not_dead(&self) -> bool {
        self.raw().get_not_dead()
    }

    /// Drops an owned reference without the lock and returns the count
    /// left, zero included; `Err` when it did nothing, and the caller then
    /// decides under the lock ([`put_or_lock`](Self::put_or_lock)). On
    /// the default word this is [`put_return`](Self::put_return), which is
    /// safe; the `fetch_add` word decrements before it checks.
    ///
    /// Ordering: `Release`, and `Acquire` when it reaches zero.
    ///
    /// # Errors
    ///
    /// As [`put_return`](Self::put_return) on the default word; a dead
    /// count ([`PutError::NotPositive`]) on the `fetch_add` word.
    ///
    /// # Safety
    ///
    /// The caller owns a reference, which this gives up on `Ok`.
    ///
    /// ```
    /// let r = lockref::LockRef::with_count((), 2).unwrap();
    /// // SAFETY: two references were made, and we own them.
    /// # if lockref::LOCKLESS {
    /// assert_eq!(unsafe { r.put_owned() }, Ok(1));
    /// # }
    /// ```
    #[inline]
    pub unsafe fn put_owned(&self) -> Result<u32, PutError> {
        // SAFETY: the caller owns the reference (this fn's contract).
        unsafe { self.raw().put_owned() }
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
    /// let r = LockRef::with_count((), 2).unwrap();
    /// assert!(matches!(r.put_or_lock(), PutOrLock::Put));
    /// match r.put_or_lock() {
    ///     PutOrLock::Locked(mut guard) => {
    ///         assert_eq!(guard.count(), Some(1)); // the last reference: ours to drop
    ///         guard.decrement().unwrap();
    ///     }
    ///     PutOrLock::Put => unreachable!(),
    /// }
    /// assert_eq!(r.count(), Some(0));
    /// ```
    #[inline]
    pub fn put_or_lock(&self) -> PutOrLock<'_, T, W> {
        match self.raw().put_or_lock() {
            None => PutOrLock::Put,
            // SAFETY: the word returned the ticket of the lock it took.
            Some(ticket) => PutOrLock::Locked(unsafe { LockRefGuard::new(self, ticket) }),
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
    /// let r = LockRef::with_count((), 5).unwrap();
    /// assert!(matches!(r.put_many_or_lock(3), PutOrLock::Put));
    /// assert_eq!(r.count(), Some(2));
    /// match r.put_many_or_lock(2) {
    ///     PutOrLock::Locked(mut guard) => assert_eq!(guard.decrement_by(2), Ok(0)),
    ///     PutOrLock::Put => unreachable!(),
    /// }
    /// assert_eq!(r.count(), Some(0));
    /// ```
    #[inline]
    pub fn put_many_or_lock(&self, n: u32) -> PutOrLock<'_, T, W> {
        match self.raw().put_many_or_lock(n) {
            None => PutOrLock::Put,
            // SAFETY: the word returned the ticket of the lock it took.
            Some(ticket) => PutOrLock::Locked(unsafe { LockRefGuard::new(self, ticket) }),
        }
    }

    /// Takes the lock, waiting, and returns the guard that reaches the
    /// data and the count. A waiter spins a short while, then sleeps (with
    /// `std`) until an unlock wakes it; the lock goes to whoever finds it
    /// free, and an unlock hands it to a sleeper now and then (eventual
    /// fairness, as `parking_lot`).
    ///
    /// Ordering: `Acquire`; the guard's drop is `Release`.
    ///
    /// The lock is not reentrant: taking it (or calling `get`,
    /// `get_not_zero`, `get_not_dead` or `put_or_lock`, which may fall back
    /// to it) on an object whose guard the same thread holds spins forever.
    /// A panic while a guard is held unlocks on unwinding, without
    /// poisoning: the data is whatever the panicking code left.
    ///
    /// ```
    /// let r = lockref::LockRef::<Vec<u8>>::new(Vec::new());
    /// r.lock().push(1);
    /// assert_eq!(*r.lock(), [1]);
    /// ```
    #[inline]
    pub fn lock(&self) -> LockRefGuard<'_, T, W> {
        let ticket = self.raw().lock();
        // SAFETY: `lock` took the lock with `ticket`.
        unsafe { LockRefGuard::new(self, ticket) }
    }

    /// Takes the lock only if it is free now.
    ///
    /// Ordering: `Acquire` when it succeeds.
    ///
    /// ```
    /// let r = lockref::LockRef::new(());
    /// let guard = r.try_lock().unwrap();
    /// assert!(r.try_lock().is_none());
    /// drop(guard);
    /// assert!(r.try_lock().is_some());
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<LockRefGuard<'_, T, W>> {
        self.raw()
            .try_lock()
            // SAFETY: `try_lock` took the lock with `ticket`.
            .map(|ticket| unsafe { LockRefGuard::new(self, ticket) })
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
        self.cells
            .get_mut()
            .data
            .with_mut(|ptr| unsafe { &mut *ptr })
    }

    /// The data, consuming the lockref.
    ///
    /// ```
    /// assert_eq!(lockref::LockRef::<u32>::new(5).into_inner(), 5);
    /// ```
    #[inline]
    pub fn into_inner(self) -> T {
        self.cells.into_inner().data.into_inner()
    }
}

impl<T, W: RawLockRefExact> LockRef<T, W> {
    /// Drops a reference without ever taking the lock
    /// (`lockref_put_return`): returns the new count, or why it could not,
    /// in which case nothing changed and the caller decides under the lock
    /// (as `dput` does). At [`SATURATED`](crate::SATURATED) the count
    /// stays. Safe: a put at zero is refused before it writes.
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
    /// let r = LockRef::with_count((), 2).unwrap();
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
        self.raw().put_return()
    }

    /// [`LockRefGuard::revive`] without holding the lock: one
    /// compare-and-swap while the lock is free (else it takes the lock
    /// around it). `Release`: the new object's fields, written before,
    /// happen before any reference taken on it.
    ///
    /// # Errors
    ///
    /// As [`LockRefGuard::revive`].
    ///
    /// # Safety
    ///
    /// As [`LockRefGuard::revive`].
    ///
    /// ```
    /// use lockref::{CountError, LockRef};
    ///
    /// let slot = LockRef::with_count(0u64, 0).unwrap();
    /// slot.lock().mark_dead();
    /// // SAFETY: nothing else points at this slot.
    /// unsafe { slot.revive(1) }.unwrap();
    /// assert_eq!(slot.count(), Some(1));
    /// assert_eq!(unsafe { slot.revive(1) }, Err(CountError::NotDead));
    /// ```
    #[inline]
    pub unsafe fn revive(&self, count: u32) -> Result<(), CountError> {
        // SAFETY: the caller's guarantee.
        unsafe { self.raw().revive(count) }
    }
}

impl<T: Default, W: RawLockRef + Default> Default for LockRef<T, W> {
    /// `T::default()` on `W::default()` (one reference on this crate's
    /// words).
    fn default() -> Self {
        Self::with_raw(T::default(), W::default())
    }
}

impl<T: fmt::Debug, W: RawLockRef> fmt::Debug for LockRef<T, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("LockRef");
        d.field("count", &crate::raw::count::ShowCount(self.count()));
        match self.try_lock() {
            Some(guard) => d.field("data", &&*guard),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}
