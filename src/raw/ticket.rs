//! The lock half: a 32-bit ticket spinlock, `owner` in its low 16 bits and
//! `next` in its high 16 (see the word layout in the crate docs).
//!
//! Unlocked exactly when `owner == next`. Locking draws a ticket with one
//! `fetch_add` and waits until `owner` reaches it; unlocking advances
//! `owner`. Waiters are served first come, first served, so a stream of
//! lockers cannot starve one of them, which a test-and-set lock allows and
//! the slow paths of a cache (kill, rename, a revalidation under the lock)
//! would hit. An MCS or queued lock would spin on local lines, but needs a
//! queue node per waiter and does not fit beside a count in 64 bits. The
//! known weakness of a ticket lock is a preempted waiter whose turn comes
//! (everyone behind it waits a time slice): with `std`, waiters yield the
//! CPU after spinning a while, which bounds that loss when threads outnumber
//! cores (unit tests do the same).
//!
//! Tickets are 16 bits, so at most [`MAX_TICKETS_OUT`] (65 535) may be out
//! at once, the holder's included: a 65 536th would wrap `next` onto
//! `owner`, and the word would read unlocked with the lock held. Nothing
//! bounds user threads the way the CPU count bounds the kernel's ticket
//! locks, so the draw is a compare-and-swap that refuses to pass the cap:
//! a locker that finds every ticket out waits (spins, then yields with
//! `std`) until one is returned, then draws. No race can pass the cap,
//! since the check and the draw are one atomic step.
//!
//! The lock half is the *top* half of its word, so the carry out of `next`
//! when a ticket is drawn at 0xffff falls off the word instead of landing in
//! another field. Owner's wrap is handled in [`unlock`].

use crate::sync::{Ordering, SpinThenYield};

/// What is added to the lock half to draw a ticket.
const TICKET: u32 = 1 << 16;

/// The most tickets out at once: the holder's and its waiters'.
pub(crate) const MAX_TICKETS_OUT: u16 = u16::MAX;

/// An atomic word whose top 32 bits are the lock half: the lockref word
/// itself, or a lone 32-bit lock in the lock-only build.
pub(crate) trait LockWord {
    /// The integer the word holds.
    type Int: Copy;
    /// The word's `load`.
    fn load(&self, order: Ordering) -> Self::Int;
    /// The word's `fetch_add` (wrapping).
    fn fetch_add(&self, add: Self::Int, order: Ordering) -> Self::Int;
    /// The word's weak `compare_exchange_weak`.
    fn compare_exchange_weak(
        &self,
        current: Self::Int,
        new: Self::Int,
        success: Ordering,
        failure: Ordering,
    ) -> Result<Self::Int, Self::Int>;
    /// The word's strong `compare_exchange`.
    fn compare_exchange(
        &self,
        current: Self::Int,
        new: Self::Int,
        success: Ordering,
        failure: Ordering,
    ) -> Result<Self::Int, Self::Int>;
    /// The lock half of a word value.
    fn lock_half(word: Self::Int) -> u32;
    /// A lock-half quantity placed where the lock half lives in the word.
    fn lock_bits(lock: u32) -> Self::Int;
    /// Wrapping addition on the word's integer.
    fn wrapping_add(a: Self::Int, b: Self::Int) -> Self::Int;
}

/// Implements [`LockWord`] for an atomic integer whose top 32 bits are the
/// lock half: the same code for both words, only the type differs.
macro_rules! lock_word {
    ($atomic:ty, $int:ty) => {
        impl $crate::raw::ticket::LockWord for $atomic {
            type Int = $int;

            #[inline(always)]
            fn load(&self, order: $crate::sync::Ordering) -> $int {
                <$atomic>::load(self, order)
            }

            #[inline(always)]
            fn fetch_add(&self, add: $int, order: $crate::sync::Ordering) -> $int {
                <$atomic>::fetch_add(self, add, order)
            }

            #[inline(always)]
            fn compare_exchange_weak(
                &self,
                current: $int,
                new: $int,
                success: $crate::sync::Ordering,
                failure: $crate::sync::Ordering,
            ) -> Result<$int, $int> {
                <$atomic>::compare_exchange_weak(self, current, new, success, failure)
            }

            #[inline(always)]
            fn compare_exchange(
                &self,
                current: $int,
                new: $int,
                success: $crate::sync::Ordering,
                failure: $crate::sync::Ordering,
            ) -> Result<$int, $int> {
                <$atomic>::compare_exchange(self, current, new, success, failure)
            }

            #[inline(always)]
            fn lock_half(word: $int) -> u32 {
                (word >> (<$int>::BITS - 32)) as u32
            }

            #[inline(always)]
            fn lock_bits(lock: u32) -> $int {
                <$int>::from(lock) << (<$int>::BITS - 32)
            }

            #[inline(always)]
            fn wrapping_add(a: $int, b: $int) -> $int {
                a.wrapping_add(b)
            }
        }
    };
}
pub(crate) use lock_word;

/// The ticket being served.
#[inline(always)]
fn owner(lock: u32) -> u16 {
    lock as u16
}

/// The next ticket to be drawn.
#[inline(always)]
fn next(lock: u32) -> u16 {
    (lock >> 16) as u16
}

/// The lock half of an unlocked word whose next ticket is `ticket`.
#[inline(always)]
pub(crate) const fn unlocked_at(ticket: u16) -> u32 {
    (ticket as u32) << 16 | ticket as u32
}

