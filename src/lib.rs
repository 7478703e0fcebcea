//! A spinlock and a reference count in one 64-bit word, after the Linux
//! kernel's `lockref`, for virtual-filesystem code written in Rust.
//!
//! [`LockRef<T>`] keeps a count that changes with one lockless
//! compare-and-swap while its lock is free, and a lock that guards a `T`
//! and the count together (its waiters spin a short while, then, with
//! `std`, sleep until the unlock wakes them: see [`park`]). Cache objects (dentries, inodes)
//! use the lockless path for the hot get/put traffic and the lock for the
//! rare state changes (kill, rename, revalidation) that must see a count no
//! one else can move.
//!
//! **Keeping a table of counted objects** (a FUSE inode map, an fd table, a
//! name cache)? See also `lockref-table`, this workspace's safe table on
//! these primitives (`table/` in the repository, with its own README):
//! lockless lookups, counted protocol ids, a keep-or-kill decision at zero
//! and a bounded LRU, with no `unsafe` for its user.
//!
//! ```
//! use lockref::{LockRef, PutOrLock};
//!
//! struct Dentry { name: String, hashed: bool }
//!
//! let d = LockRef::new(Dentry { name: "etc".into(), hashed: true });
//! d.get(); // a lookup's reference: one compare-and-swap
//! assert_eq!(d.put_return(), Ok(1));
//! // The last put decides under the lock, as dput does.
//! if let PutOrLock::Locked(mut g) = d.put_or_lock() {
//!     g.decrement().unwrap();
//!     if !g.hashed {
//!         g.mark_dead(); // then tear it down
//!     }
//! }
//! assert_eq!(d.count(), Some(0));
//! ```
//!
//! # Owned references
//!
//! [`CountedRef<T>`] owns a reference to an object that embeds its
//! `LockRef` ([`RefCounted`]): clone is `get`, drop the lockless put, and
//! the last reference decides under the lock whether the object stays at
//! zero or dies ([`Fate`]). [`PathRef`] holds two such references (a mount's
//! and a dentry's) and can be consumed whole. [`Unopened`] is the one-shot
//! token of an object allocated and not yet opened, [`Opened`] the counted
//! reference an open makes of it.
//!
//! # Words
//!
//! `LockRef<T, W>` is the data beside a word `W`, as `lock_api`'s
//! `Mutex<R, T>` is the data beside a `RawMutex`: [`RawLockRef`] is a
//! word's protocol (gets, puts, the lock, the count under it, the exact
//! kill), [`RawLockRefExact`] what only a word whose count is frozen under
//! its lock can do (the safe `put_return`, `set_count`, `mark_dead`). The
//! default word is [`CasWord<P>`], below; there is one [`LockRef`] and one
//! [`LockRefGuard`] for every word, and [`CountedRef`] runs on any.
//!
//! # Semantics
//!
//! See [`LockRef`] for the mapping from each kernel function. Departures
//! from the kernel:
//!
//! - **The count saturates** at [`SATURATED`] and then never moves (the
//!   kernel's `refcount_t`, not its lockref, which can wrap); dropping a
//!   reference at zero is refused with an error, never wrapped.
//! - **[`LockRef::get`] panics on a dead object** (the kernel increments a
//!   dead count blindly).
//! - **The lock's waiters sleep** (with `std`; [`park`]): the kernel may
//!   spin because it disables preemption while a spinlock is held, a user
//!   thread cannot. The lock is taken by whoever finds it free, and fair
//!   eventually (an unlock hands it to a sleeper about once every 0.5 ms),
//!   not a FIFO ticket lock: a ticket lock would wait, held, for its
//!   sleeping next ticket. It sits in the word's top half, the count in
//!   the bottom half; see [the word](#the-word).
//! - **Orderings are stronger where a Rust caller needs them to free**:
//!   the kernel's lockless updates are relaxed and rely on RCU; here the
//!   references taken from a possibly-unreferenced object (`get_not_zero`,
//!   `get_not_dead`) are `Acquire`, and puts are `Release` with `Acquire` at
//!   zero, as `Arc`. On x86 these cost nothing; see each operation.
//!
//! # The word
//!
//! The one description of the default word's layout ([`CasWord`]); the
//! code in `raw/` follows it.
//!
//! | bits   | field | meaning |
//! |--------|-------|---------|
//! | 0..32  | count | signed (states below) |
//! | 32     | `LOCKED` | the lock is held |
//! | 33     | `PARKED` | a waiter sleeps on the word, or is about to |
//! | 34..64 | zero |  |
//!
//! | state     | lock half       | count |
//! |-----------|-----------------|-------|
//! | unlocked  | `LOCKED` clear  | any; lockless updates allowed |
//! | locked    | `LOCKED` set    | any; only the holder changes it |
//! | live      | any             | `0 ..= SATURATED - 1` references (`0`: a cache may keep it) |
//! | dead      | any             | `< 0` (`-128` after `mark_dead`; the API reads `None`): no new references |
//! | saturated | any             | [`SATURATED`]: never changes again, the object is leaked |
//!
//! Taking the lock is one `fetch_or` of `LOCKED` (`lock bts` on x86), which
//! a lockless count update cannot make fail; an unlock that finds `PARKED`
//! clear is one compare-and-swap, and one that finds it set wakes a sleeper
//! first. Without a 64-bit compare-and-swap the lock half is its own
//! 32-bit word and the count sits beside it, 8 bytes in all.
//!
//! # Contention policies
//!
//! The lockless loop's behaviour under contention is the type parameter
//! `P` of the word, [`CasWord<P>`] (`LockRef<T, CasWord<P>>`): [`policy::KernelRetry`] (the kernel's loop),
//! [`policy::WaitUnlock`] (spins while the lock is held, bounded) and
//! [`policy::ExpBackoff`] (exponential backoff on failed compare-and-swap).
//! Every policy is bounded by the loop, so none can spin forever.
//!
//! # Targets
//!
//! With a 64-bit compare-and-swap (`target_has_atomic = "64"`) the lockless
//! paths are compiled in ([`LOCKLESS`] is `true`). Without one (for example
//! `thumbv7em-none-eabihf`), every operation takes the lock, with the same
//! API and semantics, and [`LockRef::put_return`] always fails, as in the
//! kernel without `CONFIG_ARCH_USE_CMPXCHG_LOCKREF`. `--cfg
//! lockref_lock_only` selects that build on any target, for testing.
//!
//! # Features
//!
//! | feature | what it does |
//! |---|---|
//! | `std` | lock waiters sleep (`parking_lot_core`) after spinning a short while, so the lock never convoys when threads outnumber CPUs ([`park`]); errors implement `std::error::Error` |
//! | `stats` | per-object counters of operations and the paths they took (`LockRef::stats`) |
//! | `loom` | with `--cfg lockref_loom`, every atomic, cell and spin hint comes from loom, for loom models of code built on the crate (loom is a dependency only then) |
//! | `unstable-add-word` | research, outside semver: `experimental::AddWord`, the `fetch_add` word (64-bit atomics only) |
//!
//! The crate is `#![no_std]` and has no default features.

