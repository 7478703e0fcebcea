//! [`RawLockRef`], a lockref word's protocol without the data, and
//! [`RawLockRefExact`], what only a word whose count is frozen under its
//! lock can do: the shape of `lock_api`'s `RawMutex` under `Mutex<R, T>`
//! (and `RawMutexFair: RawMutex`).
//!
//! [`LockRef<T, W>`](crate::LockRef) puts the data beside a word `W` and
//! hands out the one guard, [`LockRefGuard`](crate::LockRefGuard);
//! [`CountedRef`](crate::CountedRef) is built on the same operations. The
//! words of this crate:
//!
//! | word | lockless get / put | count under the lock | extension |
//! |---|---|---|---|
//! | [`CasWord<P>`](crate::CasWord) (the default) | one compare-and-swap loop, bounded by the policy `P`, falls back to the lock | frozen: exact | [`RawLockRefExact`] |
//! | `experimental::AddWord` (feature `unstable-add-word`) | one `fetch_add`, checked afterwards | other threads' adds land: a snapshot | none |

use crate::error::{CountError, PutError};

/// A lockref word: a reference count and a spinlock, and the operations
/// [`LockRef`](crate::LockRef) and [`CountedRef`](crate::CountedRef) are
/// built from. Counts are `u32` in `0 ..= SATURATED`; `None` where a count
/// is read means dead.
///
/// # Safety
///
/// The typed layers rely on these promises, so an implementation that
/// breaks one makes safe code unsound:
///
/// - **The lock excludes.** Between a [`lock`](Self::lock) (or a
///   successful [`try_lock`](Self::try_lock), or a
///   [`put_many_or_lock`](Self::put_many_or_lock) that returned a ticket)
///   and the [`unlock`](Self::unlock) of that ticket, no other caller
///   holds the lock. Taking it is `Acquire`, unlocking `Release`.
/// - **Dead is final.** Once the count is dead, no operation takes a
///   reference any more: [`get_not_dead`](Self::get_not_dead) and
///   [`get_not_zero`](Self::get_not_zero) return `false`,
///   [`get`](Self::get) panics, and [`count`](Self::count) reads `None`.
///   The one way back is [`RawLockRefExact::revive_locked`], an `unsafe`
///   operation whose caller vouches that nothing relies on this death any
///   more.
/// - **Saturated is final.** A count that reached
///   [`SATURATED`](crate::SATURATED) stays there (the object is leaked),
///   and is never reported below it.
/// - **Never below zero.** A put is refused at zero, never wrapped; a
///   refusal changes nothing a caller can act on.
/// - **The kill is exact.** [`kill_if_zero_locked`](Self::kill_if_zero_locked)
///   kills only if the count is zero at the kill: a reference taken before
///   it makes it fail, one attempted after it fails.
/// - **Orderings as `Arc`'s.** A put is `Release`; a put that reaches
///   zero (and the lock taken to decide at zero) is `Acquire`; a reference
///   taken by `get_not_dead` or `get_not_zero` is `Acquire`.
/// - **Every byte in a cell.** Every byte of the word, padding included,
///   lies inside an `UnsafeCell` (atomics are cells): a releasing call's
///   `&self` stays live until it returns, while another holder may already
///   have freed the word, and Rust's aliasing rules forbid freeing bytes
///   under a live `&` argument outside a cell (see
///   [`LockRef`](crate::LockRef)'s "Layout").
/// - **Nothing after the releasing read-modify-write.** An operation that
///   gives up a reference touches nothing of the word after the atomic
///   operation that gives it up, unless it brought the count to zero (or
///   the count is saturated, or the lock is held): another holder may free
///   the word at once.
pub unsafe trait RawLockRef: Sized {
    /// What taking the lock returns and unlocking takes back (the ticket
    /// of a ticket lock; `()` for a lock that needs none, as this crate's
    /// words).
    type Ticket: Copy;

    /// Whether a put that is not the last costs no more through
    /// [`put_many_unless_last`](Self::put_many_unless_last) than through
    /// [`put_owned`](Self::put_owned) (one compare-and-swap either way):
    /// then an object with a grace section
    /// ([`RefCounted::grace`](crate::RefCounted::grace)) enters it only for
    /// a put that finds its references the last. `false` (the `fetch_add`
    /// word, whose `put_owned` is one `lock xadd`) enters it for every
    /// put.
    const GRACE_FOR_THE_LAST_PUT_ONLY: bool = true;

    /// An unlocked word holding `count` references.
    ///
    /// # Errors
    ///
    /// [`CountError::OutOfRange`] above [`SATURATED`](crate::SATURATED).
    fn with_count(count: u32) -> Result<Self, CountError>;

    /// The count now, a snapshot: `None` if dead.
    fn count(&self) -> Option<u32>;