/// Whether a lock half reads unlocked.
#[inline(always)]
pub(crate) fn is_free(lock: u32) -> bool {
    owner(lock) == next(lock)
}

/// Tickets out: the holder's and its waiters' (zero when unlocked).
#[inline(always)]
pub(crate) fn tickets_out(lock: u32) -> u16 {
    next(lock).wrapping_sub(owner(lock))
}

/// `(owner, next)` of a word's lock half now, for white-box tests.
#[cfg(any(test, lockref_white_box))]
pub(crate) fn owner_and_next<W: LockWord>(word: &W) -> (u16, u16) {
    // Relaxed: a snapshot.
    let lock = W::lock_half(word.load(Ordering::Relaxed));
    (owner(lock), next(lock))
}

/// Draws a ticket and waits for it. Returns the ticket, which the holder
/// passes to [`unlock`].
#[inline]
pub(crate) fn lock<W: LockWord>(word: &W) -> u16 {
    // Relaxed: a guess; the compare-and-swap below decides and orders.
    let mut old = word.load(Ordering::Relaxed);
    loop {
        let lock = W::lock_half(old);
        if tickets_out(lock) == MAX_TICKETS_OUT {
            old = wait_for_a_ticket(word);
            continue;
        }
        // Acquire on success: when the ticket is served at once, this read
        // is the one that must see the previous holder's releasing unlock.
        // Relaxed on failure: the value read is only the next guess.
        match word.compare_exchange_weak(
            old,
            W::wrapping_add(old, W::lock_bits(TICKET)),
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                let ticket = next(lock);
                if owner(lock) != ticket {
                    wait(word, ticket);
                }
                return ticket;
            }
            Err(actual) => old = actual,
        }
    }
}

/// Every ticket is out: waits until one is returned. Returns the word last
/// read.
#[cold]
#[inline(never)]
fn wait_for_a_ticket<W: LockWord>(word: &W) -> W::Int {
    let mut waiter = SpinThenYield::new();
    loop {
        waiter.wait();
        // Relaxed: only a guess for the draw, which orders.
        let old = word.load(Ordering::Relaxed);
        if tickets_out(W::lock_half(old)) != MAX_TICKETS_OUT {
            return old;
        }
    }
}

#[cold]
#[inline(never)]
fn wait<W: LockWord>(word: &W, ticket: u16) {
    let mut waiter = SpinThenYield::new();
    loop {
        waiter.wait();
        // Acquire: the read that sees our turn must see everything the
        // previous holder wrote before its releasing unlock.
        if owner(W::lock_half(word.load(Ordering::Acquire))) == ticket {
            return;
        }
    }
}

/// Takes the lock if it is free right now, without waiting.
///
/// Fails only when the lock half is seen held: a compare-and-swap that
/// failed because a lockless update changed the count half meanwhile is
/// retried (each such failure means another thread's update completed, so
/// the retries end).
#[inline]
pub(crate) fn try_lock<W: LockWord>(word: &W) -> Option<u16> {
    // Relaxed: a guess; the compare-exchange below decides and orders.
    let mut old = word.load(Ordering::Relaxed);
    loop {
        let lock = W::lock_half(old);
        if !is_free(lock) {
            return None;
        }
        let new = W::wrapping_add(old, W::lock_bits(TICKET));
        // Acquire on success: as in `lock`. Relaxed on failure: the value
        // read is only the next guess.
        match word.compare_exchange(old, new, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return Some(next(lock)),
            Err(actual) => old = actual,
        }
    }
}

/// Releases the lock held with `ticket`.
#[inline]
pub(crate) fn unlock<W: LockWord>(word: &W, ticket: u16) {
    // Advance `owner` from `ticket` to `ticket + 1` (mod 2^16) by adding the
    // exact difference: 1, or 0xffff_0001 at the wrap, where the carry out
    // of `owner` cancels in `next` and the rest falls off the top of the
    // word. Only the holder changes `owner`, so the difference is exact;
    // concurrent ticket draws add to `next`, and additions commute.
    let delta = u32::from(ticket.wrapping_add(1)).wrapping_sub(u32::from(ticket));
    // Release: everything written under the lock (protected data, the
    // count) happens before the next holder's Acquire and before any
    // lockless operation that reads this value or a later one.
    word.fetch_add(W::lock_bits(delta), Ordering::Release);
}

/// Draws `n` tickets for nobody (waiters that never come), for white-box
/// tests of the cap. The caller returns them with [`return_tickets`].
#[cfg(any(test, lockref_white_box))]
pub(crate) fn draw_tickets<W: LockWord>(word: &W, n: u16) {
    // Relaxed: a test's setup, ordered by its joins.
    word.fetch_add(W::lock_bits(u32::from(n) << 16), Ordering::Relaxed);
}

/// Serves `n` tickets at once (each as its holder's unlock would), for
/// white-box tests: the caller owns those tickets.
#[cfg(any(test, lockref_white_box))]
pub(crate) fn return_tickets<W: LockWord>(word: &W, n: u16) {
    let owner = owner(W::lock_half(word.load(Ordering::Relaxed)));
    // As in `unlock`: the exact difference, carry cancelled in `next`.
    let delta = u32::from(owner.wrapping_add(n)).wrapping_sub(u32::from(owner));
    word.fetch_add(W::lock_bits(delta), Ordering::Release);
}
