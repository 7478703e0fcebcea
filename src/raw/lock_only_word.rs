//! The word for targets without a 64-bit compare-and-swap: a 32-bit lock
//! and the count beside it, 8 bytes and 8-aligned as the other word.
//! There is no lockless path: every operation takes the lock, as the kernel
//! does without `CONFIG_ARCH_USE_CMPXCHG_LOCKREF`.
//!
//! # Invariants
//!
//! `count` is written only with the lock held; it is atomic only so that
//! the racy snapshot [`Word::count`] is not a data race.

use super::lock;
use super::Attempt;
use crate::error::PutError;
use crate::raw::policy::Policy;
use crate::stats::Stats;
use crate::sync::{AtomicI32, AtomicU32, Ordering};

lock::lock_word!(AtomicU32, u32);

/// A lock and the count beside it.
#[repr(C, align(8))]
pub(crate) struct Word {
    lock: AtomicU32,
    count: AtomicI32,
}

impl Word {
    crate::sync::const_fn! {
        /// Unlocked with `count`.
        #[inline]
        pub(crate) fn new(count: i32) -> Self {
            Word {
                lock: AtomicU32::new(lock::UNLOCKED),
                count: AtomicI32::new(count),
            }
        }
    }

    /// The atomic that holds the lock half.
    #[inline(always)]
    pub(crate) fn lock_word(&self) -> &AtomicU32 {
        &self.lock
    }

    /// A snapshot of the count.
    #[inline]
    pub(crate) fn count(&self) -> i32 {
        // Relaxed: a snapshot, documented as racy.
        self.count.load(Ordering::Relaxed)
    }

    /// The count; lock held.
    #[inline]
    pub(crate) fn count_locked(&self) -> i32 {
        // Relaxed: with the lock held only we change the count, and the
        // lock's Acquire ordered the previous holder's writes before us.
        self.count.load(Ordering::Relaxed)
    }

    /// Changes the count to `new`; lock held.
    #[inline]
    pub(crate) fn set_count_locked(&self, _old: i32, new: i32) {
        // Relaxed: the releasing unlock publishes it.
        self.count.store(new, Ordering::Relaxed);
    }

    /// No lockless revival here: it is done under the lock.
    #[allow(clippy::extra_unused_type_parameters)]
    #[inline(always)]
    pub(crate) fn revive<P: Policy>(&self, _stats: &Stats, _count: i32) -> Result<bool, PutError> {
        Err(PutError::Unsupported)
    }

    /// No lockless kill here: it is decided under the lock.
    #[allow(clippy::extra_unused_type_parameters)]
    #[inline(always)]
    pub(crate) fn kill_if_zero<P: Policy>(&self, _stats: &Stats) -> Result<bool, PutError> {
        Err(PutError::Unsupported)
    }

    /// No lockless put-and-kill here: the last put goes to the lock.
    #[allow(clippy::extra_unused_type_parameters)]
    #[inline(always)]
    pub(crate) fn put_and_kill<P: Policy>(
        &self,
        _stats: &Stats,
        _n: i32,
    ) -> Result<bool, PutError> {
        Err(PutError::Unsupported)
    }

    /// No lockless path here: every operation goes to the lock. (`P` keeps
    /// the signature of the other word.)
    #[allow(clippy::extra_unused_type_parameters)]
    #[inline(always)]
    pub(crate) fn attempt<P: Policy>(
        &self,
        _stats: &Stats,
        _success: Ordering,
        _delta: i32,
        _min: i32,
    ) -> Attempt {
        Attempt::GaveUp(PutError::Unsupported)
    }
}
