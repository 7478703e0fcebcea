//! [`AddLockRef`]: the lockref on one `fetch_add` word, and its lockless
//! operations.

use core::fmt;

use super::add_count::{
    decode, reported, Count, BIAS, COUNT_MASK, LOCKED, SATURATED, SATURATED_STORED,
};
use super::AddLockRefGuard;
use crate::error::{CountError, PutError};
use crate::sync::{acquire_fence_after, spin_loop, AtomicU64, Ordering, UnsafeCell};

/// A lockref on one `fetch_add` word. See the [module docs](super) for the
/// layout and for what differs from [`LockRef`](crate::LockRef).
///
/// ```
/// use lockref::experimental::AddLockRef;
///
/// let r = AddLockRef::new(0u32); // count 1
/// r.get(); // one lock xadd
/// // SAFETY: we own the reference `get` took.
/// assert_eq!(unsafe { r.put_return() }, Ok(1));
/// *r.lock() += 1; // the lock guards the data
/// // SAFETY: we own the reference `new` made.
/// assert_eq!(unsafe { r.put_return() }, Ok(0));
/// assert!(r.lock().kill_if_zero());
/// assert!(!r.get_not_dead());
/// ```
pub struct AddLockRef<T> {
    pub(super) word: AtomicU64,
    pub(super) data: UnsafeCell<T>,
}

// SAFETY: as a Mutex: the data is reached only through the guard, under
// the lock.
unsafe impl<T: Send> Send for AddLockRef<T> {}
// SAFETY: as for `Send`: `&AddLockRef` hands out `&mut T` only to the one
// guard that holds the lock.
unsafe impl<T: Send> Sync for AddLockRef<T> {}

impl<T> AddLockRef<T> {
    /// A new lockref with a count of one, unlocked.
    pub fn new(data: T) -> Self {
        Self::with_count(data, 1).expect("one is a live count")
    }

    /// A new lockref with `count` references, unlocked.
    ///
    /// # Errors
    ///
    /// [`CountError::OutOfRange`] past [`SATURATED`].
    pub fn with_count(data: T, count: u32) -> Result<Self, CountError> {
        if count > SATURATED {
            return Err(CountError::OutOfRange);
        }
        // A saturated count starts pinned in the middle of its region.
        let stored = if count == SATURATED {
            SATURATED_STORED
        } else {
            BIAS + count
        };
        Ok(AddLockRef {
            word: AtomicU64::new(u64::from(stored)),
            data: UnsafeCell::new(data),
        })
    }

    /// The count now (a snapshot): `None` if dead; [`SATURATED`] if
    /// saturated; a transient below zero reads as zero.
    pub fn count(&self) -> Option<u32> {
        // Relaxed: a snapshot, ordered with nothing.
        reported(self.word.load(Ordering::Relaxed))
    }

    /// The raw word, for white-box tests and models: that every refused
    /// add was undone exactly.
    #[cfg(any(test, lockref_loom))]
    #[doc(hidden)]
    pub fn word_for_tests(&self) -> u64 {
        // Relaxed: a snapshot.
        self.word.load(Ordering::Relaxed)
    }

    /// Whether the object was killed.
    pub fn is_dead(&self) -> bool {
        self.count().is_none()
    }

    /// Takes a reference: one `fetch_add`. The caller holds one, so the
    /// object is alive.
    ///
    /// # Panics
    ///
    /// If the object is dead (a reference was taken without holding one).
    #[inline]
    pub fn get(&self) {
        // Relaxed: as `Arc::clone`, the caller's reference already orders
        // what it may see.
        let old = self.word.fetch_add(1, Ordering::Relaxed);
        if !matches!(decode(old), Count::Live(_)) {
            self.get_cold(old);
        }
    }

