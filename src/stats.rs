//! Optional per-object contention statistics (feature `stats`).
//!
//! With the feature off, [`Stats`] is a zero-sized type whose `record` is an
//! empty inline function: no field, no instruction. With it on, every
//! [`CasWord`](crate::CasWord) carries relaxed counters, read with
//! `CasWord::stats`. They are for tests and
//! benchmarks that must know which path ran; the counters are extra atomic
//! writes, so do not leave the feature on when measuring speed.

/// A point in an operation worth counting.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "stats"), allow(dead_code))]
pub(crate) enum Event {
    /// A public operation on the object began (get, get_not_zero,
    /// get_not_dead, put_return, put_or_lock, lock, try_lock).
    Operation,
    /// The lockless path finished the operation (a compare-and-swap
    /// succeeded, or the operation was decided from one read without any
    /// write: a refusal, or a saturated count).
    Lockless,
    /// A compare-and-swap failed.
    /// (Never in the lock-only build, which has no compare-and-swap.)
    #[allow(dead_code)]
    CasFailed,
    /// The lockless path gave up (lock held or attempts exhausted) and the
    /// operation was done under the lock, or failed for `put_return`.
    Fallback,
    /// The lock was acquired (explicitly or by a fallback).
    LockAcquired,
}

/// A copy of a word's counters at one moment
/// ([`CasWord::stats`](crate::CasWord::stats), feature `stats`).
///
/// ```
/// let r = lockref::LockRef::new(());
/// drop(r.lock());
/// let s = r.raw().stats();
/// assert_eq!((s.operations, s.lock_acquisitions), (1, 1));
/// ```
#[cfg(feature = "stats")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Public operations begun on the object.
    pub operations: usize,
    /// Operations the lockless path completed.
    pub lockless: usize,
    /// Failed compare-and-swaps.
    pub cas_failures: usize,
    /// Operations whose lockless path gave up.
    pub fallbacks: usize,
    /// Lock acquisitions, explicit or by a fallback.
    pub lock_acquisitions: usize,
}

cfg_if::cfg_if! {
    if #[cfg(feature = "stats")] {
        use crate::sync::{StatCounter, StatOrdering};

        pub(crate) struct Stats {
            operations: StatCounter,
            lockless: StatCounter,
            cas_failures: StatCounter,
            fallbacks: StatCounter,
            lock_acquisitions: StatCounter,
        }

        impl Stats {
            pub(crate) const fn new() -> Self {
                Self {
                    operations: StatCounter::new(0),
                    lockless: StatCounter::new(0),
                    cas_failures: StatCounter::new(0),
                    fallbacks: StatCounter::new(0),
                    lock_acquisitions: StatCounter::new(0),
                }
            }

            #[inline(always)]
            fn counter(&self, event: Event) -> &StatCounter {
                match event {
                    Event::Operation => &self.operations,
                    Event::Lockless => &self.lockless,
                    Event::CasFailed => &self.cas_failures,
                    Event::Fallback => &self.fallbacks,
                    Event::LockAcquired => &self.lock_acquisitions,
                }
            }

            #[inline(always)]
            pub(crate) fn record(&self, event: Event) {
                // Relaxed: a counter orders nothing; readers want totals.
                self.counter(event).fetch_add(1, StatOrdering::Relaxed);
            }

            /// Takes back one `record` of `event` (a releasing operation
            /// counts itself before its compare-and-swap and retracts the
            /// count if the attempt gives up; a snapshot taken in between
            /// may see it).
            #[inline(always)]
            pub(crate) fn retract(&self, event: Event) {
                // Relaxed: as `record`.
                self.counter(event).fetch_sub(1, StatOrdering::Relaxed);
            }

            pub(crate) fn snapshot(&self) -> StatsSnapshot {
                // Relaxed: see `record`; a snapshot taken while others run
                // is approximate by nature.
                let read = |c: &StatCounter| c.load(StatOrdering::Relaxed);
                StatsSnapshot {
                    operations: read(&self.operations),
                    lockless: read(&self.lockless),
                    cas_failures: read(&self.cas_failures),
                    fallbacks: read(&self.fallbacks),
                    lock_acquisitions: read(&self.lock_acquisitions),
                }
            }

            pub(crate) fn reset(&self) {
                for c in [
                    &self.operations,
                    &self.lockless,
                    &self.cas_failures,
                    &self.fallbacks,
                    &self.lock_acquisitions,
                ] {
                    c.store(0, StatOrdering::Relaxed);
                }
            }
        }
    } else {
        pub(crate) struct Stats;

        impl Stats {
            #[inline(always)]
            pub(crate) const fn new() -> Self {
                Stats
            }

            #[inline(always)]
            pub(crate) fn record(&self, _event: Event) {}

            #[inline(always)]
            pub(crate) fn retract(&self, _event: Event) {}
        }
    }
}
