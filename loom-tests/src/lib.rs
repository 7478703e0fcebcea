//! Loom models of lockref's concurrent invariants. The models are in
//! `tests/`, one per race, and compile only under `--cfg loom` (with `--cfg lockref_loom`, so that lockref uses loom, `--cfg lockref_white_box` for its test hooks, and `--cfg crossbeam_loom` for the epoch collector):
//!
//! ```text
//! RUSTFLAGS="--cfg loom --cfg lockref_loom --cfg lockref_white_box --cfg crossbeam_loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p lockref-loom-tests --release
//! ```
//!
//! This library holds what the models share.

#[cfg(loom)]
pub use model::*;

#[cfg(loom)]
mod model {
    use lockref::policy::Policy;
    use lockref::RawLockRef;

    /// The preemption bound used when `LOOM_MAX_PREEMPTIONS` is not set.
    pub const DEFAULT_PREEMPTIONS: usize = 3;

    /// Runs `f` under loom with a preemption bound (`LOOM_MAX_PREEMPTIONS`,
    /// else [`DEFAULT_PREEMPTIONS`]), so every model finishes in CI.
    pub fn model<F>(f: F)
    where
        F: Fn() + Sync + Send + 'static,
    {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(DEFAULT_PREEMPTIONS);
        }
        builder.check(f);
    }

    /// [`model`] with room for `branches` scheduling decisions per
    /// execution (loom's default is 1 000), for models whose threads wait in
    /// spin loops.
    pub fn model_with_branches<F>(branches: usize, f: F)
    where
        F: Fn() + Sync + Send + 'static,
    {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(DEFAULT_PREEMPTIONS);
        }
        builder.max_branches = branches;
        builder.check(f);
    }

    /// The kernel's policy with a budget of one attempt, so that loom
    /// reaches the locked fallback after a single failed compare-and-swap.
    #[derive(Default)]
    pub struct OneAttempt;

    impl Policy for OneAttempt {
        const MAX_ATTEMPTS: u32 = 1;
        fn cas_failed(&mut self) {}
        fn lock_held(&mut self) -> bool {
            false
        }
    }

    /// The wait-while-locked policy (the 2024 proposal), with a budget of
    /// two attempts.
    #[derive(Default)]
    pub struct WaitTwice;

    impl Policy for WaitTwice {
        const MAX_ATTEMPTS: u32 = 2;
        fn cas_failed(&mut self) {}
        fn lock_held(&mut self) -> bool {
            loom::thread::yield_now();
            true
        }
    }

    /// The words a generic model runs on: every shareable word with a
    /// default (a bound, not an adapter).
    pub trait Word: RawLockRef + Default + Send + Sync + 'static {}
    impl<W: RawLockRef + Default + Send + Sync + 'static> Word for W {}

    /// Takes the lock and bumps the data through a yield, so that two
    /// holders at once, or a holder that does not see the previous one's
    /// write, show as conflicting accesses to the data's cell (loom's cell
    /// tracking).
    pub fn bump<W: RawLockRef>(r: &lockref::LockRef<u32, W>) {
        let mut g = r.lock();
        let v = *g;
        loom::thread::yield_now();
        *g = v + 1;
    }

    /// Two threads bump one lock's data in turn; the data ends at two.
    pub fn two_holders_take_turns<W: Word>() {
        let r = loom::sync::Arc::new(lockref::LockRef::with_raw(0_u32, W::default()));
        let other = {
            let r = r.clone();
            loom::thread::spawn(move || bump(&r))
        };
        bump(&r);
        other.join().unwrap();
        assert_eq!(*r.lock(), 2);
    }
}
