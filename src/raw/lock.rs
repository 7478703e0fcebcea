//! The lock half: two bits at the bottom of a word's top 32 bits, `LOCKED`
//! and `PARKED` (see the word layout in the crate docs). A test-and-set
//! lock whose waiters spin a short, bounded while and then sleep in the
//! word's [`Park`] (with `std`, `parking_lot_core`), as `parking_lot`'s
//! mutex does.
//!
//! # Why not a ticket lock
//!
//! The lock was a fair ticket spinlock, as the kernel's was. In user space
//! its waiters cannot stop spinning: the holder, or the owner of the next
//! ticket (whom every later waiter must wait for), can lose its CPU for a
//! time slice while the rest spin. With threads outnumbering CPUs, one hot
//! entry of the table that cycled through zero fell to 0.01x of a dashmap
//! store. A queue in FIFO order cannot let a waiter sleep either: the
//! lock would wait, held, for the sleeping next ticket to wake. So the lock
//! is taken by whoever finds it free (barging), and fairness is eventual:
//! an unlock that wakes a sleeper hands the lock to it directly when the
//! [`Park`] asks for fairness (`parking_lot_core` does about once every
//! 0.5 ms per lock), so no sleeper starves.
//!
//! # Invariants
//!
//! - `LOCKED` is set by the holder's acquisition (a `fetch_or`, or a
//!   hand-off) and cleared only by its release.
//! - `PARKED` is set by a waiter before it sleeps (maybe needlessly: the
//!   lock may be free by then, and it then sleeps not) and cleared only by
//!   an unlock that found no sleeper left, under the park's queue lock. So
//!   while a thread sleeps on the word, `PARKED` is set: an unlock that
//!   finds it clear has no one to wake and pays one test of the word.
//! - The unlock that sees `PARKED` wakes a sleeper *before* it releases the
//!   lock (in the park's callback): nothing touches the word after the
//!   releasing operation, since another thread may free the object then.

use crate::park::{Park, Parked};
use crate::sync::{spin_loop, yield_cpu, Ordering, SpinThenYield};

/// The lock is held.
const LOCKED: u32 = 1;
/// A waiter sleeps, or is about to, on the word.
const PARKED: u32 = 2;
/// Rounds a waiter waits for a held lock before it sleeps, while no other
/// waiter sleeps (as `parking_lot`'s `SpinWait`): the first
/// [`SPIN_ROUNDS`] spin 2, 4 and 8 times (a spin hint each), the rest
/// yield the CPU, a few microseconds in all (a critical section of this
/// crate's users is a handful of writes). Measured on the `lock` bench
/// (2-CPU Intel Xeon VM): 100 single spin hints instead gave 0.25x-0.44x
/// of `parking_lot::Mutex` at 2 to 8 threads, this 0.83x-0.88x. One round
/// under loom, whose spin hint is a yield: the models reach the sleep at
/// once.
#[cfg(not(lockref_loom))]
const WAIT_ROUNDS: u32 = 10;
#[cfg(lockref_loom)]
const WAIT_ROUNDS: u32 = 1;
/// The rounds of [`WAIT_ROUNDS`] that spin; the rest yield.
const SPIN_ROUNDS: u32 = 3;

/// One round of a waiter's wait (`round` from 1): spins `2^round` times
/// for the first [`SPIN_ROUNDS`], then yields the CPU (with `std`; without,
/// or under loom, one spin hint).
#[inline]
fn wait_round(round: u32) {
    if round <= SPIN_ROUNDS && !cfg!(lockref_loom) {
        for _ in 0..1_u32 << round {
            spin_loop();
        }
    } else {
        yield_cpu();
    }
}

