//! Research, not covered by semver (feature `unstable-add-word`, 64-bit
//! atomics only): [`AddWord`], a lockref word whose `get`, `get_not_dead`
//! and `put_owned` are one `fetch_add`/`fetch_sub` of the word, checked
//! afterwards, instead of a load and a compare-and-swap that can fail;
//! with the kernel's observable semantics where a single add can keep
//! them, and the list of where it cannot. It is a [`RawLockRef`] word:
//! `LockRef<T, AddWord>` and its guard are the same types as on the
//! default word, minus what needs [`RawLockRefExact`].
//!
//! [`RawLockRef`]: crate::RawLockRef
//! [`RawLockRefExact`]: crate::RawLockRefExact
//!
//! # The word
//!
//! One `AtomicU64`. The low 32 bits hold the count *biased*: count `c` is
//! stored as `BIAS + c`, so that a decrement at zero borrows inside the low
//! half instead of out of it. Bit 32 is the lock (a test-and-set spinlock,
//! not FIFO). The low half is split into regions:
//!
//! | stored (low 32 bits) | meaning |
//! |---|---|
//! | `0 .. BIAS` | below zero: only transiently, while a refused put is undone |
//! | `BIAS .. BIAS + SATURATED` | a live count, `0 .. SATURATED` |
//! | `BIAS + SATURATED .. DEAD_LOW` | saturated: never changes again; whoever sees it pins the count to the region's middle |
//! | `DEAD_LOW ..` | dead, stored as the region's middle `DEAD_STORED`; the transients of refused adds (above) and refused puts (below) land there and are undone |
//!
//! (`BIAS` = 2^30, [`SATURATED`](crate::SATURATED) = 2^29, `DEAD_LOW` = 3 * 2^30,
//! `DEAD_STORED` = 7 * 2^29.) Every region's resting value has at least
//! 2^29 values of headroom on each side: a live zero has 2^30 below it, a
//! pinned saturated count 3 * 2^28 on each side, a dead count 2^29 below
//! (before the saturated region) and 2^29 above (before a carry into the
//! lock bit). So no number of in-flight transients that real threads can
//! make moves a word from one region into another: a dead word stays dead
//! however many refused puts and lookups land on it at once. An add
//! on a dead count is undone by the thread that made it before it does
//! anything else with the word; an operation that finds the count
//! saturated pins it back to the middle of the saturated region (a
//! compare-and-swap of the count half), as `refcount_t` stores
//! `REFCOUNT_SATURATED`: whatever transients or counted puts landed near
//! the boundary meanwhile are erased, and a saturated count never comes
//! back into the live range, where puts of references taken uncounted
//! could reach zero. A carry out of the low half (into the lock) would need
//! 2^29 threads caught mid-operation at once: impossible with real
//! threads.
//!
//! # Invariant: nothing after the releasing read-modify-write
//!
//! As on the compare-and-swap word (`raw/`'s docs), an operation that
//! gives up a reference touches nothing of the object after the
//! read-modify-write that gives it up, but where the object cannot be
//! freed under it:
//!
//! - `put_owned`'s `fetch_sub` that leaves a live count above zero is its
//!   last touch; `put_or_lock`'s and `put_many_or_lock`'s compare-and-swap
//!   too (the word has no statistics to count after it);
//! - the thread that brought the count to zero is the one that decides:
//!   its `Acquire` (a fence, or under ThreadSanitizer a load of the word)
//!   and what it does next are its own;
//! - a saturated count is never freed (it never leaves its region), so the
//!   pin back to the region's middle may follow the put;
//! - a put refused on a dead count (or, after a broken contract, below
//!   zero) gave nothing up: its undo touches only what the caller's own
//!   guarantee (a grace section) keeps valid, and the dead region's
//!   headroom keeps the transient dead.
//!
//! `src/tests/release.rs` frees the object on the thread that sees zero
//! while the other holders put, under Miri and ThreadSanitizer, and
//! `loom-tests/tests/release.rs` models the same with the free.
//!
//! # What changes against [`CasWord`](crate::CasWord)
//!
//! Adds land *while the lock is held*: the lock serializes holders and
//! guards the data, but no longer freezes the count. So:
//!
//! | operation | [`CasWord`](crate::CasWord) (compare-and-swap) | [`AddWord`] |
//! |---|---|---|
//! | `get` | CAS loop, falls back to the lock | one `lock xadd`; never fails |
//! | `get_not_dead` | CAS loop; fails on dead | one `lock xadd`; on dead, undone and fails. A revive from zero succeeds, locked or not |
//! | `get_not_zero` | CAS loop | CAS loop (not an add: a refused add at zero would be a transient count of one that makes a concurrent [`kill_if_zero`](crate::LockRefGuard::kill_if_zero) miss a death) |
//! | `put_return` (safe) / `put_owned` (`unsafe`) | CAS loop; refuses while locked; `put_return` is safe (refuses at zero) | `put_owned` only: one `lock xadd`; reports the new count, zero included, locked or not; the caller must own a reference, because a put at zero lands before it is checked |
//! | `put_or_lock`, `put_many_or_lock` | CAS loop; lockless unless last | CAS loop, not an add: "not the last" must be decided before the decrement, and decrementing first shows a zero that did not happen (the counterexample: the loom model `a_put_that_undoes_shows_a_false_zero`); lockless while locked too |
//! | guard `count` | frozen while held | a snapshot, at least the references the holder knows of, read by a read-modify-write that changes nothing so that it is ordered with the gets and puts landing under the lock |
//! | guard `increment`/`decrement`/`decrement_by` | plain, under the lock | an atomic add (`AcqRel`: a lookup may take a reference on the count it raises before the unlock, so it publishes what the holder wrote, as the unlock does on the CAS word), and a CAS loop (refuses at zero without a transient); other adds land meanwhile |
//! | guard `set_count` | absolute | **not offered** (would erase concurrent adds): not a `RawLockRefExact` |
//! | guard `mark_dead` | unconditional (and `kill_if_zero`) | only [`kill_if_zero`](crate::LockRefGuard::kill_if_zero): a CAS from zero to dead, which fails if a lookup revived the object meanwhile |
//!
//! The decisions that stay exact: "zero, so kill" is exact because it is
//! one CAS from the zero value to the dead value (a lookup's add either
//! lands first, and the kill fails, or lands on dead, and the lookup
//! fails); "dead" is final. A holder cannot conclude "only my references
//! remain" from a count read under the lock, which the kernel's users of
//! lockref do not do without the re-check that `kill_if_zero` is.
//!
//! A put that reaches zero without the lock is only safe for objects whose
//! memory outlives a racing revive-and-put (an RCU or epoch grace period),
//! the same condition as the kernel's `fast_dput` and
//! [`RefCounted::grace`](crate::RefCounted::grace).
//!
//! # Behind `CountedRef`
//!
//! A [`RefCounted`](crate::RefCounted) object can embed
//! `LockRef<Data, AddWord>` (`type Word = AddWord`) and be counted by
//! [`CountedRef`](crate::CountedRef): clone is one `lock xadd`; a drop is
//! `put_or_lock` (a CAS loop) or, for types with a grace section, one
//! `lock xadd` (`put_owned`); the last put's kill is
//! [`kill_if_zero`](crate::LockRefGuard::kill_if_zero), so a lookup that
//! revives the object while its last put holds the lock makes the kill
//! fail, and the reviver's own last put decides again.
//!
//! Measured and modelled (`loom-tests/tests/add_word.rs`; every
//! `LockRef` model in `loom-tests/tests/lockref.rs` that holds on both
//! words and every `CountedRef` model in `loom-tests/tests/counted.rs`
//! runs on it too); [`CasWord`](crate::CasWord) stays the default.

mod add_count;
mod add_word;

pub use add_word::AddWord;
