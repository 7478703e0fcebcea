//! The word with lockless paths: count and lock in one `AtomicU64` (the
//! layout is the crate docs' table), and the one compare-and-swap loop.
//!
//! # Invariants
//!
//! A lockless update is one compare-and-swap of the whole word from a value
//! whose lock half reads unlocked, so it never happens while the lock is
//! held: the count is "atomic with respect to the spinlock". While the lock
//! is held only the holder changes the count.

use super::lock::{self, LockWord};
use super::Attempt;
use crate::error::PutError;
use crate::raw::count::{DEAD, SATURATED_I32 as SATURATED};
use crate::raw::policy::Policy;
use crate::stats::{Event, Stats};
use crate::sync::{AtomicU64, Ordering};

lock::lock_word!(AtomicU64, u64);

/// The count half of a word.
#[inline(always)]
const fn count_of(word: u64) -> i32 {
    word as u32 as i32
}

/// The count and the lock in one word.
pub(crate) struct Word(AtomicU64);

impl Word {
    crate::sync::const_fn! {
        /// Unlocked with `count`.
        #[inline]
        pub(crate) fn new(count: i32) -> Self {
            let lock = (lock::UNLOCKED as u64) << 32;
            Word(AtomicU64::new(lock | count as u32 as u64))
        }
    }

    /// The atomic that holds the lock half.
    #[inline(always)]
    pub(crate) fn lock_word(&self) -> &AtomicU64 {
        &self.0
    }

    /// A snapshot of the count.
    #[inline]
    pub(crate) fn count(&self) -> i32 {
        // Relaxed: a snapshot, documented as racy.
        count_of(self.0.load(Ordering::Relaxed))
    }

    /// The count; lock held.
    #[inline]
    pub(crate) fn count_locked(&self) -> i32 {
        // Relaxed: with the lock held only we change the count.
        count_of(self.0.load(Ordering::Relaxed))
    }

    /// Changes the count from `old` (its value now) to `new`; lock held.
    #[inline]
    pub(crate) fn set_count_locked(&self, old: i32, new: i32) {
        // Add the exact difference of the count halves: the result's count
        // half is `new` and any carry or borrow cancels in the lock half
        // modulo 2^64, while waiters may set the lock half's sleeper flag. Relaxed: the releasing unlock publishes it.
        let delta = u64::from(new as u32).wrapping_sub(u64::from(old as u32));
        self.0.fetch_add(delta, Ordering::Relaxed);
    }

    /// Marks a word at count zero dead while its lock is free, in one
    /// compare-and-swap: `Ok(true)` killed, `Ok(false)` the count is not
    /// zero (a reference, dead, saturated), `Err` the lock is held or the
    /// budget spent. Acquire on success: every holder's releasing put
    /// happens before the teardown that follows the kill.
    #[inline]
    pub(crate) fn kill_if_zero<P: Policy>(&self, stats: &Stats) -> Result<bool, PutError> {
        // The count half is zero: the dead count is or-ed in.
        self.swap_while_free::<P>(stats, Ordering::Acquire, |old| {
            (count_of(old) == 0).then(|| old | u64::from(DEAD as u32))
        })
    }

    /// Marks a word whose count is exactly `n` dead while its lock is
    /// free, in one compare-and-swap (the last `n` references dropped and
    /// the kill at once): `Ok(true)` killed, `Ok(false)` the count is not
    /// `n` (nothing changed), `Err` the lock is held or the budget spent.
    /// AcqRel on success: Release as a put (the caller's writes happen
    /// before the teardown, whoever runs it), Acquire as a kill (every
    /// other holder's releasing put happens before the teardown).
    #[inline]
    pub(crate) fn put_and_kill<P: Policy>(&self, stats: &Stats, n: i32) -> Result<bool, PutError> {
        self.swap_while_free::<P>(stats, Ordering::AcqRel, |old| {
            (count_of(old) == n).then(|| (old & !u64::from(u32::MAX)) | u64::from(DEAD as u32))
        })
    }

