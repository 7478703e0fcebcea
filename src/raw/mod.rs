//! [`CasWord`], the compare-and-swap word: a count and a lock,
//! without the data. Each operation is its lockless attempt followed,
//! beside it, by its locked version, as in the kernel's `lib/lockref.c`.
//! Its [`RawLockRef`](crate::RawLockRef) and
//! [`RawLockRefExact`](crate::RawLockRefExact) impls, which are its operations, are in `operations.rs`.
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

use crate::error::{CountError, PutError};
use crate::park::{DefaultPark, Park};
use crate::raw::policy::{DefaultPolicy, Policy};
use crate::stats::Stats;

pub(crate) mod count;
pub(crate) mod lock;
mod operations;
pub mod policy;
pub(crate) mod raw_lockref;

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
/// `park::ParkingLot`; without, it spins). Without a
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
}
