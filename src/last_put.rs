//! The last put of a [`CountedRef`]: the cold paths that drop the last
//! reference under the lock, ask [`RefCounted::last_put`] for the object's
//! [`Fate`], and release a killed object and the chain of references it
//! held.

use core::ptr::NonNull;

use crate::guard::{LockRefGuard, PutOrLock};
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

/// The last reference, with the lock held and nothing changed yet: drops it
/// and decides. Returns whether the object was killed.
///
/// # Safety
///
/// `guard` holds the lock of the lockref embedded in the object at `ptr`.
#[cold]
#[inline(never)]
pub(crate) unsafe fn last_put_locked<T: RefCounted>(
    ptr: NonNull<T>,
    mut guard: Guard<'_, T>,
) -> bool {
    match guard.decrement() {
        // SAFETY: the lock is held, so the object lives until the guard's
        // drop, after `decide` returns.
        Ok(0) => decide(unsafe { ptr.as_ref() }, &mut guard),
        Ok(_) => false,
        Err(e) => {
            // A handle always owns a reference: a broken RefCounted
            // contract. Refused, the count untouched.
            debug_assert!(false, "CountedRef put: {e}");
            false
        }
    }
}

/// With a grace section: a lockless put brought the count to zero.
/// Returns whether the object was killed.
///
/// # Safety
///
/// `grace` was entered before the put and keeps `ptr`'s memory valid.
#[cold]
#[inline(never)]
pub(crate) unsafe fn zero_unlocked<T: RefCounted>(ptr: NonNull<T>, grace: T::Grace) -> bool {
    // SAFETY: the grace section keeps the object's memory valid.
    let this = unsafe { ptr.as_ref() };
    if this.retain_unlocked() {
        return false;
    }
    let mut guard = this.lockref().lock();
    // A lookup may have revived it (and maybe put it again: then the other
    // putter decides, or decided and killed it).
    let killed = guard.count() == Some(0) && decide(this, &mut guard);
    drop(guard);
    drop(grace);
    killed
}

/// With a grace section: the lockless put gave up (lock held, or
/// contended); puts again, taking the lock if it is the last reference.
/// Returns whether the object was killed.
///
/// # Safety
///
/// The caller owns a reference to the live object at `ptr`, and gives it
/// up.
#[cold]
#[inline(never)]
pub(crate) unsafe fn put_locked<T: RefCounted>(ptr: NonNull<T>, grace: T::Grace) -> bool {
    // SAFETY: the caller's reference keeps the object alive until the put
    // below gives it up; the borrow ends at the put.
    let lockref = unsafe { ptr.as_ref() }.lockref();
    let killed = match lockref.put_or_lock() {
        PutOrLock::Put => false,
        // SAFETY: the guard is the lock of this object's lockref.
        PutOrLock::Locked(guard) => unsafe { last_put_locked(ptr, guard) },
    };
    drop(grace);
    killed
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
            Some(dead) => unsafe { T::release(dead) },
            None => None,
        };
    }
}
