//! Unit tests: every operation in every state (unlocked, locked, dead,
//! saturated, zero), the ticket wrap, and bounded multi-thread stress tests
//! with exact final counts. They also run under Miri (smaller loops).

use crate::raw::policy::Policy;
use crate::{CasWord, LockRef, RawLockRef, SATURATED};

#[cfg(all(
    feature = "unstable-add-word",
    target_has_atomic = "64",
    not(lockref_lock_only)
))]
mod add_word;
mod counted;
mod freed_by_a_woken_sleeper;
mod freed_under_a_call;
mod lock;
mod operations;
mod park;
mod release;
mod revive;
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

pub(crate) fn dead<P: Policy>() -> LockRef<(), CasWord<P>> {
    let r = LockRef::with_raw((), CasWord::<P>::with_count(0).unwrap());
    r.lock().mark_dead();
    r
}

pub(crate) fn saturated<P: Policy>() -> LockRef<(), CasWord<P>> {
    LockRef::with_raw((), CasWord::<P>::with_count(SATURATED).unwrap())
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

/// The words the generic tests run on (a bound, not an adapter: every
/// shareable word is one).
pub(crate) trait AnyWord: RawLockRef + Send + Sync + 'static {}
impl<W: RawLockRef + Send + Sync + 'static> AnyWord for W {}

/// A lockref on the word `W` holding `count` references.
pub(crate) fn lockref_at<W: RawLockRef, D>(data: D, count: u32) -> LockRef<D, W> {
    LockRef::with_raw(data, W::with_count(count).expect("a live count"))
}
