//! Research, not covered by semver yet: [`AddLockRef`], a lockref whose
//! `get`, `get_not_dead` and `put_return` are one `fetch_add`/`fetch_sub`
//! of the word, checked afterwards, instead of a load and a
//! compare-and-swap that can fail; with the kernel's observable semantics
//! where a single add can keep them, and the list of where it cannot.
//!
//! # The word
//!
//! One `AtomicU64`. The low 32 bits hold the count *biased*: count `c` is
//! stored as `BIAS + c`, so that a decrement at zero borrows inside the low
//! half instead of out of it. Bit 32 is the lock (a test-and-set spinlock,
//! not FIFO). The low half is split into regions:
//!
//! | stored (low 32 bits) | meaning |
//! |---|---|
//! | `0 .. BIAS` | below zero: only transiently, while a refused put is undone |
//! | `BIAS .. BIAS + SATURATED` | a live count, `0 .. SATURATED` |
//! | `BIAS + SATURATED .. DEAD_STORED` | saturated: never changes again; whoever sees it pins the count to the region's middle |
//! | `DEAD_STORED ..` | dead (adds that land there are undone) |
//!
//! Every region has at least 2^29 values of headroom on each side. An add
//! on a dead count is undone by the thread that made it before it does
//! anything else with the word; an operation that finds the count
//! saturated pins it back to the middle of the saturated region (a
//! compare-and-swap of the count half), as `refcount_t` stores
//! `REFCOUNT_SATURATED`: whatever transients or counted puts landed near
//! the boundary meanwhile are erased, and a saturated count never comes
//! back into the live range, where puts of references taken uncounted
//! could reach zero. A carry out of the low half (into the lock) would need
//! 2^29 threads caught mid-operation at once: impossible with real
//! threads.
//!
//! # What changes against [`LockRef`](crate::LockRef)
//!
//! Adds land *while the lock is held*: the lock serializes holders and
//! guards the data, but no longer freezes the count. So:
//!
//! | operation | [`LockRef`](crate::LockRef) (compare-and-swap) | [`AddLockRef`] |
//! |---|---|---|
//! | `get` | CAS loop, falls back to the lock | one `lock xadd`; never fails |
//! | `get_not_dead` | CAS loop; fails on dead | one `lock xadd`; on dead, undone and fails. A revive from zero succeeds, locked or not |
//! | `get_not_zero` | CAS loop | CAS loop (not an add: a refused add at zero would be a transient count of one that makes a concurrent [`kill_if_zero`](AddLockRefGuard::kill_if_zero) miss a death) |
//! | `put_return` | CAS loop; refuses while locked; safe (refuses at zero) | one `lock xadd`; reports the new count, zero included, locked or not; `unsafe`: the caller must own a reference, because a put at zero lands before it is checked |
//! | `put_or_lock`, `put_many_or_lock` | CAS loop; lockless unless last | CAS loop, not an add: "not the last" must be decided before the decrement, and decrementing first shows a zero that did not happen (the counterexample: the loom model `a_put_that_undoes_shows_a_false_zero`); lockless while locked too |
//! | guard `count` | frozen while held | a snapshot, at least the references the holder knows of, read by a read-modify-write that changes nothing so that it is ordered with the gets and puts landing under the lock |
//! | guard `increment`/`decrement`/`decrement_by` | plain, under the lock | an atomic add (`AcqRel`: a lookup may take a reference on the count it raises before the unlock, so it publishes what the holder wrote, as the unlock does on the CAS word), and a CAS loop (refuses at zero without a transient); other adds land meanwhile |
//! | guard `set_count` | absolute | **not offered** (would erase concurrent adds) |
//! | guard `mark_dead` | unconditional | [`kill_if_zero`](AddLockRefGuard::kill_if_zero): a CAS from zero to dead, which fails if a lookup revived the object meanwhile |
//!
//! The decisions that stay exact: "zero, so kill" is exact because it is
//! one CAS from the zero value to the dead value (a lookup's add either
//! lands first, and the kill fails, or lands on dead, and the lookup
//! fails); "dead" is final. A holder cannot conclude "only my references
//! remain" from a count read under the lock, which the kernel's users of
//! lockref do not do without the re-check that `kill_if_zero` is.
//!
//! A put that reaches zero without the lock is only safe for objects whose
//! memory outlives a racing revive-and-put (an RCU or epoch grace period),
//! the same condition as the kernel's `fast_dput` and
//! [`RefCounted::grace`](crate::RefCounted::grace).
//!
//! # Behind `CountedRef`
//!
//! `AddLockRef` is a [`LockRefWord`](crate::LockRefWord), so a
//! [`RefCounted`](crate::RefCounted) object can embed it (`type Word =
//! AddLockRef<Data>`) and be counted by [`CountedRef`](crate::CountedRef):
//! clone is one `lock xadd`; a drop is `put_or_lock` (a CAS loop) or, for
//! types with a grace section, one `lock xadd` (`put_return`); the last
//! put's kill is [`kill_if_zero`](AddLockRefGuard::kill_if_zero), so a
//! lookup that revives the object while its last put holds the lock makes
//! the kill fail, and the reviver's own last put decides again.
//!
//! This type is experimental: measured and modelled (`loom-tests/tests/
//! add_word.rs`, and every `CountedRef` model in `loom-tests/tests/
//! counted.rs` runs on it too); [`LockRef`](crate::LockRef) stays the
//! default.

