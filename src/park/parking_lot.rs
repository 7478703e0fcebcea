//! [`ParkingLot`]: lock waiters sleep in `parking_lot_core`'s table of
//! queues, keyed by the lock word's address (a futex on Linux). A
//! well-kept library (it is `parking_lot`'s and `std`'s model) rather than
//! a futex of our own: it queues per address in a hashed table, so a word
//! needs no queue of its own (eight bytes stay eight), works on every
//! platform `std` does, and reports whether sleepers remain and when to be
//! fair, which the unlock needs.

use parking_lot_core::{ParkResult, UnparkToken, DEFAULT_PARK_TOKEN};

use super::{Park, Parked, Unparked};

/// The unpark token of a wake that handed the lock over.
const HANDED_OFF: UnparkToken = UnparkToken(1);
/// The unpark token of a wake that did not.
const WOKEN: UnparkToken = UnparkToken(0);

/// Sleeps in `parking_lot_core` (feature `std`): the default with `std`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ParkingLot;

// SAFETY: `parking_lot_core::park` runs `validate` under the key's bucket
// lock and queues the thread under the same lock; `unpark_one` takes that
// lock, dequeues, runs the callback under it with the queue's state, and
// wakes the thread after, passing the callback's token, which `park`
// returns. Neither callback here panics or reaches a lock.
unsafe impl Park for ParkingLot {
    const SLEEPS: bool = true;

    #[inline]
    fn park(key: usize, still_wait: impl FnOnce() -> bool) -> Parked {
        // SAFETY: the key is the address of a lock word, which only this
        // crate's lock parks on; the callbacks do not panic and do not
        // call into `parking_lot_core`.
        let parked = unsafe {
            parking_lot_core::park(key, still_wait, || {}, |_, _| {}, DEFAULT_PARK_TOKEN, None)
        };
        match parked {
            ParkResult::Unparked(HANDED_OFF) => Parked::HandedOff,
            ParkResult::Unparked(_) => Parked::Woken,
            // No timeout is given, so `Invalid` (the check said no) is the
            // only other outcome.
            ParkResult::Invalid | ParkResult::TimedOut => Parked::Skipped,
        }
    }

    #[inline]
    fn unpark_one(key: usize, callback: impl FnOnce(Unparked) -> bool) {
        // SAFETY: as in `park`.
        unsafe {
            parking_lot_core::unpark_one(key, |found| {
                let handed = callback(Unparked {
                    woke: found.unparked_threads > 0,
                    more: found.have_more_threads,
                    be_fair: found.be_fair,
                });
                if handed {
                    HANDED_OFF
                } else {
                    WOKEN
                }
            });
        }
    }
}
