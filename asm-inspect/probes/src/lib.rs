//! One `#[inline(never)]`, `#[no_mangle]` function per lockless operation,
//! each the operation inlined into a caller, as a user's code gets it.
//! `asm-inspect` compiles this crate to assembly and checks the listing.
#![no_std]

use lockref::{LockRef, PutError, PutOrLock};

/// `LockRef::get`.
#[no_mangle]
#[inline(never)]
pub fn probe_get(r: &LockRef<()>) {
    r.get();
}

/// `LockRef::get_not_zero`.
#[no_mangle]
#[inline(never)]
pub fn probe_get_not_zero(r: &LockRef<()>) -> bool {
    r.get_not_zero()
}

/// `LockRef::get_not_dead`.
#[no_mangle]
#[inline(never)]
pub fn probe_get_not_dead(r: &LockRef<()>) -> bool {
    r.get_not_dead()
}

/// `LockRef::put_return`.
#[no_mangle]
#[inline(never)]
pub fn probe_put_return(r: &LockRef<()>) -> Result<u32, PutError> {
    r.put_return()
}

/// `LockRef::put_or_lock`; the guard, if any, is released at once.
#[no_mangle]
#[inline(never)]
pub fn probe_put_or_lock(r: &LockRef<()>) -> bool {
    matches!(r.put_or_lock(), PutOrLock::Put)
}