use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use crate::error::{CountError, PutError};
use crate::sync::{fence, spin_loop, AtomicU64, MutPtr, Ordering, UnsafeCell};

/// The count's bias in the low half.
const BIAS: u32 = 1 << 30;
/// The lowest saturated count.
pub const SATURATED: u32 = 1 << 29;
/// The stored value of a dead count.
const DEAD_STORED: u32 = 0xC000_0000;
/// Where a saturated count is pinned: the middle of the saturated region,
/// 2^29 and more from either end, so no transient ever leaves it.
const SATURATED_STORED: u32 = 0x9000_0000;
/// The lock bit.
const LOCKED: u64 = 1 << 32;
/// The count's half.
const COUNT_MASK: u64 = 0xFFFF_FFFF;

/// The count a word holds, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    /// Below zero: a refused put, being undone.
    Negative,
    /// A live count.
    Live(u32),
    /// Saturated.
    Saturated,
    /// Dead.
    Dead,
}

#[inline(always)]
fn decode(word: u64) -> Count {
    let stored = (word & COUNT_MASK) as u32;
    if stored < BIAS {
        Count::Negative
    } else if stored < BIAS + SATURATED {
        Count::Live(stored - BIAS)
    } else if stored < DEAD_STORED {
        Count::Saturated
    } else {
        Count::Dead
    }
}

/// The count a word reports: `None` if dead, [`SATURATED`] if saturated,
/// a transient below zero as zero.
fn reported(word: u64) -> Option<u32> {
    match decode(word) {
        Count::Negative => Some(0),
        Count::Live(n) => Some(n),
        Count::Saturated => Some(SATURATED),
        Count::Dead => None,
    }
}

/// A lockref on one `fetch_add` word. See the [module docs](self) for the
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
    word: AtomicU64,
    data: UnsafeCell<T>,
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
    fn undo_add(&self, was: Count) -> bool {
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
                    fence(Ordering::Acquire);
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
                fence(Ordering::Acquire);
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
        (self.word.fetch_or(LOCKED, Ordering::Acquire) & LOCKED == 0).then(|| AddLockRefGuard {
            lockref: self,
            data: self.data.get_mut(),
            _not_send: PhantomData,
        })
    }
}

impl<T: fmt::Debug> fmt::Debug for AddLockRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddLockRef")
            .field("count", &self.count())
            .finish_non_exhaustive()
    }
}

/// The held lock of an [`AddLockRef`]: the data, and the count as it is
/// now (other threads' adds still land).
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct AddLockRefGuard<'a, T> {
    lockref: &'a AddLockRef<T>,
    /// The access to the data, tracked by loom under `cfg(lockref_loom)`.
    data: MutPtr<T>,
    /// Unlocking from another thread is fine for a spinlock, but the data
    /// may be `!Send`: the guard stays on its thread, as a `MutexGuard`.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: shared access to the guard only reads the data (`Deref`).
unsafe impl<T: Sync> Sync for AddLockRefGuard<'_, T> {}

