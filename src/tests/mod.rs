//! Unit tests: every operation in every state (unlocked, locked, dead,
//! saturated, zero), the ticket wrap, and bounded multi-thread stress tests
//! with exact final counts. They also run under Miri (smaller loops).

use crate::policy::Policy;
use crate::{LockRef, LockRefWord, SATURATED};

#[cfg(all(target_has_atomic = "64", not(lockref_lock_only)))]
mod add_word;
mod counted;
mod lock;
mod operations;
mod release;
#[cfg(feature = "stats")]
mod stats;
mod stress;
mod unopened;

/// Iterations per thread in the stress tests.
pub(crate) const ITERS: usize = if cfg!(miri) { 50 } else { 20_000 };
/// Threads in the stress tests (oversubscribes a 2-core machine).
pub(crate) const THREADS: usize = if cfg!(miri) { 3 } else { 4 };

/// A policy that never tries the lockless path: every operation falls back.
#[derive(Default)]
struct NoAttempts;

impl Policy for NoAttempts {
    const MAX_ATTEMPTS: u32 = 0;
    fn cas_failed(&mut self) {}
    fn lock_held(&mut self) -> bool {
        true
    }
}

pub(crate) fn dead<P: Policy>() -> LockRef<(), P> {
    let r = LockRef::<(), P>::with_policy_and_count((), 0).unwrap();
    r.lock().mark_dead();
    r
}

pub(crate) fn saturated<P: Policy>() -> LockRef<(), P> {
    LockRef::<(), P>::with_policy_and_count((), SATURATED).unwrap()
}

/// Runs `f` for every policy, and for one that always falls back.
macro_rules! for_each_policy {
    ($f:ident) => {{
        $f::<KernelRetry>();
        $f::<WaitUnlock>();
        $f::<ExpBackoff>();
        $f::<NoAttempts>();
    }};
}

pub(crate) use for_each_policy;

/// The words `CountedRef` runs on, as the tests build and read them.
pub(crate) trait TestWord<D>: LockRefWord<Data = D> + Send + Sync + Sized {
    /// The count a saturated word reads.
    const SATURATED_COUNT: u32;
    /// Unlocked with `count` references (`SATURATED_COUNT`: saturated).
    fn with_count(data: D, count: u32) -> Self;
    /// The count now; `None` if dead.
    fn live_count(&self) -> Option<u32>;
}

impl<D: Send> TestWord<D> for LockRef<D> {
    const SATURATED_COUNT: u32 = SATURATED as u32;
    fn with_count(data: D, count: u32) -> Self {
        LockRef::with_count(data, count.try_into().unwrap()).unwrap()
    }
    fn live_count(&self) -> Option<u32> {
        u32::try_from(self.count()).ok()
    }
}

#[cfg(all(target_has_atomic = "64", not(lockref_lock_only)))]
impl<D: Send> TestWord<D> for crate::experimental::AddLockRef<D> {
    const SATURATED_COUNT: u32 = crate::experimental::SATURATED;
    fn with_count(data: D, count: u32) -> Self {
        Self::with_count(data, count).unwrap()
    }
    fn live_count(&self) -> Option<u32> {
        self.count()
    }
}
