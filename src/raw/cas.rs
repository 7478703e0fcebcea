//! The lockref word with lockless compare-and-swap paths.
//!
//! # The word
//!
//! | bits   | field | meaning |
//! |--------|-------|---------|
//! | 0..32  | count | `i32`: see [`crate::count`] (live, zero, dead, saturated) |
//! | 32..48 | owner | ticket lock: the ticket being served |
//! | 48..64 | next  | ticket lock: the next ticket to draw |
//!
//! | state    | lock half       | count |
//! |----------|-----------------|-------|
//! | unlocked | `owner == next` | any   |
//! | locked   | `owner != next` | any; only the holder changes it |
//! | dead     | any             | `< 0` (set under the lock) |
//! | saturated| any             | `i32::MAX`, never changes again |
//!
//! The kernel puts the lock in the low half; here the count is low so that
//! drawing a ticket is one `fetch_add` whose carry out of `next` falls off
//! the top of the word (see [`super::ticket`]).
//!
//! # Invariants
//!
//! A lockless update is one compare-and-swap of the whole word from a value
//! whose lock half reads unlocked, so it never happens while the lock is
//! held: the count is "atomic with respect to the spinlock". While the lock
//! is held only the holder changes the count.

use super::ticket::{self, LockWord};
use super::{get_at_least_locked, get_locked, get_on_dead, put_or_lock_locked, Locked};
use crate::count::SATURATED;
use crate::error::PutError;
use crate::policy::Policy;
use crate::stats::{Event, Stats};
use crate::sync::{fence, AtomicU64, Ordering};

/// Where the lock half starts.
const LOCK_SHIFT: u32 = 32;

/// The count half of a word.
#[inline(always)]
const fn count_of(word: u64) -> i32 {
    word as u32 as i32
}

/// `word` with its count half replaced.
#[inline(always)]
const fn with_count(word: u64, count: i32) -> u64 {
    (word & !0xffff_ffff) | (count as u32 as u64)
}

impl LockWord for AtomicU64 {
    type Int = u64;

    #[inline(always)]
    fn load(&self, order: Ordering) -> u64 {
        AtomicU64::load(self, order)
    }

    #[inline(always)]
    fn fetch_add(&self, add: u64, order: Ordering) -> u64 {
        AtomicU64::fetch_add(self, add, order)
    }

    #[inline(always)]
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        AtomicU64::compare_exchange(self, current, new, success, failure)
    }

    #[inline(always)]
    fn lock_half(word: u64) -> u32 {
        (word >> LOCK_SHIFT) as u32
    }

    #[inline(always)]
    fn lock_bits(lock: u32) -> u64 {
        u64::from(lock) << LOCK_SHIFT
    }

    #[inline(always)]
    fn wrapping_add(a: u64, b: u64) -> u64 {
        a.wrapping_add(b)
    }
}

/// How the lockless loop ended.
enum Outcome {
    /// The count was swapped to this value.
    Done(i32),
    /// The lock half read free but the count was outside the range where
    /// the update applies (saturated, zero, dead): nothing was written;
    /// the caller decides from the count, off the fast path.
    Outside(i32),
    /// The lockless path gave up; why, for `put_return`.
    Fallback(PutError),
}

/// A lockref without its data. See the module docs for the word.
pub(crate) struct RawLockRef {
    word: AtomicU64,
    stats: Stats,
}

impl RawLockRef {
    /// Unlocked, with `count`.
    #[inline]
    pub(crate) fn new(count: i32) -> Self {
        Self::at_ticket(count, 0)
    }

    /// Unlocked with `count`, the next ticket to draw being `ticket`: lets
    /// tests cross the ticket wrap without 65 536 lock cycles.
    #[inline]
    pub(crate) fn at_ticket(count: i32, ticket: u16) -> Self {
        let lock = u32::from(ticket) << 16 | u32::from(ticket);
        Self {
            word: AtomicU64::new(with_count(AtomicU64::lock_bits(lock), count)),
            stats: Stats::new(),
        }
    }

