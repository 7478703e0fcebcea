//! Contention policies for the lockless compare-and-swap loop.
//!
//! A [`LockRef`](crate::LockRef) takes its policy as a type parameter, so
//! the choice costs nothing at run time. The loop itself enforces the bound:
//! every failed compare-and-swap and every wait on a held lock counts as one
//! attempt, and after [`Policy::MAX_ATTEMPTS`] attempts the operation is done
//! under the lock (or, for `put_return`, reported as failed). A policy can
//! only choose *how* to wait between attempts, never to wait forever, so
//! every policy keeps forward progress.
//!
//! # What the kernel learned
//!
//! As reported by the kernel patches that changed its loop:
//!
//! | year | change | measured | fate |
//! |---|---|---|---|
//! | 2019 | cap retries at 100, then take the lock | +60..70% open/close (ThunderX2) | merged |
//! | 2023 | drop `cpu_relax()` after a failed cmpxchg | open3 +84..134%, fstat2 +144..423% (Cascade Lake, 24-96 procs) | merged |
//! | 2024 | `cpu_relax()` while the lock is held, within the budget | unixbench shell1 -33.7%, getdent -56.5%, 134k -> 42k ops/s at 192 workers | dropped |
//! | 2024 | wait while locked, no cap, no fallback | O_CREAT 18 s -> 10 s | dropped: no forward progress |
//!
//! Delays have helped on some machines and hurt badly on others, so no
//! policy here is assumed better: the benchmarks measure them side by side
//! and [`DefaultPolicy`] is whatever they justify.

/// The attempts every policy here allows before the operation takes the
/// lock: the kernel's bound (2019, "cap retries at 100").
pub const RETRY_LIMIT: u32 = 100;

/// How the lockless loop waits between attempts. The implementing type is
/// also the per-operation state: each operation starts from
/// `Default::default()`.
///
/// ```
/// use lockref::{policy::Policy, CasWord, LockRef};
///
/// /// Never tries lock-free: every operation takes the lock.
/// #[derive(Default)]
/// struct AlwaysLock;
///
/// impl Policy for AlwaysLock {
///     const MAX_ATTEMPTS: u32 = 0;
///     fn cas_failed(&mut self) {}
///     fn lock_held(&mut self) -> bool { false }
/// }
///
/// let r = LockRef::with_raw((), CasWord::<AlwaysLock>::new());
/// r.get(); // done under the lock
/// assert_eq!(r.count(), Some(2));
/// ```
pub trait Policy: Default {
    /// Attempts (failed compare-and-swaps plus waits on a held lock) before
    /// the operation falls back to the lock. Zero means always lock, and
    /// then [`LockRef::put_return`](crate::LockRef::put_return), which
    /// never locks, fails with
    /// [`PutError::Contended`](crate::PutError::Contended) without trying.
    const MAX_ATTEMPTS: u32;

    /// Called after a failed compare-and-swap, before the next attempt.
    fn cas_failed(&mut self);

    /// Called when the lock half is seen held. Return `true` to wait (the
    /// policy does the waiting) and read the word again, `false` to fall
    /// back to the lock now.
    fn lock_held(&mut self) -> bool;
}

/// The kernel's current `CMPXCHG_LOOP`: retry at once after a failed
/// compare-and-swap (no `cpu_relax()`: on x86 even a failing `cmpxchg`
/// takes the line exclusive, so a pause only loses it), up to [`RETRY_LIMIT`] times, and
/// fall back as soon as the lock is seen held.
///
/// ```
/// let r = lockref::LockRef::with_raw((), lockref::CasWord::<lockref::policy::KernelRetry>::new());
/// r.get();
/// assert_eq!(r.count(), Some(2));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelRetry;

impl Policy for KernelRetry {
    const MAX_ATTEMPTS: u32 = RETRY_LIMIT;

    #[inline(always)]
    fn cas_failed(&mut self) {}

    #[inline(always)]
    fn lock_held(&mut self) -> bool {
        false
    }
}

/// Waits while the lock is held: when the lock half is seen held, spin
/// (`spin_loop` hint) and look again instead of queueing on the lock, but
/// within the same [`RETRY_LIMIT`] budget, after which the operation takes the
/// lock (the 2024 wait-while-locked proposal, with forward progress
/// restored). Failed compare-and-swaps retry at once. The kernel
/// measured large regressions from this on big machines (see the module
/// docs); it is here to be measured, not recommended.
///
/// ```
/// let r = lockref::LockRef::with_raw((), lockref::CasWord::<lockref::policy::WaitUnlock>::new());
/// r.get();
/// assert_eq!(r.count(), Some(2));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct WaitUnlock;

impl Policy for WaitUnlock {
    const MAX_ATTEMPTS: u32 = RETRY_LIMIT;

    #[inline(always)]
    fn cas_failed(&mut self) {}

    #[inline(always)]
    fn lock_held(&mut self) -> bool {
        crate::sync::spin_loop();
        true
    }
}

/// Exponential backoff after a failed compare-and-swap, with
/// [`crossbeam_utils::Backoff::spin`] (1, 2, 4 .. 64 `spin_loop` hints),
/// [`RETRY_LIMIT`] attempts, and an immediate fallback when the lock is seen held. Fewer
/// threads retry at once, so fewer compare-and-swaps fail; the price is
/// latency after a failure.
///
/// ```
/// let r = lockref::LockRef::with_raw((), lockref::CasWord::<lockref::policy::ExpBackoff>::new());
/// r.get();
/// assert_eq!(r.count(), Some(2));
/// ```
#[derive(Debug, Default)]
pub struct ExpBackoff(crossbeam_utils::Backoff);

impl Policy for ExpBackoff {
    const MAX_ATTEMPTS: u32 = RETRY_LIMIT;

    #[inline(always)]
    fn cas_failed(&mut self) {
        self.0.spin();
    }

    #[inline(always)]
    fn lock_held(&mut self) -> bool {
        false
    }
}

/// The policy a [`LockRef`](crate::LockRef) uses unless told otherwise:
/// the kernel's own loop, [`KernelRetry`]. The benchmarks (`benches/`,
/// results in `harness/README.md`) could not rank the three policies on
/// the machines measured so far, so the choice falls to the one with
/// evidence at scale: the kernel's loop, which the kernel chose over
/// relaxing after a failure and over waiting on a held lock (see the
/// module docs).
///
/// ```
/// let r: lockref::LockRef<u8, lockref::CasWord<lockref::policy::DefaultPolicy>> = lockref::LockRef::new(0);
/// assert_eq!(r.count(), Some(1));
/// ```
pub type DefaultPolicy = KernelRetry;
