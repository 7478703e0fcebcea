//! [`CasWord`]'s operations, as [`RawLockRef`] and [`RawLockRefExact`]
//! name them: each trait method is the operation itself (its lockless
//! attempt, then beside it its locked version, as in the kernel's
//! `lib/lockref.c`), so one operation has one name from the trait down to
//! the word; below the trait only the compare-and-swap loop
//! ([`attempt`](super::cas_word), the policy's) and the lock
//! ([`lock`](super::lock)) have names of their own. Also the conversions
//! between the word's signed count half and the API's `u32` counts, and
//! the count changes made under the lock.
//!
//! The release rule (nothing of the object touched after a releasing
//! read-modify-write) is `raw/mod.rs`'s module docs' invariant.

use core::fmt;

use super::{lock, Attempt, CasWord};
use crate::error::{CountError, PutError};
use crate::park::Park;
use crate::raw::count::{decremented, incremented, DEAD, SATURATED_I32};
use crate::raw::policy::Policy;
use crate::raw::raw_lockref::{RawLockRef, RawLockRefExact};
use crate::stats::Event;
use crate::sync::{acquire_fence_after, Ordering};

/// A signed count half as the API reads it: `None` if dead.
#[inline(always)]
fn live(count: i32) -> Option<u32> {
    u32::try_from(count).ok()
}

/// The panic for `get` on a dead object: granting a reference to an object
/// being torn down would be a use-after-free.
#[cold]
#[inline(never)]
#[track_caller]
fn get_on_dead() -> ! {
    panic!("LockRef::get on a dead object (use get_not_dead where death is possible)")
}