    /// The one compare-and-swap loop: while the lock half reads free and
    /// the count is in `min .. SATURATED`, swaps the word for itself plus
    /// `delta` (the count half cannot overflow or borrow in that range, so
    /// the new word is one add), within the policy's attempt budget.
    #[inline(always)]
    fn update<P: Policy>(&self, success: Ordering, delta: i32, min: i32) -> Outcome {
        self.stats.record(Event::Op);
        let mut policy = P::default();
        let mut attempts: u32 = 0;
        // Relaxed: only a guess to compute from; the compare-and-swap checks
        // it, and `success` orders what a successful one needs.
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            if attempts >= P::MAX_ATTEMPTS {
                self.stats.record(Event::Fallback);
                return Outcome::Fallback(PutError::Contended);
            }
            if !ticket::is_free(AtomicU64::lock_half(old)) {
                if !policy.lock_held() {
                    self.stats.record(Event::Fallback);
                    return Outcome::Fallback(PutError::Locked);
                }
                attempts += 1;
                // Relaxed: as above.
                old = self.word.load(Ordering::Relaxed);
                continue;
            }
            let count = count_of(old);
            // `min <= count < SATURATED` as one unsigned compare.
            if (count.wrapping_sub(min) as u32) >= (SATURATED - min) as u32 {
                return Outcome::Outside(count);
            }
            // Failure is Relaxed: the value read is only the next guess.
            match self.word.compare_exchange_weak(
                old,
                old.wrapping_add(i64::from(delta) as u64),
                success,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.stats.record(Event::Lockless);
                    return Outcome::Done(count + delta);
                }
                Err(actual) => {
                    self.stats.record(Event::CasFailed);
                    old = actual;
                    attempts += 1;
                    policy.cas_failed();
                }
            }
        }
    }

    /// Records that the lockless path decided without writing.
    #[inline(always)]
    fn decided(&self) {
        self.stats.record(Event::Lockless);
    }

    /// A snapshot of the count.
    #[inline]
    pub(crate) fn count(&self) -> i32 {
        // Relaxed: a snapshot, documented as racy.
        count_of(self.word.load(Ordering::Relaxed))
    }

    #[inline]
    pub(crate) fn get<P: Policy>(&self) {
        // Relaxed: the caller holds a reference, which keeps the object
        // alive; a new reference derived from it needs no ordering (as
        // `Arc::clone`).
        match self.update::<P>(Ordering::Relaxed, 1, 0) {
            Outcome::Done(_) => {}
            // Saturated: stays. Otherwise dead.
            Outcome::Outside(count) => {
                self.decided();
                if count != SATURATED {
                    get_on_dead();
                }
            }
            Outcome::Fallback(_) => {
                if !get_locked(self) {
                    get_on_dead()
                }
            }
        }
    }

    /// Takes a reference if the count is at least `min`.
    #[inline]
    pub(crate) fn get_at_least<P: Policy>(&self, min: i32) -> bool {
        // Acquire on success: the caller may have found the object without
        // holding a reference (a lookup) and will read it; this makes the
        // writes before the last unlock (or the last release of the count)
        // visible, so a recycled object validates against current fields.
        match self.update::<P>(Ordering::Acquire, 1, min) {
            Outcome::Done(_) => true,
            Outcome::Outside(count) => {
                self.decided();
                if count == SATURATED {
                    // Saturated: a reference without a write, with the
                    // Acquire the compare-and-swap would have given.
                    fence(Ordering::Acquire);
                    true
                } else {
                    false
                }
            }
            Outcome::Fallback(_) => get_at_least_locked(self, min),
        }
    }

    #[inline]
    pub(crate) fn put_return<P: Policy>(&self) -> Result<u32, PutError> {
        // Release on success: our uses of the object happen before whoever
        // sees the count reach zero and frees it (as `Arc::drop`).
        match self.update::<P>(Ordering::Release, -1, 1) {
            Outcome::Done(new) => {
                if new == 0 {
                    // Acquire at zero: every other holder's releasing put
                    // happens before our return, so the caller may free.
                    fence(Ordering::Acquire);
                }
                Ok(new as u32)
            }
            Outcome::Outside(count) => {
                self.decided();
                if count == SATURATED {
                    Ok(SATURATED as u32)
                } else {
                    Err(PutError::NotPositive)
                }
            }
            Outcome::Fallback(why) => Err(why),
        }
    }

    #[inline]
    pub(crate) fn put_or_lock<P: Policy>(&self) -> Option<u16> {
        // Release on success: as `put_return`. When the lock is taken, its
        // Acquire orders what follows.
        match self.update::<P>(Ordering::Release, -1, 2) {
            Outcome::Done(_) => None,
            Outcome::Outside(SATURATED) => {
                self.decided();
                None
            }
            Outcome::Outside(_) => {
                self.stats.record(Event::Fallback);
                put_or_lock_locked(self)
            }
            Outcome::Fallback(_) => put_or_lock_locked(self),
        }
    }
}

impl Locked for RawLockRef {
    type Word = AtomicU64;

    #[inline]
    fn lock_word(&self) -> &AtomicU64 {
        &self.word
    }

    #[inline]
    fn count_locked(&self) -> i32 {
        // Relaxed: with the lock held only we change the count.
        count_of(self.word.load(Ordering::Relaxed))
    }

    #[inline]
    fn set_count_locked(&self, old: i32, new: i32) {
        // Add the exact difference of the count halves: the result's count
        // half is `new` and any carry or borrow cancels in the lock half
        // modulo 2^64 (see `ticket::unlock`), while concurrent ticket draws
        // keep adding to `next`. Relaxed: the releasing unlock publishes it.
        let delta = u64::from(new as u32).wrapping_sub(u64::from(old as u32));
        self.word.fetch_add(delta, Ordering::Relaxed);
    }

    #[inline]
    fn stats(&self) -> &Stats {
        &self.stats
    }
}
