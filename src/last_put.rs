//! The last put of a [`CountedRef`]: the cold paths that drop the last
//! reference under the lock, ask [`RefCounted::last_put`] for the object's
//! [`Fate`], and release a killed object and the chain of references it
//! held.

use core::ptr::NonNull;

use crate::error::CountError;
use crate::guard::{LockRefGuard, PutOrLock};
use crate::raw::raw_lockref::RawLockRef;
use crate::ref_counted::{Fate, RefCounted};

/// The held lock of a `T`'s lockref.
type Guard<'a, T> = LockRefGuard<'a, <T as RefCounted>::Data, <T as RefCounted>::Word>;

// The functions below never free: an object is freed only by
// `release_chain`. And none takes a `&T` argument across a releasing
// operation (a put, an unlock, the end of a grace section): an argument's
// bytes outside an `UnsafeCell` are protected until the call returns, and
// another holder may free the object as soon as the reference (or the
// lock) is given up. They take the pointer, and borrow the object only in
// locals that end before the release. (A guard's `&LockRef` may cross its
// unlock: every byte of a `LockRef` is inside a cell.)

/// Gives up `n` references the caller owns: lockless unless they are the
/// last. The last go without the lock too when the object has a grace
/// section ([`RefCounted::grace`]), entered only by a put that found its
/// references the last (a put that is not the last needs none, and pays
/// none); else the lock is taken and the object asked. Returns the object
/// if this killed it (the caller then releases it, [`release_chain`]).
///
/// # Errors
///
/// As [`LockRefGuard::decrement_by`]: fewer than `n` held, or dead;
/// nothing changes.
///
/// # Safety
///
/// The caller owns `n` references to the live object at `ptr` (fewer is
/// refused cleanly on words whose count is exact under the lock), and
/// gives them up on `Ok`.
#[inline]
pub(crate) unsafe fn put_many<T: RefCounted>(
    ptr: NonNull<T>,
    n: u32,
) -> Result<Option<Killed<T>>, CountError> {
    // SAFETY: the caller's references keep the object alive until the put
    // below gives them up; the borrow ends there (see the note above).
    let lockref = unsafe { ptr.as_ref() }.lockref();
    // Without the lockless paths (`LOCKLESS` is false), a lockless put
    // never succeeds: a grace section would buy nothing.
    if crate::LOCKLESS {
        // (A word that takes every put to the grace section, the
        // `fetch_add` word, reads nothing first: it has no put-and-kill.)
        let reads_last = T::Word::GRACE_FOR_THE_LAST_PUT_ONLY && lockref.count() == Some(n);
        // SAFETY: as above: the caller's references keep the object, and
        // the borrow ends before the compare-and-swap that gives them up.
        if reads_last && unsafe { ptr.as_ref() }.killed_at_zero() {
            // The last references dropped and the object killed at once:
            // no grace section, no second compare-and-swap.
            // SAFETY: the caller owns the `n` references this gives up.
            if let Ok(true) = unsafe { lockref.raw().put_many_and_kill(n) } {
                return Ok(Some(Killed { ptr }));
            }
            // Not the last after all, or the lock held: nothing changed,
            // the usual way below.
        }
        // A put that reads as the last goes straight to the grace section
        // (as `dput`'s `rcu_read_lock` first); one that reads as not the
        // last tries without it, and learns if it was the last after all.
        let last = !T::Word::GRACE_FOR_THE_LAST_PUT_ONLY
            || reads_last
            || match lockref.raw().put_many_unless_last(n) {
                // Others hold it (or it is saturated): not ours any more.
                Ok(true) => return Ok(None),
                Ok(false) => true,
                // The lock is held, or contended: decided under it.
                Err(_) => false,
            };
        if last {
            if let Some(grace) = T::grace() {
                // SAFETY: the caller owns the `n` references this gives up.
                match unsafe { lockref.raw().put_many_owned(n) } {
                    // SAFETY: `grace` was entered before the put and keeps
                    // the memory valid.
                    Ok(0) => return Ok(unsafe { zero_unlocked(ptr, grace) }),
                    // Revived meanwhile (or saturated): not ours any more.
                    Ok(_) => return Ok(None),
                    // Nothing changed: the references are still the
                    // caller's.
                    Err(_) => drop(grace),
                }
            }
        }
    }
    match lockref.put_many_or_lock(n) {
        PutOrLock::Put => Ok(None),
        PutOrLock::Locked(mut guard) => {
            if guard.decrement_by(n)? != 0 {
                return Ok(None);
            }
            // SAFETY: the lock is held, so the object lives until the
            // guard's drop, after `decide` returns.
            let killed = decide(unsafe { ptr.as_ref() }, &mut guard);
            Ok(killed.then_some(Killed { ptr }))
        }
    }
}

/// With a grace section: a lockless put brought the count to zero.
/// Returns the object if this killed it. The grace section ends before
/// the release (as `dput` leaves `rcu_read_lock` before `dentry_kill`):
/// a release may wait for every grace section (a `synchronize_rcu`).
///
/// # Safety
///
/// `grace` was entered before the put and keeps `ptr`'s memory valid.
#[cold]
#[inline(never)]
unsafe fn zero_unlocked<T: RefCounted>(ptr: NonNull<T>, grace: T::Grace) -> Option<Killed<T>> {
    // SAFETY: the grace section keeps the object's memory valid.
    let this = unsafe { ptr.as_ref() };
    let killed = match this.fate_unlocked() {
        Some(Fate::Keep) => return None,
        // A lookup may have revived it meanwhile: then it lives, and its
        // holder's last put decides again.
        Some(Fate::Kill) => match this.lockref().raw().kill_if_zero_unlocked() {
            Ok(killed) => killed,
            Err(_) => zero_locked(this),
        },
        None => zero_locked(this),
    };
    drop(grace);
    killed.then_some(Killed { ptr })
}

/// An object this thread killed at its last put, for [`release_chain`].
pub(crate) struct Killed<T: RefCounted> {
    pub(crate) ptr: NonNull<T>,
}

/// [`zero_unlocked`] under the lock: the count is checked again, since a
/// lookup may have revived the object (and maybe put it again: then the
/// other putter decides, or decided and killed it).
fn zero_locked<T: RefCounted>(this: &T) -> bool {
    let mut guard = this.lockref().lock();
    guard.count() == Some(0) && decide(this, &mut guard)
}

/// At count zero, lock held: asks the object, and marks it dead if told to
/// kill it and the count is still zero (on the `fetch_add` word a lookup
/// may have revived it meanwhile). Returns whether it killed.
pub(crate) fn decide<T: RefCounted>(this: &T, guard: &mut Guard<'_, T>) -> bool {
    match this.last_put(guard) {
        Fate::Keep => false,
        Fate::Kill => guard.kill_if_zero(),
    }
}

/// Releases a killed object, then puts the references its release handed
/// on (the cascade), in a loop.
///
/// # Safety
///
/// The object was marked dead at count zero by the calling thread, whose
/// lock guard is gone.
pub(crate) unsafe fn release_chain<T: RefCounted>(dead: NonNull<T>) {
    // SAFETY: the caller's guarantee: dead, unreferenced, released once.
    let mut next = unsafe { T::release(dead) };
    while let Some(r) = next {
        next = match r.put() {
            // SAFETY: killed by this thread just now.
            Some(killed) => unsafe { T::release(killed.ptr) },
            None => None,
        };
    }
}
