//! [`CasWord`], the compare-and-swap word: a count and a lock,
//! without the data. Each operation is its lockless attempt followed,
//! beside it, by its locked version, as in the kernel's `lib/lockref.c`.
//! Its [`RawLockRef`](crate::RawLockRef) and
//! [`RawLockRefExact`](crate::RawLockRefExact) impls are in `contract.rs`.
//!
//! The word is chosen here, once, as the kernel chooses with
//! `CONFIG_ARCH_USE_CMPXCHG_LOCKREF`: with a 64-bit compare-and-swap, count
//! and lock share one `AtomicU64` and the attempt is a compare-and-swap
//! loop ([`cas_word`]); without one (or with `--cfg lockref_lock_only`, to
//! test that build on any host) the attempt always gives up and every
//! operation takes the lock ([`lock_only_word`]). The operations below are
//! the same code for both.
//!
//! # Invariant: nothing after the releasing read-modify-write
//!
//! An operation that gives up a reference (`put_return`, `put_or_lock`,
//! `put_many_or_lock`) touches nothing of the object after the
//! read-modify-write that gives it up: no statistics counter, no read, no
//! assertion. From that instant the thread owns nothing, and another
//! holder may see zero and free the object. The exceptions are the cases
//! where the object cannot be freed under us: the lock is held (the
//! locked fallbacks write the count under it, and the unlock is their last
//! touch), or this thread has just seen the count reach zero (then it is
//! the one who decides). So the statistics of a releasing operation are
//! recorded *before* its compare-and-swap, and retracted if the lockless
//! attempt gives up.

use core::marker::PhantomData;

use crate::count::{incremented, SATURATED_I32 as SATURATED};
use crate::error::{CountError, PutError};
use crate::park::{DefaultPark, Park};
use crate::policy::{DefaultPolicy, Policy};
use crate::stats::{Event, Stats};
use crate::sync::{acquire_fence_after, Ordering};

mod contract;
pub(crate) mod lock;

cfg_if::cfg_if! {
    // The one place the build's word is chosen.
    if #[cfg(all(target_has_atomic = "64", not(lockref_lock_only)))] {
        mod cas_word;
        use cas_word::Word;
        /// Whether this build has the lockless compare-and-swap paths.
        ///
        /// ```
        /// # #[cfg(all(target_arch = "x86_64", not(lockref_lock_only)))]
        /// assert!(lockref::LOCKLESS);
        /// ```
        pub const LOCKLESS: bool = true;
    } else {
        mod lock_only_word;
        use lock_only_word::Word;
        /// Whether this build has the lockless compare-and-swap paths.
        ///
        /// ```
        /// assert!(!lockref::LOCKLESS);
        /// ```
        pub const LOCKLESS: bool = false;
    }
}

/// How a lockless attempt ended.
// The lock-only word constructs only `GaveUp`.
#[allow(dead_code)]
pub(crate) enum Attempt {
    /// The compare-and-swap succeeded; the count is now this.
    Swapped(i32),
    /// The lock half read free but the count was outside the range where
    /// the update applies (saturated, zero, dead): nothing was written; the
    /// operation decides from this count.
    CountOutOfRange(i32),
    /// The attempt gave up (lock seen held, attempts used up, or no
    /// lockless path in this build): the operation takes the lock, or, for
    /// `put_return`, reports why.
    GaveUp(PutError),
}

/// The compare-and-swap word, the default word of
/// [`LockRef`](crate::LockRef): a count and a lock in one 64-bit word (the
/// layout is the crate docs' table). A count change is one
/// compare-and-swap of the whole word while the lock is free, so no
/// lockless change ever lands while the lock is held (the count is frozen
/// under it: [`RawLockRefExact`](crate::RawLockRefExact)). The contention
/// [`Policy`] `P` decides how the loop waits, within its bound, before the
/// operation is done under the lock; the [`Park`] `K` decides where a lock
/// waiter sleeps once spinning no longer pays (with `std`,
/// [`ParkingLot`](crate::park::ParkingLot); without, it spins). Without a
/// 64-bit compare-and-swap ([`LOCKLESS`] is `false`) every operation takes
/// the lock.
///
/// ```
/// use lockref::{policy::ExpBackoff, CasWord, LockRef};
///
/// let r = LockRef::with_raw((), CasWord::<ExpBackoff>::new());
/// r.get();
/// assert_eq!(r.count(), Some(2));
/// ```
pub struct CasWord<P: Policy = DefaultPolicy, K: Park = DefaultPark> {
    word: Word,
    stats: Stats,
    _policy: PhantomData<fn() -> (P, K)>,
}

impl<P: Policy, K: Park> CasWord<P, K> {
    crate::sync::const_fn! {
        /// Unlocked, with one reference (`lockref_init`). A `const fn`
        /// (except under `--cfg lockref_loom`).
        #[inline]
        pub fn new() -> Self {
            Self::at_count(1)
        }
    }

