//! The untyped lockref: a count and a ticket lock, without the data.
//!
//! Two implementations with one interface, chosen at compile time as the
//! kernel chooses with `CONFIG_ARCH_USE_CMPXCHG_LOCKREF`:
//!
//! - [`cas`]: one 64-bit word, lockless compare-and-swap fast paths;
//! - [`lock_only`]: for targets without a 64-bit compare-and-swap (or with
//!   `--cfg lockref_lock_only`, to test it on any host): every operation
//!   takes the lock.
//!
//! Both share the locked paths below, so an operation means the same under
//! the lock whichever implementation runs it.

use crate::count::{decremented, incremented};
use crate::stats::{Event, Stats};

pub(crate) mod ticket;

cfg_if::cfg_if! {
    if #[cfg(all(target_has_atomic = "64", not(lockref_lock_only)))] {
        mod cas;
        pub(crate) use cas::RawLockRef;
        /// Whether this build has the lockless compare-and-swap paths.
        ///
        /// ```
        /// # #[cfg(all(target_arch = "x86_64", not(lockref_lock_only)))]
        /// assert!(lockref::LOCKLESS);
        /// ```
        pub const LOCKLESS: bool = true;
    } else {
        mod lock_only;
        pub(crate) use lock_only::RawLockRef;
        /// Whether this build has the lockless compare-and-swap paths.
        ///
        /// ```
        /// assert!(!lockref::LOCKLESS);
        /// ```
        pub const LOCKLESS: bool = false;
    }
}

/// What the locked paths need from an implementation, and the lock
/// operations both implementations share.
pub(crate) trait Locked {
    /// The atomic word whose top half is the ticket lock.
    type Word: ticket::LockWord;
    fn lock_word(&self) -> &Self::Word;
    /// The count; only meaningful with the lock held.
    fn count_locked(&self) -> i32;
    /// Changes the count from `old` (its value now) to `new`; lock held.
    fn set_count_locked(&self, old: i32, new: i32);
    fn stats(&self) -> &Stats;

    #[inline]
    fn lock(&self) -> u16 {
        ticket::lock(self.lock_word())
    }

    #[inline]
    fn unlock(&self, ticket: u16) {
        ticket::unlock(self.lock_word(), ticket);
    }

    /// `lock` with the acquisition counted.
    #[inline]
    fn lock_counted(&self) -> u16 {
        let ticket = self.lock();
        self.stats().record(Event::Locked);
        ticket
    }

    /// Takes the lock (counted as an operation).
    #[inline]
    fn lock_op(&self) -> u16 {
        self.stats().record(Event::Op);
        self.lock_counted()
    }

    /// Takes the lock if it is free now (counted as an operation).
    #[inline]
    fn try_lock_op(&self) -> Option<u16> {
        self.stats().record(Event::Op);
        let ticket = ticket::try_lock(self.lock_word());
        if ticket.is_some() {
            self.stats().record(Event::Locked);
        }
        ticket
    }
}

/// `get` under the lock. Returns `false`, changing nothing, if dead.
#[cold]
#[inline(never)]
pub(crate) fn get_locked<R: Locked>(raw: &R) -> bool {
    get_at_least_locked(raw, 0)
}

/// Takes a reference under the lock if the count is at least `min` (1 for
/// `get_not_zero`, 0 for `get_not_dead`).
#[cold]
#[inline(never)]
pub(crate) fn get_at_least_locked<R: Locked>(raw: &R, min: i32) -> bool {
    let ticket = raw.lock_counted();
    let count = raw.count_locked();
    let taken = match incremented(count) {
        Some(new) if count >= min => {
            raw.set_count_locked(count, new);
            true
        }
        _ => false,
    };
    raw.unlock(ticket);
    taken
}

/// `put_or_lock` under the lock: decrements and returns `None` if the count
/// is above one, else returns the ticket with the lock still held.
#[cold]
#[inline(never)]
pub(crate) fn put_or_lock_locked<R: Locked>(raw: &R) -> Option<u16> {
    let ticket = raw.lock_counted();
    let count = raw.count_locked();
    match decremented(count) {
        Some(new) if count > 1 => {
            raw.set_count_locked(count, new);
            raw.unlock(ticket);
            None
        }
        _ => Some(ticket),
    }
}

/// The panic for `get` on a dead object: granting a reference to an object
/// being torn down would be a use-after-free.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn get_on_dead() -> ! {
    panic!("LockRef::get on a dead object (use get_not_dead where death is possible)")
}
