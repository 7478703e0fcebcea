//! [`CasWord`] as a [`RawLockRef`] and a [`RawLockRefExact`]: the
//! conversions between the word's signed count half and the API's `u32`
//! counts, and the count changes made under the lock.

use core::fmt;

use super::CasWord;
use crate::count::{decremented, incremented, DEAD, SATURATED_I32};
use crate::error::{CountError, PutError};
use crate::park::Park;
use crate::policy::Policy;
use crate::raw_lockref::{RawLockRef, RawLockRefExact};

/// A signed count half as the API reads it: `None` if dead.
#[inline(always)]
fn live(count: i32) -> Option<u32> {
    u32::try_from(count).ok()
}

// SAFETY: the promises of `RawLockRef`, one by one:
// - the lock excludes (`lock.rs`: a test-and-set bit, taken by a `fetch_or`
//   that found it clear or by a hand-off); `lock`/`try_lock` are
//   `Acquire`, `unlock` `Release`; `put_many_or_lock` returns `Some` only
//   after `acquire`;
// - every byte of the word is an atomic (stats' counters too);
// - a negative count is dead: every lockless attempt requires
//   `count >= min >= 0`, `incremented` refuses a negative count, and
//   nothing but `mark_dead_locked` writes one (nor leaves one, but
//   `revive_locked`, whose caller vouches for it);
// - a count at `SATURATED_I32` is outside every attempt's range and every
//   locked change leaves it as it is;
// - puts require `count >= 1` (lockless) or `decremented`/`decrement_by`'s
//   checks (locked), so the count never goes below zero;
// - under the lock the count is frozen (`cas_word.rs`'s invariant), so the
//   kill's check and store are exact;
// - the orderings and the release rule are `raw/mod.rs`'s (its module
//   docs' invariant).
unsafe impl<P: Policy, K: Park> RawLockRef for CasWord<P, K> {
    type Ticket = ();

    #[inline]
    fn with_count(count: u32) -> Result<Self, CountError> {
        CasWord::with_count(count)
    }

    #[inline]
    fn count(&self) -> Option<u32> {
        live(self.snapshot())
    }

    #[inline]
    fn get(&self) {
        self.take_ref();
    }

    #[inline]
    fn get_not_dead(&self) -> bool {
        self.take_ref_if_at_least(0)
    }

    #[inline]
    fn get_not_zero(&self) -> bool {
        self.take_ref_if_at_least(1)
    }

    #[inline]
    fn put_many_or_lock(&self, n: u32) -> Option<()> {
        self.put_many_or_take_lock(n)
    }

    #[inline]
    fn put_or_lock(&self) -> Option<()> {
        self.put_many_or_take_lock(1)
    }

    #[inline]
    unsafe fn put_owned(&self) -> Result<u32, PutError> {
        // Safe on this word: a put at zero is refused before it writes.
        self.put_lockless()
    }

    #[inline]
    fn lock(&self) {
        self.acquire_lock();
    }

    #[inline]
    fn try_lock(&self) -> Option<()> {
        self.try_acquire_lock().then_some(())
    }

    #[inline]
    unsafe fn unlock(&self, _: ()) {
        self.release_lock();
    }

    #[inline]
    unsafe fn count_locked(&self) -> Option<u32> {
        live(self.count_under_lock())
    }

    #[inline]
    unsafe fn increment_locked(&self) -> Result<u32, CountError> {
        let old = self.count_under_lock();
        let new = incremented(old).ok_or(CountError::Dead)?;
        self.set_count_under_lock(old, new);
        Ok(new as u32)
    }

    #[inline]
    unsafe fn decrement_by_locked(&self, n: u32) -> Result<u32, CountError> {
        let old = self.count_under_lock();
        if old < 0 {
            return Err(CountError::Dead);
        }
        if n == 1 {
            // The common case, `dput`'s `count--`.
            let new = decremented(old).ok_or(CountError::Underflow)?;
            self.set_count_under_lock(old, new);
            return Ok(new as u32);
        }
        if old == SATURATED_I32 {
            return Ok(crate::SATURATED);
        }
        if (old as u32) < n {
            return Err(CountError::Underflow);
        }
        let new = old - n as i32;
        self.set_count_under_lock(old, new);
        Ok(new as u32)
    }

    #[inline]
    unsafe fn kill_if_zero_locked(&self) -> bool {
        // The count is frozen under this word's lock: the check is exact.
        let zero = self.count_under_lock() == 0;
        if zero {
            self.set_count_under_lock(0, DEAD);
        }
        zero
    }
}

// SAFETY: no lockless update lands while the lock is held: every one is a
// compare-and-swap of the whole word from a value whose lock half reads
// free (`cas_word.rs`), and the lock-only word has none.
unsafe impl<P: Policy, K: Park> RawLockRefExact for CasWord<P, K> {
    #[inline]
    fn put_return(&self) -> Result<u32, PutError> {
        self.put_lockless()
    }

    #[inline]
    unsafe fn set_count_locked(&self, count: u32) -> Result<(), CountError> {
        let old = self.count_under_lock();
        if old < 0 {
            return Err(CountError::Dead);
        }
        if count > crate::SATURATED {
            return Err(CountError::OutOfRange);
        }
        if old != SATURATED_I32 {
            self.set_count_under_lock(old, count as i32);
        }
        Ok(())
    }

    #[inline]
    unsafe fn revive_locked(&self, count: u32) -> Result<(), CountError> {
        let old = self.count_under_lock();
        if old >= 0 {
            return Err(CountError::NotDead);
        }
        if count > crate::SATURATED {
            return Err(CountError::OutOfRange);
        }
        self.set_count_under_lock(old, count as i32);
        Ok(())
    }

    #[inline]
    unsafe fn mark_dead_locked(&self) {
        let old = self.count_under_lock();
        if old != SATURATED_I32 {
            self.set_count_under_lock(old, DEAD);
        }
    }
}

impl<P: Policy, K: Park> Default for CasWord<P, K> {
    /// [`CasWord::new`]: one reference.
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Policy, K: Park> fmt::Debug for CasWord<P, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CasWord")
            .field("count", &crate::count::ShowCount(RawLockRef::count(self)))
            .finish_non_exhaustive()
    }
}
