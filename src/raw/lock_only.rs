//! The lockref for targets without a 64-bit compare-and-swap: every
//! operation takes the lock, as the kernel does without
//! `CONFIG_ARCH_USE_CMPXCHG_LOCKREF`. Same API, same semantics, same size
//! and alignment (8 bytes, 8-aligned) as the compare-and-swap word.
//!
//! # Invariants
//!
//! `count` is written only with the lock held; it is atomic only so that
//! the racy snapshot [`RawLockRef::count`] is not a data race.

use super::ticket::LockWord;
use super::{get_at_least_locked, get_locked, get_on_dead, put_or_lock_locked, Locked};
use crate::error::PutError;
use crate::policy::Policy;
use crate::stats::{Event, Stats};
use crate::sync::{AtomicI32, AtomicU32, Ordering};

impl LockWord for AtomicU32 {
    type Int = u32;

    #[inline(always)]
    fn load(&self, order: Ordering) -> u32 {
        AtomicU32::load(self, order)
    }

    #[inline(always)]
    fn fetch_add(&self, add: u32, order: Ordering) -> u32 {
        AtomicU32::fetch_add(self, add, order)
    }

    #[inline(always)]
    fn compare_exchange(
        &self,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u32, u32> {
        AtomicU32::compare_exchange(self, current, new, success, failure)
    }

    #[inline(always)]
    fn lock_half(word: u32) -> u32 {
        word
    }

    #[inline(always)]
    fn lock_bits(lock: u32) -> u32 {
        lock
    }

    #[inline(always)]
    fn wrapping_add(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }
}

/// A lockref without its data: a ticket lock and a count beside it.
#[repr(C, align(8))]
pub(crate) struct RawLockRef {
    lock: AtomicU32,
    count: AtomicI32,
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
        Self {
            lock: AtomicU32::new(u32::from(ticket) << 16 | u32::from(ticket)),
            count: AtomicI32::new(count),
            stats: Stats::new(),
        }
    }

    /// Records an operation that goes straight to the lock.
    #[inline(always)]
    fn begin(&self) {
        self.stats.record(Event::Op);
        self.stats.record(Event::Fallback);
    }

    #[inline]
    pub(crate) fn count(&self) -> i32 {
        // Relaxed: a snapshot, documented as racy.
        self.count.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn get<P: Policy>(&self) {
        self.begin();
        if !get_locked(self) {
            get_on_dead()
        }
    }

    #[inline]
    pub(crate) fn get_at_least<P: Policy>(&self, min: i32) -> bool {
        self.begin();
        get_at_least_locked(self, min)
    }

    #[inline]
    pub(crate) fn put_return<P: Policy>(&self) -> Result<u32, PutError> {
        self.begin();
        Err(PutError::Unsupported)
    }

    #[inline]
    pub(crate) fn put_or_lock<P: Policy>(&self) -> Option<u16> {
        self.begin();
        put_or_lock_locked(self)
    }
}

impl Locked for RawLockRef {
    type Word = AtomicU32;

    #[inline]
    fn lock_word(&self) -> &AtomicU32 {
        &self.lock
    }

    #[inline]
    fn count_locked(&self) -> i32 {
        // Relaxed: with the lock held only we change the count, and the
        // lock's Acquire ordered the previous holder's writes before us.
        self.count.load(Ordering::Relaxed)
    }

    #[inline]
    fn set_count_locked(&self, _old: i32, new: i32) {
        // Relaxed: the releasing unlock publishes it.
        self.count.store(new, Ordering::Relaxed);
    }

    #[inline]
    fn stats(&self) -> &Stats {
        &self.stats
    }
}