// SAFETY: the promises of `RawLockRef`, one by one:
// - the lock excludes (`lock.rs`: a test-and-set bit, taken by a `fetch_or`
//   that found it clear or by a hand-off); `lock`/`try_lock` are
//   `Acquire`, `unlock` `Release`; `put_many_or_lock` returns `Some` only
//   after `lock_for_fallback`;
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
        live(self.word.count())
    }

    // ----- lockref_get -----

    /// Takes a reference the caller already holds one of. Panics if dead.
    #[inline]
    fn get(&self) {
        self.stats.record(Event::Operation);
        // Relaxed: the caller holds a reference, which keeps the object
        // alive; a new reference derived from it needs no ordering (as
        // `Arc::clone`).
        match self.word.attempt::<P>(&self.stats, Ordering::Relaxed, 1, 0) {
            Attempt::Swapped(_) => self.stats.record(Event::Lockless),
            // Saturated: stays. Otherwise dead.
            Attempt::CountOutOfRange(count) => {
                self.stats.record(Event::Lockless);
                if count != SATURATED_I32 {
                    get_on_dead();
                }
            }
            Attempt::GaveUp(_) => self.get_locked(),
        }
    }

    // ----- lockref_get_not_dead, lockref_get_not_zero -----

    #[inline]
    fn get_not_dead(&self) -> bool {
        self.get_if_at_least(0)
    }

    #[inline]
    fn get_not_zero(&self) -> bool {
        self.get_if_at_least(1)
    }

    // ----- lockref_put_or_lock, and its n-reference form -----

    #[inline]
    fn put_or_lock(&self) -> Option<()> {
        self.put_many_or_lock(1)
    }

    /// Drops `n` references if more than `n` are held (or the count is
    /// saturated); else returns `Some` with the lock held and nothing
    /// changed, for the caller to decide with the exact count.
    #[inline]
    fn put_many_or_lock(&self, n: u32) -> Option<()> {
        self.stats.record(Event::Operation);
        if n == 0 || n >= crate::SATURATED {
            // Nothing to drop, or more than a live count can hold: decide
            // under the lock.
            return self.put_many_locked(n);
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
            Attempt::Swapped(_) | Attempt::CountOutOfRange(SATURATED_I32) => None,
            Attempt::CountOutOfRange(_) | Attempt::GaveUp(_) => {
                // Nothing was written: the references are still ours.
                self.stats.retract(Event::Lockless);
                self.put_many_locked(n as u32)
            }
        }
    }

    #[inline]
    unsafe fn put_owned(&self) -> Result<u32, PutError> {
        // Safe on this word: a put at zero is refused before it writes.
        RawLockRefExact::put_return(self)
    }

    #[inline]
    unsafe fn put_many_owned(&self, n: u32) -> Result<u32, PutError> {
        if n == 0 || n >= crate::SATURATED {
            // Nothing to drop, or more than a live count holds: the
            // locked path decides (and refuses).
            return Err(PutError::NotPositive);
        }
        // Safe on this word, as `put_owned`: fewer than `n` held is
        // refused before it writes.
        self.put_return_many(n as i32)
    }

    #[inline]
    fn put_many_unless_last(&self, n: u32) -> Result<bool, PutError> {
        if n == 0 || n >= crate::SATURATED {
            // Nothing to drop, or more than a live count holds.
            return Err(PutError::NotPositive);
        }
        let n = n as i32;
        // Counted before the releasing compare-and-swap (see the module
        // docs), and retracted below if nothing was written.
        self.stats.record(Event::Operation);
        self.stats.record(Event::Lockless);
        // Release on success: as `put_return`.
        match self
            .word
            .attempt::<P>(&self.stats, Ordering::Release, -n, n + 1)
        {
            // Swapped: given up, not ours to touch. Saturated: nothing
            // was written, and a saturated object is never freed.
            Attempt::Swapped(_) | Attempt::CountOutOfRange(SATURATED_I32) => Ok(true),
            // The last (or fewer): nothing written, not counted.
            Attempt::CountOutOfRange(_) => {
                self.stats.retract(Event::Lockless);
                self.stats.retract(Event::Operation);
                Ok(false)
            }
            Attempt::GaveUp(why) => {
                self.stats.retract(Event::Lockless);
                self.stats.retract(Event::Operation);
                Err(why)
            }
        }
    }

    #[inline]
    unsafe fn put_many_and_kill(&self, n: u32) -> Result<bool, PutError> {
        if n == 0 || n >= crate::SATURATED {
            // Nothing to drop, or more than a live count holds.
            return Err(PutError::NotPositive);
        }
        // Counted before the compare-and-swap, as every put (on success
        // the object is the caller's, dead, but a count after a put is not
        // a habit to keep), and retracted below if nothing was written.
        self.stats.record(Event::Operation);
        self.stats.record(Event::Lockless);
        let killed = self.word.put_and_kill::<P>(&self.stats, n as i32);
        if killed != Ok(true) {
            self.stats.retract(Event::Lockless);
            self.stats.retract(Event::Operation);
        }
        killed
    }

    #[inline]
    fn kill_if_zero_unlocked(&self) -> Result<bool, PutError> {
        self.stats.record(Event::Operation);
        let killed = self.word.kill_if_zero::<P>(&self.stats);
        match killed {
            Ok(_) => self.stats.record(Event::Lockless),
            Err(_) => self.stats.record(Event::Fallback),
        }
        killed
    }

    // ----- the lock -----

    /// `spin_lock`: waits for the lock (spinning, then sleeping in `K`).
    #[inline]
    fn lock(&self) {
        self.stats.record(Event::Operation);
        self.lock_for_fallback();
    }

    /// `spin_trylock`: the lock if it is free now.
    #[inline]
    fn try_lock(&self) -> Option<()> {
        self.stats.record(Event::Operation);
        let taken = lock::try_lock(self.word.lock_word());
        if taken {
            self.stats.record(Event::LockAcquired);
        }
        taken.then_some(())
    }

    #[inline]
    unsafe fn unlock(&self, _: ()) {
        lock::unlock::<_, K>(self.word.lock_word());
    }

    // ----- under the lock -----

    #[inline]
    unsafe fn count_locked(&self) -> Option<u32> {
        live(self.word.count_locked())
    }

    #[inline]
    unsafe fn increment_locked(&self) -> Result<u32, CountError> {
        let old = self.word.count_locked();
        let new = incremented(old).ok_or(CountError::Dead)?;
        self.word.set_count_locked(old, new);
        Ok(new as u32)
    }

    #[inline]
    unsafe fn decrement_by_locked(&self, n: u32) -> Result<u32, CountError> {
        let old = self.word.count_locked();
        if old < 0 {
            return Err(CountError::Dead);
        }
        if n == 1 {
            // The common case, `dput`'s `count--`.
            let new = decremented(old).ok_or(CountError::Underflow)?;
            self.word.set_count_locked(old, new);
            return Ok(new as u32);
        }
        if old == SATURATED_I32 {
            return Ok(crate::SATURATED);
        }
        if (old as u32) < n {
            return Err(CountError::Underflow);
        }
        let new = old - n as i32;
        self.word.set_count_locked(old, new);
        Ok(new as u32)
    }

    #[inline]
    unsafe fn kill_if_zero_locked(&self) -> bool {
        // The count is frozen under this word's lock: the check is exact.
        let zero = self.word.count_locked() == 0;
        if zero {
            self.word.set_count_locked(0, DEAD);
        }
        zero
    }
}

// SAFETY: no lockless update lands while the lock is held: every one is a
// compare-and-swap of the whole word from a value whose lock half reads
// free (`cas_word.rs`), and the lock-only word has none.
unsafe impl<P: Policy, K: Park> RawLockRefExact for CasWord<P, K> {
    // ----- lockref_put_return -----

    /// Drops a reference without ever taking the lock: the new count, or
    /// why not (nothing changed).
    #[inline]
    fn put_return(&self) -> Result<u32, PutError> {
        self.put_return_many(1)
    }