#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(any(feature = "std", test, lockref_loom))]
extern crate std;

mod counted;
mod error;
mod guard;
mod last_put;
mod lockref;
pub mod park;
mod path_ref;
mod raw;
mod ref_counted;
mod stats;
mod sync;
mod unopened;
#[cfg(any(test, lockref_white_box))]
mod white_box;

pub use crate::counted::CountedRef;
pub use crate::error::{CountError, PutError};
pub use crate::guard::{LockRefGuard, PutOrLock};
pub use crate::lockref::LockRef;
pub use crate::path_ref::PathRef;
pub use crate::raw::count::SATURATED;
pub use crate::raw::policy;
pub use crate::raw::raw_lockref::{RawLockRef, RawLockRefExact};
pub use crate::raw::{CasWord, LOCKLESS};
pub use crate::ref_counted::{Fate, RefCounted};
#[cfg(feature = "stats")]
pub use crate::stats::StatsSnapshot;
pub use crate::unopened::{OpenCount, Openable, Opened, Unopened};

#[cfg(all(
    feature = "unstable-add-word",
    target_has_atomic = "64",
    not(lockref_lock_only)
))]
#[cfg_attr(docsrs, doc(cfg(feature = "unstable-add-word")))]
pub mod experimental;

// Layout: the lockref word is one 8-byte, 8-aligned unit, whichever
// implementation is compiled (loom's atomics are larger; stats add fields).
#[cfg(not(any(lockref_loom, feature = "stats")))]
const _: () = {
    static_assertions::assert_eq_size!(LockRef<()>, u64);
    static_assertions::assert_eq_align!(LockRef<()>, u64);
};

// Send and Sync exactly when they should be, as for `Mutex<T>`.
static_assertions::assert_impl_all!(LockRef<u32>: Send, Sync);
static_assertions::assert_impl_all!(LockRef<core::cell::Cell<u32>>: Send, Sync);
static_assertions::assert_not_impl_any!(LockRef<*const u8>: Send, Sync);
static_assertions::assert_not_impl_any!(LockRefGuard<'static, u32>: Send);
static_assertions::assert_impl_all!(LockRefGuard<'static, u32>: Sync);
static_assertions::assert_not_impl_any!(LockRefGuard<'static, core::cell::Cell<u32>>: Send, Sync);
static_assertions::assert_impl_all!(CasWord: Send, Sync);

#[cfg(test)]
mod tests;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