    /// Sets a dead word's count to `count` while its lock is free, in one
    /// compare-and-swap: `Ok(true)` revived, `Ok(false)` not dead, `Err`
    /// the lock is held (or the budget spent). Release on success: the
    /// reused memory's writes happen before any reference taken on the
    /// revived word (Acquire).
    #[inline]
    pub(crate) fn revive<P: Policy>(&self, stats: &Stats, count: i32) -> Result<bool, PutError> {
        self.swap_while_free::<P>(stats, Ordering::Release, |old| {
            (count_of(old) < 0).then(|| (old & !u64::from(u32::MAX)) | u64::from(count as u32))
        })
    }

    /// The compare-and-swap loop of a change that applies only while the
    /// lock half reads free, within the policy's attempt budget:
    /// `change(old)` is the new word, or `None` to stop with nothing
    /// written. `Ok(true)` swapped (with `success`), `Ok(false)` stopped,
    /// `Err` the lock was held or the budget spent.
    #[inline(always)]
    fn swap_while_free<P: Policy>(
        &self,
        stats: &Stats,
        success: Ordering,
        change: impl Fn(u64) -> Option<u64>,
    ) -> Result<bool, PutError> {
        let mut policy = P::default();
        let mut attempts: u32 = 0;
        // Relaxed: a guess; the compare-and-swap checks it.
        let mut old = self.0.load(Ordering::Relaxed);
        loop {
            if attempts >= P::MAX_ATTEMPTS {
                return Err(PutError::Contended);
            }
            if !lock::is_free(AtomicU64::lock_half(old)) {
                if !policy.lock_held() {
                    return Err(PutError::Locked);
                }
                attempts += 1;
                // Relaxed: as above.
                old = self.0.load(Ordering::Relaxed);
                continue;
            }
            let Some(new) = change(old) else {
                return Ok(false);
            };
            // Failure is Relaxed: the value read is only the next guess.
            match self
                .0
                .compare_exchange_weak(old, new, success, Ordering::Relaxed)
            {
                Ok(_) => return Ok(true),
                Err(actual) => {
                    stats.record(Event::CasFailed);
                    old = actual;
                    attempts += 1;
                    policy.cas_failed();
                }
            }
        }
    }

    /// The one compare-and-swap loop (the kernel's `CMPXCHG_LOOP`): while
    /// the lock half reads free and the count is in `min .. SATURATED`,
    /// swaps the word for itself plus `delta` (the count half cannot
    /// overflow or borrow in that range, so the new word is one add),
    /// within the policy's attempt budget.
    #[inline(always)]
    pub(crate) fn attempt<P: Policy>(
        &self,
        stats: &Stats,
        success: Ordering,
        delta: i32,
        min: i32,
    ) -> Attempt {
        let mut policy = P::default();
        let mut attempts: u32 = 0;
        // Relaxed: only a guess to compute from; the compare-and-swap checks
        // it, and `success` orders what a successful one needs.
        let mut old = self.0.load(Ordering::Relaxed);
        loop {
            if attempts >= P::MAX_ATTEMPTS {
                return Attempt::GaveUp(PutError::Contended);
            }
            if !lock::is_free(AtomicU64::lock_half(old)) {
                if !policy.lock_held() {
                    return Attempt::GaveUp(PutError::Locked);
                }
                attempts += 1;
                // Relaxed: as above.
                old = self.0.load(Ordering::Relaxed);
                continue;
            }
            let count = count_of(old);
            // `min <= count < SATURATED` as one unsigned compare.
            if (count.wrapping_sub(min) as u32) >= (SATURATED - min) as u32 {
                return Attempt::CountOutOfRange(count);
            }
            // Failure is Relaxed: the value read is only the next guess.
            match self.0.compare_exchange_weak(
                old,
                old.wrapping_add(i64::from(delta) as u64),
                success,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Attempt::Swapped(count + delta),
                Err(actual) => {
                    stats.record(Event::CasFailed);
                    old = actual;
                    attempts += 1;
                    policy.cas_failed();
                }
            }
        }
    }
}