impl<T> AddLockRefGuard<'_, T> {
    /// The count now: at least the references this holder knows of; other
    /// threads' gets and puts land while the lock is held. `None` if dead.
    ///
    /// Read with a read-modify-write that changes nothing (`AcqRel`), so
    /// that it takes its place among the gets and puts in the word's
    /// modification order: a put that lands after it sees what this holder
    /// wrote before reading it (a flag cleared: the put's `Acquire` at zero
    /// pairs with it), and a put it reads is seen with its writes. A plain
    /// load would let both miss each other: the holder reads the count from
    /// before the put while the put reads the flag from before the clear
    /// (the loom model
    /// `shrink_races_revive_and_lockless_put_of_a_referenced_dentry`).
    pub fn count(&self) -> Option<u32> {
        // AcqRel: see above. The slow path: the lock is held anyway.
        reported(self.lockref.word.fetch_add(0, Ordering::AcqRel))
    }

    /// Kills the object if its count is zero *at this instant*: one CAS
    /// from zero to dead, which fails if a lookup revived it (then the
    /// reviver owns a reference and the object stays). Returns whether it
    /// killed.
    pub fn kill_if_zero(&mut self) -> bool {
        let zero = LOCKED | u64::from(BIAS);
        // Relaxed: under the lock, whose release publishes the death; a
        // lookup's add that lands after it sees a dead count and undoes.
        self.lockref
            .word
            .compare_exchange(
                zero,
                LOCKED | u64::from(DEAD_STORED),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Takes a reference under the lock (an atomic add: others land too),
    /// from zero too.
    ///
    /// `AcqRel`: since adds land under this lock, a lookup can take a
    /// reference on the count this raises before the unlock; the `Release`
    /// here publishes what the holder wrote before it to that lookup (the
    /// compare-and-swap word publishes with the unlock, as no lockless
    /// operation succeeds while its lock is held).
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`] on a dead object (nothing changed).
    pub fn increment(&mut self) -> Result<(), CountError> {
        let old = self.lockref.word.fetch_add(1, Ordering::AcqRel);
        match decode(old) {
            Count::Live(_) | Count::Negative => Ok(()),
            was => {
                if self.lockref.undo_add(was) {
                    Ok(())
                } else {
                    Err(CountError::Dead)
                }
            }
        }
    }

    /// Drops a reference under the lock; returns the count left. A
    /// compare-and-swap loop (this is the slow path), so that a decrement
    /// at zero is refused without ever showing a count below it.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] at zero, [`CountError::Dead`] on a dead
    /// object (nothing changed).
    pub fn decrement(&mut self) -> Result<u32, CountError> {
        self.decrement_by(1)
    }

    /// Drops `n` references under the lock; returns the count left. A
    /// compare-and-swap loop, as [`decrement`](Self::decrement). A
    /// saturated count stays.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if fewer than `n` are counted,
    /// [`CountError::Dead`] on a dead object (nothing changed).
    pub fn decrement_by(&mut self, n: u32) -> Result<u32, CountError> {
        let word = &self.lockref.word;
        // Relaxed: the first guess; the CAS decides.
        let mut old = word.load(Ordering::Relaxed);
        loop {
            let left = match decode(old) {
                Count::Dead => return Err(CountError::Dead),
                Count::Saturated => return Ok(SATURATED),
                Count::Live(c) if c >= n => c - n,
                Count::Live(_) | Count::Negative => return Err(CountError::Underflow),
            };
            // Release: as `put_return`.
            match word.compare_exchange_weak(
                old,
                old - u64::from(n),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if left == 0 {
                        // Acquire: as `put_return` reaching zero.
                        fence(Ordering::Acquire);
                    }
                    return Ok(left);
                }
                Err(now) => old = now,
            }
        }
    }
}

impl<T> Deref for AddLockRefGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock: no other guard reaches the
        // data, and the shared reference is made from the raw pointer.
        self.data.with(|p| unsafe { &*p })
    }
}

impl<T> DerefMut for AddLockRefGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock and `&mut self` is unique.
        self.data.with(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for AddLockRefGuard<'_, T> {
    fn drop(&mut self) {
        // Release: the data written under the lock, and a death, for the
        // next holder and for lookups.
        self.lockref.word.fetch_and(!LOCKED, Ordering::Release);
    }
}