    #[cold]
    #[inline(never)]
    fn get_cold(&self, old: u64) {
        match decode(old) {
            Count::Dead => {
                // Relaxed: the undo of our own add, which nobody acted on.
                self.word.fetch_sub(1, Ordering::Relaxed);
                panic!("AddLockRef::get on a dead object");
            }
            // Below zero only after a broken `put_return` contract: the
            // add is still our reference.
            Count::Negative | Count::Live(_) => {}
            Count::Saturated => self.pin_saturated(),
        }
    }

    /// Pins a saturated count to the middle of its region (see the module
    /// docs). Leaves a dead count alone.
    #[cold]
    #[inline(never)]
    fn pin_saturated(&self) {
        // Relaxed: the saturated count takes part in no decision; the
        // operations that saw it are ordered by their own add.
        let _ = self
            .word
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                let pinned = (w & !COUNT_MASK) | u64::from(SATURATED_STORED);
                (decode(w) != Count::Dead && w != pinned).then_some(pinned)
            });
    }

    /// Takes a reference unless the object is dead (a lookup through a
    /// table): one `fetch_add`, undone on a dead object. Succeeds at zero
    /// (a revive) and while the lock is held.
    #[inline]
    pub fn get_not_dead(&self) -> bool {
        // Acquire: what the last holder published before its put is
        // visible to the reviver. AcqRel is not needed: the add publishes
        // nothing.
        let old = self.word.fetch_add(1, Ordering::Acquire);
        match decode(old) {
            // Below zero only after a put without a reference (a broken
            // `put_return` contract): the add is still a reference.
            Count::Live(_) | Count::Negative => true,
            other => self.undo_add(other),
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn undo_add(&self, was: Count) -> bool {
        if was == Count::Saturated {
            self.pin_saturated();
            return true;
        }
        // Relaxed: the undo of our own add on a dead count, which is final:
        // nobody decides anything on it.
        self.word.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Takes a reference if the count is above zero and not dead: a
    /// compare-and-swap loop (see the module docs for why not an add).
    pub fn get_not_zero(&self) -> bool {
        // Relaxed: the first guess; the CAS below decides.
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            match decode(old) {
                Count::Live(0) | Count::Negative | Count::Dead => return false,
                Count::Saturated => {
                    // Acquire: a reference taken without a write still
                    // sees what was published before the word it read.
                    acquire_fence_after!(self.word);
                    return true;
                }
                Count::Live(_) => {}
            }
            // Acquire on success, as `get_not_dead`.
            match self.word.compare_exchange_weak(
                old,
                old + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => {
                    old = now;
                    spin_loop();
                }
            }
        }
    }

    /// Drops a reference: one `fetch_sub`. Returns the new count (zero
    /// included: the caller then decides under the lock, re-checking with
    /// [`kill_if_zero`](AddLockRefGuard::kill_if_zero)); the lock does not
    /// stop it. A saturated count stays.
    ///
    /// # Errors
    ///
    /// [`PutError::NotPositive`] on a dead object (the transient decrement
    /// is undone; the count is unchanged).
    ///
    /// # Safety
    ///
    /// The caller owns a reference, which this gives up. Unlike
    /// [`LockRef::put_return`](crate::LockRef::put_return), a put without
    /// one cannot be refused cleanly: its decrement lands before it is
    /// checked, and while it is being undone a concurrent revive can make
    /// the word read zero with a reference out, which a concurrent
    /// [`kill_if_zero`](AddLockRefGuard::kill_if_zero) would take for a
    /// death. (Refused and undone anyway, and a debug assertion, if it
    /// happens.)
    #[inline]
    pub unsafe fn put_return(&self) -> Result<u32, PutError> {
        // Release: our writes before the put, for whoever sees the count
        // reach zero. The Acquire half comes from the fence below.
        let old = self.word.fetch_sub(1, Ordering::Release);
        match decode(old) {
            Count::Live(n) if n > 1 => Ok(n - 1),
            Count::Live(1) => {
                // Acquire: the one who reaches zero sees every holder's
                // writes (the `Arc` rule).
                acquire_fence_after!(self.word);
                Ok(0)
            }
            other => self.undo_put(other),
        }
    }

    #[cold]
    #[inline(never)]
    fn undo_put(&self, was: Count) -> Result<u32, PutError> {
        if was == Count::Saturated {
            self.pin_saturated();
            return Ok(SATURATED);
        }
        // Relaxed: the undo of our own decrement on a dead count (final)
        // or, after a broken contract, below zero.
        self.word.fetch_add(1, Ordering::Relaxed);
        debug_assert!(
            was == Count::Dead,
            "AddLockRef::put_return without a reference"
        );
        Err(PutError::NotPositive)
    }

    /// Drops a reference unless it is the last (count one or less, or
    /// dead): then takes the lock without changing the count and returns
    /// the guard, for the caller to decrement and decide under it
    /// (`lockref_put_or_lock`). `None`: the reference was dropped.
    ///
    /// A compare-and-swap loop, not an add: "not the last" must be decided
    /// before the decrement (the loom model
    /// `a_put_that_undoes_shows_a_false_zero` shows what a decrement that
    /// is undone at one does). It puts locklessly while the lock is held,
    /// since on this word adds land under the lock anyway. Safe without a
    /// reference: it never changes a count of one or less.
    ///
    /// ```
    /// use lockref::experimental::AddLockRef;
    ///
    /// let r = AddLockRef::with_count((), 2).unwrap();
    /// assert!(r.put_or_lock().is_none());
    /// let mut last = r.put_or_lock().expect("the last reference");
    /// assert_eq!(last.decrement(), Ok(0));
    /// assert!(last.kill_if_zero());
    /// ```
    #[inline]
    pub fn put_or_lock(&self) -> Option<AddLockRefGuard<'_, T>> {
        self.put_many_or_lock(1)
    }

    /// As [`put_or_lock`](Self::put_or_lock) for `n` references: dropped
    /// without the lock unless the count is `n` or less (or dead); a
    /// saturated count stays.
    pub fn put_many_or_lock(&self, n: u32) -> Option<AddLockRefGuard<'_, T>> {
        // Relaxed: the first guess; the CAS decides.
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            match decode(old) {
                Count::Live(c) if c > n => {}
                Count::Saturated => return None,
                Count::Live(_) | Count::Negative | Count::Dead => return Some(self.lock()),
            }
            // Release: our writes before the put, for whoever takes the
            // count to zero later (it acquires).
            match self.word.compare_exchange_weak(
                old,
                old - u64::from(n),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return None,
                Err(now) => {
                    old = now;
                    spin_loop();
                }
            }
        }
    }

    /// Takes the lock (a test-and-set spinlock; spins, then yields with
    /// `std`).
    pub fn lock(&self) -> AddLockRefGuard<'_, T> {
        #[cfg(all(any(feature = "std", test), not(lockref_loom)))]
        let mut spins: u32 = 0;
        loop {
            if let Some(guard) = self.try_lock() {
                return guard;
            }
            // Relaxed: only waits for the bit to clear; the fetch_or in
            // `try_lock` decides.
            while self.word.load(Ordering::Relaxed) & LOCKED != 0 {
                // Under loom this yields, so the model does not spin
                // forever.
                spin_loop();
                #[cfg(all(any(feature = "std", test), not(lockref_loom)))]
                {
                    if spins < 1024 {
                        spins += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
            }
        }
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<AddLockRefGuard<'_, T>> {
        // Acquire: pairs with the Release of the unlock; the data is ours
        // after it.
        (self.word.fetch_or(LOCKED, Ordering::Acquire) & LOCKED == 0)
            .then(|| AddLockRefGuard::new(self))
    }
}

impl<T: fmt::Debug> fmt::Debug for AddLockRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddLockRef")
            .field("count", &self.count())
            .finish_non_exhaustive()
    }
}