    /// Takes a reference; the caller holds one (`lockref_get`). At
    /// [`SATURATED`](crate::SATURATED) the count stays.
    ///
    /// # Panics
    ///
    /// On a dead count: a caller holding a reference cannot see one.
    fn get(&self);

    /// Takes a reference unless dead, from zero too
    /// (`lockref_get_not_dead`). `Acquire` on success.
    fn get_not_dead(&self) -> bool;

    /// Takes a reference unless zero or dead (`lockref_get_not_zero`).
    /// `Acquire` on success.
    fn get_not_zero(&self) -> bool;

    /// Drops `n` references unless that leaves none (the count is `n` or
    /// less, or dead): then takes the lock without changing the count and
    /// returns its ticket (`lockref_put_or_lock` for `n` references).
    /// `None`: dropped (or saturated: the count stays).
    fn put_many_or_lock(&self, n: u32) -> Option<Self::Ticket>;

    /// [`put_many_or_lock`](Self::put_many_or_lock) of one reference.
    #[inline]
    fn put_or_lock(&self) -> Option<Self::Ticket> {
        self.put_many_or_lock(1)
    }

    /// Drops a reference without the lock and returns the count left, zero
    /// included; `Err` when it did nothing, and the caller then takes
    /// [`put_or_lock`](Self::put_or_lock). `Release`, and `Acquire` when
    /// it reaches zero.
    ///
    /// # Safety
    ///
    /// The caller owns a reference, which this gives up on `Ok`. (A word
    /// may decrement before it checks, so a put without one is not
    /// refused cleanly.)
    unsafe fn put_owned(&self) -> Result<u32, PutError>;

    /// [`put_owned`](Self::put_owned) of `n` references at once (a FUSE
    /// `FORGET` of the last `nlookup`): the count left, zero included;
    /// `Err` when it did nothing (fewer than `n` held, the lock held,
    /// contended, or no lockless path: the default for `n` above one), and
    /// the caller then takes [`put_many_or_lock`](Self::put_many_or_lock).
    /// `Release`, and `Acquire` when it reaches zero.
    ///
    /// # Safety
    ///
    /// The caller owns `n` references, which this gives up on `Ok`.
    #[inline]
    unsafe fn put_many_owned(&self, n: u32) -> Result<u32, PutError> {
        if n == 1 {
            // SAFETY: the caller owns the reference.
            unsafe { self.put_owned() }
        } else {
            Err(PutError::Unsupported)
        }
    }

    /// Drops `n` references without the lock if more than `n` are held:
    /// `Ok(true)` dropped (or the count is saturated: nothing moves);
    /// `Ok(false)` they are the last (or fewer are held): nothing changed,
    /// and the caller puts them another way (under a grace section, or
    /// the lock); `Err` nothing changed (the lock held, contended, or no
    /// lockless path: the default). `Release` on success. Counted as an
    /// operation only when it dropped them.
    #[inline]
    fn put_many_unless_last(&self, n: u32) -> Result<bool, PutError> {
        let _ = n;
        Err(PutError::Unsupported)
    }

    /// Drops the last `n` references and marks the word dead in one
    /// compare-and-swap, without the lock, if exactly `n` are held and the
    /// lock is free: the last put of an object whose fate at zero is
    /// already known to be a kill ([`RefCounted::killed_at_zero`](crate::RefCounted::killed_at_zero)), with
    /// no separate put to zero and kill. `Ok(true)`: dead, and the caller,
    /// whose references were the last, owns its teardown; `Ok(false)`:
    /// more or fewer than `n` are held, it is dead already or saturated,
    /// and nothing changed; `Err`: nothing changed (the lock held,
    /// contended, or no lockless path: the default). `AcqRel` on success:
    /// `Release` as any put, `Acquire` as a kill, so the teardown sees
    /// every holder's writes.
    ///
    /// # Safety
    ///
    /// The caller owns `n` references, which this gives up on `Ok(true)`.
    #[inline]
    unsafe fn put_many_and_kill(&self, n: u32) -> Result<bool, PutError> {
        let _ = n;
        Err(PutError::Unsupported)
    }

    /// Marks the word dead if its count is zero and its lock free, without
    /// taking the lock (the kill of a put to zero that needs no decision
    /// under the lock, [`RefCounted::fate_unlocked`](crate::RefCounted::fate_unlocked)).
    /// `Ok(true)`: killed; `Ok(false)`: a reference exists (a lookup
    /// revived it), it is dead already, or the count is saturated; `Err`:
    /// nothing was done (the lock held, contended, or no lockless path:
    /// the default), and the caller decides under the lock. `Acquire` on
    /// success, so the teardown after it sees every holder's writes.
    #[inline]
    fn kill_if_zero_unlocked(&self) -> Result<bool, PutError> {
        Err(PutError::Unsupported)
    }