/// An atomic word whose top 32 bits are the lock half: the lockref word
/// itself, or a lone 32-bit lock in the lock-only build.
pub(crate) trait LockWord {
    /// The integer the word holds.
    type Int: Copy + core::ops::BitAnd<Output = Self::Int>;
    /// The word's `load`.
    fn load(&self, order: Ordering) -> Self::Int;
    /// The word's `fetch_or`.
    fn fetch_or(&self, bits: Self::Int, order: Ordering) -> Self::Int;
    /// The word's `fetch_and`.
    fn fetch_and(&self, bits: Self::Int, order: Ordering) -> Self::Int;
    /// The word's weak `compare_exchange_weak`.
    fn compare_exchange_weak(
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
    /// Every bit but the lock-half bits `lock`.
    fn all_but(lock: u32) -> Self::Int;
    /// The address of the word, the key its waiters sleep on.
    fn key(&self) -> usize;
}

/// Implements [`LockWord`] for an atomic integer whose top 32 bits are the
/// lock half: the same code for both words, only the type differs.
macro_rules! lock_word {
    ($atomic:ty, $int:ty) => {
        impl $crate::raw::lock::LockWord for $atomic {
            type Int = $int;

            #[inline(always)]
            fn load(&self, order: $crate::sync::Ordering) -> $int {
                <$atomic>::load(self, order)
            }

            #[inline(always)]
            fn fetch_or(&self, bits: $int, order: $crate::sync::Ordering) -> $int {
                <$atomic>::fetch_or(self, bits, order)
            }

            #[inline(always)]
            fn fetch_and(&self, bits: $int, order: $crate::sync::Ordering) -> $int {
                <$atomic>::fetch_and(self, bits, order)
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
            fn lock_half(word: $int) -> u32 {
                (word >> (<$int>::BITS - 32)) as u32
            }

            #[inline(always)]
            fn lock_bits(lock: u32) -> $int {
                <$int>::from(lock) << (<$int>::BITS - 32)
            }

            #[inline(always)]
            fn all_but(lock: u32) -> $int {
                !(<$int>::from(lock) << (<$int>::BITS - 32))
            }

            #[inline(always)]
            fn key(&self) -> usize {
                ::core::ptr::from_ref(self) as usize
            }
        }
    };
}
pub(crate) use lock_word;

/// The lock half of an unlocked word.
pub(crate) const UNLOCKED: u32 = 0;

/// Whether a lock half reads unlocked (a sleeper may still be flagged).
#[inline(always)]
pub(crate) fn is_free(lock: u32) -> bool {
    lock & LOCKED == 0
}

/// Whether a lock half reads held, for white-box tests.
#[cfg(any(test, lockref_white_box))]
pub(crate) fn is_held<W: LockWord>(word: &W) -> bool {
    // Relaxed: a snapshot.
    !is_free(W::lock_half(word.load(Ordering::Relaxed)))
}

/// Whether a lock half flags a sleeper, for white-box tests.
#[cfg(any(test, lockref_white_box))]
pub(crate) fn flags_a_sleeper<W: LockWord>(word: &W) -> bool {
    // Relaxed: a snapshot.
    W::lock_half(word.load(Ordering::Relaxed)) & PARKED != 0
}

/// Takes the lock if it is free now: one `fetch_or` (`lock bts` on x86),
/// which a lockless update of the count half cannot make fail.
#[inline]
pub(crate) fn try_lock<W: LockWord>(word: &W) -> bool {
    // Acquire: pairs with the releasing unlock of the previous holder.
    is_free(W::lock_half(
        word.fetch_or(W::lock_bits(LOCKED), Ordering::Acquire),
    ))
}

/// Takes the lock, waiting: spinning a while, then sleeping in `K`.
#[inline]
pub(crate) fn lock<W: LockWord, K: Park>(word: &W) {
    if !try_lock(word) {
        lock_contended::<W, K>(word);
    }
}

/// The lock was held at the first try. With a [`Park`] that sleeps: waits
/// [`WAIT_ROUNDS`] rounds (spinning, then yielding), a look at the lock
/// after each, while no other waiter sleeps, then sleeps until an unlock
/// wakes it, and looks again; a waiter that finds a sleeper flagged sleeps at once, as
/// `parking_lot`'s mutex does, so that on a busy machine the waiters do
/// not take the CPU from the holder. With one that does not, spins (and
/// yields, with `std`) until the lock is free.
#[cold]
#[inline(never)]
fn lock_contended<W: LockWord, K: Park>(word: &W) {
    let mut spinner = SpinThenYield::new();
    let mut rounds = 0;
    loop {
        // Relaxed: a look; `try_lock` decides and orders.
        let lock = W::lock_half(word.load(Ordering::Relaxed));
        if is_free(lock) {
            if try_lock(word) {
                return;
            }
            continue;
        }
        if !K::SLEEPS {
            spinner.wait();
            continue;
        }
        if lock & PARKED == 0 && rounds < WAIT_ROUNDS {
            rounds += 1;
            wait_round(rounds);
            continue;
        }
        if lock & PARKED == 0 {
            // Relaxed: the park's queue lock orders this flag with the
            // unlock's look at it (see `unlock_contended`). Set whether or
            // not the lock is still held: a needless flag costs one look
            // at the queue.
            word.fetch_or(W::lock_bits(PARKED), Ordering::Relaxed);
        }
        // Sleeps only while the lock is held and a sleeper is flagged,
        // checked under the park's queue lock: an unlock that comes after
        // the check finds this thread queued.
        let parked = K::park(word.key(), || {
            // Relaxed: under the queue lock, which the unlock takes after
            // its look at the flag (coherence orders the rest).
            let lock = W::lock_half(word.load(Ordering::Relaxed));
            !is_free(lock) && lock & PARKED != 0
        });
        if parked == Parked::HandedOff {
            // Acquire: pairs with the hand-off's releasing write.
            word.load(Ordering::Acquire);
            return;
        }
        rounds = 0;
    }
}

/// Releases the lock. One look at the word when no thread sleeps on it.
#[inline]
pub(crate) fn unlock<W: LockWord, K: Park>(word: &W) {
    if !K::SLEEPS {
        // Release: everything written under the lock happens before the
        // next holder's Acquire and any lockless update after.
        word.fetch_and(W::all_but(LOCKED), Ordering::Release);
        return;
    }
    // Relaxed: the compare-and-swap checks it.
    let mut old = word.load(Ordering::Relaxed);
    loop {
        if W::lock_half(old) & PARKED != 0 {
            unlock_contended::<W, K>(word);
            return;
        }
        // Release: as above. The swap fails if a waiter flags itself
        // meanwhile (or, on the `fetch_add` word, a count lands): look
        // again.
        match word.compare_exchange_weak(
            old,
            old & W::all_but(LOCKED),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => return,
            Err(actual) => old = actual,
        }
    }
}

/// A sleeper is flagged: wakes one, then releases the lock or hands it to
/// the woken thread, inside the park's callback, with the queue lock held.
#[cold]
#[inline(never)]
fn unlock_contended<W: LockWord, K: Park>(word: &W) {
    K::unpark_one(word.key(), |found| {
        // Nothing touches the word after the write that releases the lock
        // (another thread may take it and free the object): the write is
        // the last thing here.
        // The sleeper flag goes with the last sleeper.
        let clear_flag = if found.more { 0 } else { PARKED };
        if found.woke && found.be_fair {
            // Hand off: the lock stays held, for the woken thread.
            // Release: its Acquire load after waking pairs with this.
            word.fetch_and(W::all_but(clear_flag), Ordering::Release);
            true
        } else {
            // Release: as in `unlock`.
            word.fetch_and(W::all_but(LOCKED | clear_flag), Ordering::Release);
            false
        }
    });
}
