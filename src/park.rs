//! Where a lock waiter sleeps, and how an unlock wakes it: [`Park`].
//!
//! The lock of a lockref word spins a short, bounded while; then, if the
//! word's [`Park`] sleeps, the waiter goes to sleep until an unlock wakes
//! it. The kernel may spin on a lock because it disables preemption while
//! one is held (and, in a virtual machine, halts a waiting vCPU until the
//! holder kicks it). A user-space thread cannot: the holder may lose its
//! CPU for a whole time slice while every waiter spins, and `sched_yield`
//! does not give the CPU to it. With more threads than CPUs (a busy FUSE
//! or virtio-fs server) a spinning lock convoys; a sleeping one does not.
//!
//! | build | [`DefaultPark`] | a waiter, after its spins |
//! |---|---|---|
//! | `std` | `ParkingLot` | sleeps on the word's address (`parking_lot_core`, a futex on Linux); the unlock wakes one sleeper |
//! | no `std` | [`Spin`] | spins on (a kernel: with preemption off; a hypervisor: its own wait) |
//! | `--cfg lockref_loom` | loom's own | sleeps through loom, so that models explore the sleep and the wake |
//!
//! A `no_std` user with a way to sleep (a kernel's wait queues, a
//! hypervisor's halt and kick) implements [`Park`] and names it in the word:
//! `CasWord<Policy, MyPark>`. The lockless count paths never reach it.
//!
//! ```
//! use core::sync::atomic::{AtomicUsize, Ordering};
//! use lockref::park::{Park, Parked, Unparked};
//! use lockref::{policy::KernelRetry, CasWord, LockRef};
//!
//! /// A `no_std` waiter that spins, and counts how often it was asked to
//! /// sleep (a kernel would call its scheduler here).
//! struct CountingSpin;
//! static ASKED: AtomicUsize = AtomicUsize::new(0);
//!
//! // SAFETY: it never sleeps, so no wakeup can be lost: `park` returns at
//! // once (the lock looks again), and `unpark_one` runs the callback once,
//! // telling it no thread was woken and none sleeps.
//! unsafe impl Park for CountingSpin {
//!     const SLEEPS: bool = true;
//!     fn park(_key: usize, _still_wait: impl FnOnce() -> bool) -> Parked {
//!         ASKED.fetch_add(1, Ordering::Relaxed);
//!         core::hint::spin_loop();
//!         Parked::Skipped
//!     }
//!     fn unpark_one(_key: usize, callback: impl FnOnce(Unparked) -> bool) {
//!         callback(Unparked { woke: false, more: false, be_fair: false });
//!     }
//! }
//!
//! let r = LockRef::with_raw(0_u32, CasWord::<KernelRetry, CountingSpin>::new());
//! *r.lock() += 1;
//! assert_eq!(*r.lock(), 1);
//! ```

/// How a [`Park::park`] call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parked {
    /// The check said not to sleep: the caller looks at the lock again.
    Skipped,
    /// Woken (or woken spuriously): the caller looks at the lock again.
    Woken,
    /// Woken by an unlock that handed the lock over: the caller holds it.
    HandedOff,
}

/// What [`Park::unpark_one`] tells its callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unparked {
    /// A sleeper was taken off the queue, to be woken after the callback.
    pub woke: bool,
    /// Sleepers remain on the key after it.
    pub more: bool,
    /// The unlock should hand the lock to the woken thread rather than let
    /// any thread take it (eventual fairness: `parking_lot` says so about
    /// once every 0.5 ms per key).
    pub be_fair: bool,
}

/// A place for lock waiters to sleep, keyed by the lock's address (a
/// futex, `parking_lot_core`, a kernel's wait queue).
///
/// # Safety
///
/// The lock relies on these promises, so an implementation that breaks one
/// can lose a wakeup (a waiter sleeps forever) or hand the lock to two
/// threads:
///
/// - [`park`](Self::park) calls its check at most once, and sleeps only if
///   it returned `true`; the check and the going to sleep are one step
///   with respect to [`unpark_one`](Self::unpark_one) on the same key (a
///   lock held by both), so an unpark that follows a check that said
///   "sleep" finds the sleeper;
/// - `unpark_one` calls its callback exactly once, inside that same step,
///   with the truth about the queue, and wakes the sleeper it took off
///   (if any) after the callback; the sleeper's `park` returns
///   [`Parked::HandedOff`] exactly when the callback returned `true` and a
///   sleeper was woken;
/// - **a wake synchronizes**: everything the unparking thread did before
///   its callback returned (the holder's writes under the lock, and the
///   callback's own release or hand-off of it) happens before the woken
///   thread's `park` returns, as a mutex's unlock happens before the next
///   lock (a hand-off passes the lock with no other synchronization: a
///   park that only flips a flag the sleeper polls with `Relaxed` loads
///   lets the new holder race the old one's writes);
/// - **the key is only a number once the callback returns**: `key` is the
///   address of the lock word, and the object holding it may be freed as
///   soon as the callback has released the lock (another thread takes it
///   and frees), so `unpark_one` must not read or write through `key`
///   after its callback returns (a park that keeps its queue inside the
///   locked object, or touches the word to wake, is unsound);
/// - neither panics, and neither calls into the lock of the same key.
pub unsafe trait Park {
    /// Whether waiters sleep at all: `false` makes the lock spin only, and
    /// its unlock never look for sleepers (it compiles to the plain
    /// release).
    const SLEEPS: bool;

    /// Sleeps on `key` if `still_wait()` says so (see the trait's
    /// contract), until an [`unpark_one`](Self::unpark_one) on `key` wakes
    /// it (or spuriously).
    fn park(key: usize, still_wait: impl FnOnce() -> bool) -> Parked;

    /// Takes one sleeper of `key` off the queue, calls `callback` with what
    /// it found, and wakes the sleeper; `callback` returns whether the lock
    /// is handed to it.
    fn unpark_one(key: usize, callback: impl FnOnce(Unparked) -> bool);
}

/// Never sleeps: the waiter spins (with `std` or in tests, it yields the
/// CPU after a while). The default without `std`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spin;

// SAFETY: it never sleeps (`SLEEPS` is false, so the lock never calls it;
// if called, `park` skips and `unpark_one` reports an empty queue).
unsafe impl Park for Spin {
    const SLEEPS: bool = false;

    #[inline]
    fn park(_key: usize, _still_wait: impl FnOnce() -> bool) -> Parked {
        Parked::Skipped
    }

    #[inline]
    fn unpark_one(_key: usize, callback: impl FnOnce(Unparked) -> bool) {
        callback(Unparked {
            woke: false,
            more: false,
            be_fair: false,
        });
    }
}

#[cfg(all(feature = "std", not(lockref_loom)))]
mod parking_lot;
#[cfg(all(feature = "std", not(lockref_loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use self::parking_lot::ParkingLot;

#[cfg(all(lockref_loom, feature = "loom"))]
mod loom_park;
#[cfg(all(lockref_loom, feature = "loom"))]
pub use self::loom_park::LoomPark;

cfg_if::cfg_if! {
    if #[cfg(all(lockref_loom, feature = "loom"))] {
        /// Where this build's lock waiters sleep: through loom.
        pub type DefaultPark = LoomPark;
    } else if #[cfg(feature = "std")] {
        /// Where this build's lock waiters sleep: [`ParkingLot`].
        pub type DefaultPark = ParkingLot;
    } else {
        /// Where this build's lock waiters sleep: nowhere, they spin
        /// ([`Spin`]); a `no_std` user names its own [`Park`] in the word.
        pub type DefaultPark = Spin;
    }
}