    crate::sync::const_fn! {
        /// Unlocked, with `count` references, `0 ..= SATURATED`. A `const
        /// fn` (except under `--cfg lockref_loom`).
        ///
        /// # Errors
        ///
        /// [`CountError::OutOfRange`] above [`SATURATED`](crate::SATURATED).
        #[inline]
        pub fn with_count(count: u32) -> Result<Self, CountError> {
            if count > crate::SATURATED {
                return Err(CountError::OutOfRange);
            }
            Ok(Self::at_count(count as i32))
        }
    }

    crate::sync::const_fn! {
        /// Unlocked with `count` (any value of the count half: tests make
        /// dead words with it).
        #[inline]
        pub(crate) fn at_count(count: i32) -> Self {
            Self {
                word: Word::new(count),
                stats: Stats::new(),
                _policy: PhantomData,
            }
        }
    }

    /// This word's counters (feature `stats`).
    ///
    /// ```
    /// let r = lockref::LockRef::new(());
    /// r.get();
    /// let s = r.raw().stats();
    /// assert_eq!(s.operations, 1);
    /// # if lockref::LOCKLESS {
    /// assert_eq!((s.lockless, s.fallbacks, s.lock_acquisitions), (1, 0, 0));
    /// # }
    /// ```
    #[cfg(feature = "stats")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stats")))]
    pub fn stats(&self) -> crate::StatsSnapshot {
        self.stats.snapshot()
    }

    /// Sets this word's counters to zero (feature `stats`).
    ///
    /// ```
    /// let r = lockref::LockRef::new(());
    /// r.get();
    /// r.raw().reset_stats();
    /// assert_eq!(r.raw().stats(), lockref::StatsSnapshot::default());
    /// ```
    #[cfg(feature = "stats")]
    #[cfg_attr(docsrs, doc(cfg(feature = "stats")))]
    pub fn reset_stats(&self) {
        self.stats.reset();
    }

    /// Whether the lock reads held now (white-box tests).
    #[cfg(any(test, lockref_white_box))]
    pub(crate) fn lock_is_held(&self) -> bool {
        lock::is_held(self.word.lock_word())
    }

    /// Whether the lock half flags a sleeper now (white-box tests).
    #[cfg(any(test, lockref_white_box))]
    pub(crate) fn flags_a_sleeper(&self) -> bool {
        lock::flags_a_sleeper(self.word.lock_word())
    }

    /// A snapshot of the count.
    #[inline]
    pub(crate) fn snapshot(&self) -> i32 {
        self.word.count()
    }

    /// The count; only meaningful with the lock held.
    #[inline]
    pub(crate) fn count_under_lock(&self) -> i32 {
        self.word.count_locked()
    }

    /// Changes the count from `old` (its value now) to `new`; lock held.
    #[inline]
    pub(crate) fn set_count_under_lock(&self, old: i32, new: i32) {
        self.word.set_count_locked(old, new);
    }

    // ----- the lock -----

    /// Takes the lock and counts the acquisition.
    #[inline]
    fn acquire(&self) {
        lock::lock::<_, K>(self.word.lock_word());
        self.stats.record(Event::LockAcquired);
    }

    /// Releases the lock.
    #[inline]
    pub(crate) fn release_lock(&self) {
        lock::unlock::<_, K>(self.word.lock_word());
    }

    /// `spin_lock`: waits for the lock (spinning, then sleeping in `K`).
    #[inline]
    pub(crate) fn acquire_lock(&self) {
        self.stats.record(Event::Operation);
        self.acquire();
    }

    /// `spin_trylock`: the lock if it is free now.
    #[inline]
    pub(crate) fn try_acquire_lock(&self) -> bool {
        self.stats.record(Event::Operation);
        let taken = lock::try_lock(self.word.lock_word());
        if taken {
            self.stats.record(Event::LockAcquired);
        }
        taken
    }

    // ----- lockref_get -----

    /// Takes a reference the caller already holds one of. Panics if dead.
    #[inline]
    pub(crate) fn take_ref(&self) {
        self.stats.record(Event::Operation);
        // Relaxed: the caller holds a reference, which keeps the object
        // alive; a new reference derived from it needs no ordering (as
        // `Arc::clone`).
        match self.word.attempt::<P>(&self.stats, Ordering::Relaxed, 1, 0) {
            Attempt::Swapped(_) => self.stats.record(Event::Lockless),
            // Saturated: stays. Otherwise dead.
            Attempt::CountOutOfRange(count) => {
                self.stats.record(Event::Lockless);
                if count != SATURATED {
                    get_on_dead();
                }
            }
            Attempt::GaveUp(_) => self.get_locked(),
        }
    }

    #[cold]
    #[inline(never)]
    fn get_locked(&self) {
        if !self.get_at_least_locked(0) {
            get_on_dead();
        }
    }

    // ----- lockref_get_not_zero, lockref_get_not_dead -----