    #[inline]
    unsafe fn set_count_locked(&self, count: u32) -> Result<(), CountError> {
        let old = self.word.count_locked();
        if old < 0 {
            return Err(CountError::Dead);
        }
        if count > crate::SATURATED {
            return Err(CountError::OutOfRange);
        }
        if old != SATURATED_I32 {
            self.word.set_count_locked(old, count as i32);
        }
        Ok(())
    }

    #[inline]
    unsafe fn revive_locked(&self, count: u32) -> Result<(), CountError> {
        let old = self.word.count_locked();
        if old >= 0 {
            return Err(CountError::NotDead);
        }
        if count > crate::SATURATED {
            return Err(CountError::OutOfRange);
        }
        self.word.set_count_locked(old, count as i32);
        Ok(())
    }

    #[inline]
    unsafe fn revive(&self, count: u32) -> Result<(), CountError> {
        if count > crate::SATURATED {
            return Err(CountError::OutOfRange);
        }
        self.stats.record(Event::Operation);
        match self.word.revive::<P>(&self.stats, count as i32) {
            Ok(true) => {
                self.stats.record(Event::Lockless);
                Ok(())
            }
            Ok(false) => Err(CountError::NotDead),
            Err(_) => {
                self.stats.record(Event::Fallback);
                self.lock_for_fallback();
                // SAFETY: the lock is held; the rest is the caller's.
                let revived = unsafe { self.revive_locked(count) };
                // SAFETY: taken just above.
                unsafe { self.unlock(()) };
                revived
            }
        }
    }

    #[inline]
    unsafe fn mark_dead_locked(&self) {
        let old = self.word.count_locked();
        if old != SATURATED_I32 {
            self.word.set_count_locked(old, DEAD);
        }
    }
}

/// The locked versions, cold and out of line, and the one body of
/// `get_not_dead` and `get_not_zero`.
impl<P: Policy, K: Park> CasWord<P, K> {
    /// `put_return` of `n` references, `1 .. SATURATED`: the count left,
    /// or why not (nothing changed).
    #[inline]
    fn put_return_many(&self, n: i32) -> Result<u32, PutError> {
        self.stats.record(Event::Operation);
        // Counted before the releasing compare-and-swap (see the module
        // docs), and retracted below if the attempt gives up.
        self.stats.record(Event::Lockless);
        // Release on success: our uses of the object happen before whoever
        // sees the count reach zero and frees it (as `Arc::drop`).
        match self
            .word
            .attempt::<P>(&self.stats, Ordering::Release, -n, n)
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
                if count == SATURATED_I32 {
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

    /// Takes the lock for a locked version (or for `lock`), counting the
    /// acquisition.
    #[inline]
    fn lock_for_fallback(&self) {
        lock::lock::<_, K>(self.word.lock_word());
        self.stats.record(Event::LockAcquired);
    }

    /// `get` under the lock.
    #[cold]
    #[inline(never)]
    fn get_locked(&self) {
        if !self.get_if_at_least_locked(0) {
            get_on_dead();
        }
    }

    /// Takes a reference if the count is at least `min` (0 for
    /// `get_not_dead`, 1 for `get_not_zero`).
    #[inline]
    fn get_if_at_least(&self, min: i32) -> bool {
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
                if count == SATURATED_I32 {
                    // Saturated: a reference without a write, with the
                    // Acquire the compare-and-swap would have given.
                    acquire_fence_after!(self.word.lock_word());
                    true
                } else {
                    false
                }
            }
            Attempt::GaveUp(_) => self.get_if_at_least_locked(min),
        }
    }

    /// [`get_if_at_least`](Self::get_if_at_least) under the lock.
    #[cold]
    #[inline(never)]
    fn get_if_at_least_locked(&self, min: i32) -> bool {
        self.stats.record(Event::Fallback);
        self.lock_for_fallback();
        let count = self.word.count_locked();
        let taken = match incremented(count) {
            Some(new) if count >= min => {
                self.word.set_count_locked(count, new);
                true
            }
            _ => false,
        };
        lock::unlock::<_, K>(self.word.lock_word());
        taken
    }

    /// `put_many_or_lock` under the lock.
    #[cold]
    #[inline(never)]
    fn put_many_locked(&self, n: u32) -> Option<()> {
        self.stats.record(Event::Fallback);
        self.lock_for_fallback();
        let count = self.word.count_locked();
        if count == SATURATED_I32 && n > 0 {
            // Saturated: the references dropped, the count stays.
            lock::unlock::<_, K>(self.word.lock_word());
            return None;
        }
        if n > 0 && count > 0 && count as u32 > n {
            self.word.set_count_locked(count, count - n as i32);
            lock::unlock::<_, K>(self.word.lock_word());
            return None;
        }
        Some(())
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
            .field(
                "count",
                &crate::raw::count::ShowCount(RawLockRef::count(self)),
            )
            .finish_non_exhaustive()
    }
}
