//! [`AddWord`]: the lockref on one `fetch_add` word, as a
//! [`RawLockRef`]: its lockless operations, its test-and-set lock, and
//! the count changes made under the lock (where other threads' adds still
//! land).

use core::fmt;

use super::add_count::{decode, reported, Count, BIAS, COUNT_MASK, DEAD_STORED, SATURATED_STORED};
use crate::error::{CountError, PutError};
use crate::park::DefaultPark;
use crate::raw::count::SATURATED;
use crate::raw::lock;
use crate::raw::raw_lockref::RawLockRef;
use crate::sync::{acquire_fence_after, spin_loop, AtomicU64, Ordering};

/// The `fetch_add` word (research, feature `unstable-add-word`): `get`,
/// `get_not_dead` and `put_owned` are one `fetch_add`/`fetch_sub` of the
/// word, checked afterwards. See the [module docs](super) for the layout
/// and the table of what differs from [`CasWord`](crate::CasWord): the
/// count is not frozen under the lock, so there is no
/// [`RawLockRefExact`](crate::RawLockRefExact) (no safe `put_return`, no
/// `set_count`, no `mark_dead`: the kill is
/// [`kill_if_zero`](crate::LockRefGuard::kill_if_zero)).
///
/// ```
/// use lockref::{experimental::AddWord, LockRef};
///
/// let r = LockRef::with_raw(0u32, AddWord::new()); // count 1
/// r.get(); // one lock xadd
/// // SAFETY: we own the reference `get` took.
/// assert_eq!(unsafe { r.put_owned() }, Ok(1));
/// *r.lock() += 1; // the lock guards the data
/// // SAFETY: we own the reference `new` made.
/// assert_eq!(unsafe { r.put_owned() }, Ok(0));
/// assert!(r.lock().kill_if_zero());
/// assert!(!r.get_not_dead());
/// ```
pub struct AddWord {
    word: AtomicU64,
}

impl AddWord {
    /// A new word with a count of one, unlocked.
    pub fn new() -> Self {
        Self::with_count(1).expect("one is a live count")
    }

    /// A new word with `count` references, unlocked.
    ///
    /// # Errors
    ///
    /// [`CountError::OutOfRange`] past [`SATURATED`].
    pub fn with_count(count: u32) -> Result<Self, CountError> {
        if count > SATURATED {
            return Err(CountError::OutOfRange);
        }
        // A saturated count starts pinned in the middle of its region.
        let stored = if count == SATURATED {
            SATURATED_STORED
        } else {
            BIAS + count
        };
        Ok(AddWord {
            word: AtomicU64::new(u64::from(stored)),
        })
    }

    /// The raw word, for white-box tests and models (`--cfg
    /// lockref_white_box`): that every refused add was undone exactly.
    #[cfg(any(test, lockref_white_box))]
    #[doc(hidden)]
    pub fn word_for_tests(&self) -> u64 {
        // Relaxed: a snapshot.
        self.word.load(Ordering::Relaxed)
    }