    /// Takes a reference if the count is at least `min` (1 for
    /// `get_not_zero`, 0 for `get_not_dead`).
    #[inline]
    pub(crate) fn take_ref_if_at_least(&self, min: i32) -> bool {
        self.stats.record(Event::Operation);
        // Acquire on success: the caller may have found the object without
        // holding a reference (a lookup) and will read it; this makes the
        // writes before the last unlock (or the last release of the count)
        // visible.
        match self
            .word
            .attempt::<P>(&self.stats, Ordering::Acquire, 1, min)
        {
            Attempt::Swapped(_) => {
                self.stats.record(Event::Lockless);
                true
            }
            Attempt::CountOutOfRange(count) => {
                self.stats.record(Event::Lockless);
                if count == SATURATED {
                    // Saturated: a reference without a write, with the
                    // Acquire the compare-and-swap would have given.
                    acquire_fence_after!(self.word.lock_word());
                    true
                } else {
                    false
                }
            }
            Attempt::GaveUp(_) => self.get_at_least_locked(min),
        }
    }

    /// [`take_ref_if_at_least`](Self::take_ref_if_at_least) under the lock.
    #[cold]
    #[inline(never)]
    fn get_at_least_locked(&self, min: i32) -> bool {
        self.stats.record(Event::Fallback);
        self.acquire();
        let count = self.word.count_locked();
        let taken = match incremented(count) {
            Some(new) if count >= min => {
                self.word.set_count_locked(count, new);
                true
            }
            _ => false,
        };
        self.release_lock();
        taken
    }

    // ----- lockref_put_return -----

    /// Drops a reference without ever taking the lock: the new count, or
    /// why not (nothing changed).
    #[inline]
    pub(crate) fn put_lockless(&self) -> Result<u32, PutError> {
        self.stats.record(Event::Operation);
        // Counted before the releasing compare-and-swap (see the module
        // docs), and retracted below if the attempt gives up.
        self.stats.record(Event::Lockless);
        // Release on success: our uses of the object happen before whoever
        // sees the count reach zero and frees it (as `Arc::drop`).
        match self
            .word
            .attempt::<P>(&self.stats, Ordering::Release, -1, 1)
        {
            // From here the object may be freed by another holder: nothing
            // of it is touched again.
            Attempt::Swapped(new) => {
                if new == 0 {
                    // Acquire at zero: every other holder's releasing put
                    // happens before our return, so the caller may free.
                    acquire_fence_after!(self.word.lock_word());
                }
                Ok(new as u32)
            }
            // Nothing was written: the caller's reference still keeps the
            // object (the Lockless counted above stands).
            Attempt::CountOutOfRange(count) => {
                if count == SATURATED {
                    Ok(crate::SATURATED)
                } else {
                    Err(PutError::NotPositive)
                }
            }
            // No locked version: the caller decides under the lock. Nothing
            // was written, so the object is still the caller's.
            Attempt::GaveUp(why) => {
                self.stats.retract(Event::Lockless);
                self.stats.record(Event::Fallback);
                Err(why)
            }
        }
    }

    // ----- lockref_put_or_lock, and its n-reference form -----

    /// Drops `n` references if more than `n` are held (or the count is
    /// saturated); else returns `Some` with the lock held and nothing
    /// changed, for the caller to decide with the exact count.
    #[inline]
    pub(crate) fn put_many_or_take_lock(&self, n: u32) -> Option<()> {
        self.stats.record(Event::Operation);
        if n == 0 || n >= crate::SATURATED {
            // Nothing to drop, or more than a live count can hold: decide
            // under the lock.
            return self.put_many_under_lock(n);
        }
        let n = n as i32;
        // Counted before the releasing compare-and-swap, as in
        // `put_return`.
        self.stats.record(Event::Lockless);
        // Release on success: as `put_return`. When the lock is taken, its
        // Acquire orders what follows.
        match self
            .word
            .attempt::<P>(&self.stats, Ordering::Release, -n, n + 1)
        {
            // Swapped: the references are given up and the object is no
            // longer ours to touch. Saturated: nothing was written, and a
            // saturated object is never freed.
            Attempt::Swapped(_) | Attempt::CountOutOfRange(SATURATED) => None,
            Attempt::CountOutOfRange(_) | Attempt::GaveUp(_) => {
                // Nothing was written: the references are still ours.
                self.stats.retract(Event::Lockless);
                self.put_many_under_lock(n as u32)
            }
        }
    }

    /// [`put_many_or_take_lock`](Self::put_many_or_take_lock) under the lock.
    #[cold]
    #[inline(never)]
    fn put_many_under_lock(&self, n: u32) -> Option<()> {
        self.stats.record(Event::Fallback);
        self.acquire();
        let count = self.word.count_locked();
        if count == SATURATED && n > 0 {
            // Saturated: the references dropped, the count stays.
            self.release_lock();
            return None;
        }
        if n > 0 && count > 0 && count as u32 > n {
            self.word.set_count_locked(count, count - n as i32);
            self.release_lock();
            return None;
        }
        Some(())
    }
}

/// The panic for `get` on a dead object: granting a reference to an object
/// being torn down would be a use-after-free.
#[cold]
#[inline(never)]
#[track_caller]
fn get_on_dead() -> ! {
    panic!("LockRef::get on a dead object (use get_not_dead where death is possible)")
}