    /// Takes the lock, waiting. Returns the ticket for
    /// [`unlock`](Self::unlock).
    fn lock(&self) -> Self::Ticket;

    /// Takes the lock if it is free now.
    fn try_lock(&self) -> Option<Self::Ticket>;

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The caller holds the lock with `ticket`, and gives it up.
    unsafe fn unlock(&self, ticket: Self::Ticket);

    /// The count under the lock: exact on a [`RawLockRefExact`] word, at
    /// least the references the holder knows of on another. `None` if
    /// dead.
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    unsafe fn count_locked(&self) -> Option<u32>;

    /// Takes a reference under the lock, from zero too; returns the new
    /// count. At [`SATURATED`](crate::SATURATED) the count stays.
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`]: nothing changes.
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    unsafe fn increment_locked(&self) -> Result<u32, CountError>;

    /// Drops `n` references under the lock; returns the count left. At
    /// [`SATURATED`](crate::SATURATED) the count stays.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if fewer than `n` are counted,
    /// [`CountError::Dead`] if dead: nothing changes.
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    unsafe fn decrement_by_locked(&self, n: u32) -> Result<u32, CountError>;

    /// Marks the word dead if its count is zero at this instant. Returns
    /// whether it did; `false` means a reference exists (or the count is
    /// saturated, and the object is leaked).
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    unsafe fn kill_if_zero_locked(&self) -> bool;
}

/// What only a word whose count is frozen while its lock is held can do:
/// no lockless operation lands under the lock, so a count read under it is
/// exact, an absolute store loses nothing, and a put can be refused before
/// it changes anything.
///
/// # Safety
///
/// Beyond [`RawLockRef`]'s promises: while the lock is held, only the
/// holder changes the count.
pub unsafe trait RawLockRefExact: RawLockRef {
    /// Drops a reference without ever taking the lock
    /// (`lockref_put_return`): the count left, or why not, in which case
    /// nothing changed. Safe: a put at zero (or dead) is refused before it
    /// writes. `Release`, and `Acquire` at zero.
    ///
    /// # Errors
    ///
    /// [`PutError::NotPositive`] at zero or dead, [`PutError::Locked`],
    /// [`PutError::Contended`], or [`PutError::Unsupported`] on a build
    /// without the lockless path.
    fn put_return(&self) -> Result<u32, PutError>;

    /// Sets a live count to `count`, `0 ..= SATURATED`; a saturated count
    /// stays.
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`] if dead, [`CountError::OutOfRange`] above
    /// [`SATURATED`](crate::SATURATED): nothing changes.
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    unsafe fn set_count_locked(&self, count: u32) -> Result<(), CountError>;

    /// Marks the word dead whatever its count (`lockref_mark_dead`); a
    /// saturated count stays (leaked, never killed).
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    unsafe fn mark_dead_locked(&self);

    /// Brings a dead word back to life with `count` references, `0 ..=
    /// SATURATED`: the word of an object whose memory is reused for a new
    /// object of the same type (type-stable memory, the kernel's
    /// `SLAB_TYPESAFE_BY_RCU`). A lookup that still holds a pointer to the
    /// old object and takes a reference after this gets one on the new
    /// object.
    ///
    /// # Errors
    ///
    /// [`CountError::NotDead`] if the word is alive,
    /// [`CountError::OutOfRange`] above [`SATURATED`](crate::SATURATED):
    /// nothing changes.
    ///
    /// # Safety
    ///
    /// The caller holds the lock, and nothing relies on the death any
    /// more: the old object's teardown (its `RefCounted::release`) is
    /// over, and every holder of a pointer to it that may still take a
    /// reference checks, after taking it, that the object is the one it
    /// looked for (and puts the reference back if not).
    unsafe fn revive_locked(&self, count: u32) -> Result<(), CountError>;

    /// [`revive_locked`](Self::revive_locked) without holding the lock:
    /// one compare-and-swap from a dead word whose lock is free (the
    /// default, and a word whose lock is held, take the lock around
    /// `revive_locked`). `Release`: what was written to the reused memory
    /// before happens before any reference taken on the new object.
    ///
    /// # Errors
    ///
    /// As [`revive_locked`](Self::revive_locked).
    ///
    /// # Safety
    ///
    /// As [`revive_locked`](Self::revive_locked), less the lock.
    unsafe fn revive(&self, count: u32) -> Result<(), CountError> {
        let ticket = self.lock();
        // SAFETY: the lock is held; the rest is the caller's guarantee.
        let revived = unsafe { self.revive_locked(count) };
        // SAFETY: taken above.
        unsafe { self.unlock(ticket) };
        revived
    }
}