    #[cold]
    #[inline(never)]
    fn get_cold(&self, old: u64) {
        match decode(old) {
            Count::Dead => {
                // Relaxed: the undo of our own add, which nobody acted on.
                self.word.fetch_sub(1, Ordering::Relaxed);
                panic!("lockref: get on a dead object (use get_not_dead where death is possible)");
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

    /// `put_owned` past its common case: the last reference (zero, and
    /// the `Acquire` that lets the caller decide), or a count to undo or
    /// pin.
    #[cold]
    #[inline(never)]
    fn put_owned_cold(&self, old: u64) -> Result<u32, PutError> {
        match decode(old) {
            Count::Live(1) => {
                // Acquire: the one who reaches zero sees every holder's
                // writes (the `Arc` rule).
                acquire_fence_after!(self.word);
                Ok(0)
            }
            // Unreachable from `put_owned`'s fast path, kept exact.
            Count::Live(n) if n > 1 => Ok(n - 1),
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
        debug_assert!(was == Count::Dead, "lockref: put_owned without a reference");
        Err(PutError::NotPositive)
    }
}

impl Default for AddWord {
    /// [`AddWord::new`]: one reference.
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the promises of `RawLockRef`, as the module docs argue them:
// the lock bit is the compare-and-swap word's lock half (`raw/lock.rs`:
// `Acquire` on the `fetch_or` that takes it, `Release` on the write that
// clears it, and its sleeper flag, which no count change touches); a dead count is
// stored mid-region, every add on it is undone, and `get_not_zero` and the
// puts refuse it; a saturated count is pinned mid-region and never
// reported below `SATURATED`; the puts that can run at zero
// (`put_many_or_lock`, `decrement_by_locked`) are compare-and-swap loops
// that refuse there, and `put_owned` requires an owned reference; the kill
// is one compare-and-swap from zero to dead; the orderings are commented
// at each operation, and no put touches the word after its releasing
// read-modify-write except in the module docs' four cases.
unsafe impl RawLockRef for AddWord {
    type Ticket = ();
    /// `put_owned` is one `lock xadd`; `put_many_or_lock` a loop.
    const GRACE_FOR_THE_LAST_PUT_ONLY: bool = false;

    fn with_count(count: u32) -> Result<Self, CountError> {
        AddWord::with_count(count)
    }

    /// The count now (a snapshot): `None` if dead; [`SATURATED`] if
    /// saturated; a transient below zero reads as zero.
    fn count(&self) -> Option<u32> {
        // Relaxed: a snapshot, ordered with nothing.
        reported(self.word.load(Ordering::Relaxed))
    }

    /// Takes a reference: one `fetch_add`. The caller holds one, so the
    /// object is alive.
    ///
    /// # Panics
    ///
    /// If the object is dead (a reference was taken without holding one).
    #[inline]
    fn get(&self) {
        // Relaxed: as `Arc::clone`, the caller's reference already orders
        // what it may see.
        let old = self.word.fetch_add(1, Ordering::Relaxed);
        if !matches!(decode(old), Count::Live(_)) {
            self.get_cold(old);
        }
    }

    /// Takes a reference unless the object is dead (a lookup through a
    /// table): one `fetch_add`, undone on a dead object. Succeeds at zero
    /// (a revive) and while the lock is held.
    #[inline]
    fn get_not_dead(&self) -> bool {
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

    /// Takes a reference if the count is above zero and not dead: a
    /// compare-and-swap loop (see the module docs for why not an add).
    fn get_not_zero(&self) -> bool {
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
    /// `kill_if_zero`); the lock does not
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
    /// the compare-and-swap word's `put_return`, a put without
    /// one cannot be refused cleanly: its decrement lands before it is
    /// checked, and while it is being undone a concurrent revive can make
    /// the word read zero with a reference out, which a concurrent
    /// `kill_if_zero` would take for a
    /// death. (Refused and undone anyway, and a debug assertion, if it
    /// happens.)
    #[inline]
    unsafe fn put_owned(&self) -> Result<u32, PutError> {
        // Release: our writes before the put, for whoever sees the count
        // reach zero. The Acquire half comes from the fence below.
        let old = self.word.fetch_sub(1, Ordering::Release);
        // The common case in one compare: a live count of two or more
        // (stored `BIAS + 2 .. BIAS + SATURATED`), which leaves one or more.
        let stored = (old & COUNT_MASK) as u32;
        if stored.wrapping_sub(BIAS + 2) < SATURATED - 2 {
            return Ok(stored - BIAS - 1);
        }
        self.put_owned_cold(old)
    }

    /// Drops `n` references: dropped
    /// without the lock unless the count is `n` or less (or dead), then
    /// takes the lock and changes nothing; a saturated count stays.
    ///
    /// A compare-and-swap loop, not an add: "not the last" must be decided
    /// before the decrement (the loom model
    /// `a_put_that_undoes_shows_a_false_zero` shows what a decrement that
    /// is undone at one does). It puts locklessly while the lock is held,
    /// since on this word adds land under the lock anyway.
    fn put_many_or_lock(&self, n: u32) -> Option<()> {
        // Relaxed: the first guess; the CAS decides.
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            match decode(old) {
                Count::Live(c) if c > n => {}
                Count::Saturated => return None,
                Count::Live(_) | Count::Negative | Count::Dead => {
                    self.lock();
                    return Some(());
                }
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

    /// Takes the lock: the lock half of the compare-and-swap word's (the
    /// same bits: a test-and-set lock whose waiters spin a while, then
    /// sleep in the [`DefaultPark`]).
    fn lock(&self) {
        lock::lock::<_, DefaultPark>(&self.word);
    }

    fn try_lock(&self) -> Option<()> {
        lock::try_lock(&self.word).then_some(())
    }

    unsafe fn unlock(&self, (): ()) {
        // A compare-and-swap loop: counts land meanwhile, and it retries.
        lock::unlock::<_, DefaultPark>(&self.word);
    }

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
    unsafe fn count_locked(&self) -> Option<u32> {
        // AcqRel: see above. The slow path: the lock is held anyway.
        reported(self.word.fetch_add(0, Ordering::AcqRel))
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
    unsafe fn increment_locked(&self) -> Result<u32, CountError> {
        let old = self.word.fetch_add(1, Ordering::AcqRel);
        match decode(old) {
            Count::Live(n) => Ok(n + 1),
            // Below zero only after a broken `put_owned` contract.
            Count::Negative => Ok(0),
            was => {
                if self.undo_add(was) {
                    Ok(SATURATED)
                } else {
                    Err(CountError::Dead)
                }
            }
        }
    }

    /// Drops `n` references under the lock; returns the count left. A
    /// compare-and-swap loop (this is the slow path), so that a decrement
    /// at zero is refused without ever showing a count below it. A
    /// saturated count stays.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if fewer than `n` are counted,
    /// [`CountError::Dead`] on a dead object (nothing changed).
    unsafe fn decrement_by_locked(&self, n: u32) -> Result<u32, CountError> {
        let word = &self.word;
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
                        acquire_fence_after!(word);
                    }
                    return Ok(left);
                }
                Err(now) => old = now,
            }
        }
    }

    /// Kills the object if its count is zero *at this instant*: one CAS
    /// from zero to dead, which fails if a lookup revived it (then the
    /// reviver owns a reference and the object stays). Returns whether it
    /// killed.
    unsafe fn kill_if_zero_locked(&self) -> bool {
        // Relaxed, all: under the lock, whose release publishes the death;
        // a lookup's add that lands after it sees a dead count and undoes.
        // The lock half is kept as it is (a waiter may flag itself asleep
        // meanwhile: the swap then looks again).
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            if old & COUNT_MASK != u64::from(BIAS) {
                return false;
            }
            let dead = (old & !COUNT_MASK) | u64::from(DEAD_STORED);
            match self
                .word
                .compare_exchange_weak(old, dead, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => old = now,
            }
        }
    }
}

impl fmt::Debug for AddWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddWord")
            .field(
                "count",
                &crate::raw::count::ShowCount(RawLockRef::count(self)),
            )
            .finish_non_exhaustive()
    }
}
