//! One `#[inline(never)]`, `#[no_mangle]` function per lockless operation,
//! each the operation inlined into a caller, as a user's code gets it.
//! `asm-inspect` compiles this crate to assembly and checks the listing.
#![no_std]

use core::ptr::NonNull;

use lockref::{
    CountedRef, Fate, LockRef, LockRefGuard, PutError, PutOrLock, RawLockRef, RefCounted,
};

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

/// `RawLockRef::put_many_and_kill` of one reference: the last put of an
/// object whose kill is known before it, one compare-and-swap from one to
/// dead.
///
/// # Safety
///
/// The caller owns a reference to `r`'s object.
#[no_mangle]
#[inline(never)]
pub unsafe fn probe_put_many_and_kill(r: &LockRef<()>) -> Result<bool, PutError> {
    // SAFETY: the caller's reference, given up on `Ok(true)`.
    unsafe { r.raw().put_many_and_kill(1) }
}

/// `LockRef::put_or_lock`; the guard, if any, is released at once.
#[no_mangle]
#[inline(never)]
pub fn probe_put_or_lock(r: &LockRef<()>) -> bool {
    matches!(r.put_or_lock(), PutOrLock::Put)
}

/// An object for the `CountedRef` probes: killed at zero, freed by nobody
/// (the probes only show the fast paths).
pub struct Probed {
    lockref: LockRef<()>,
}

// SAFETY: the probes never let the count reach zero in a run (they are
// only compiled, never executed); `release` frees nothing.
unsafe impl RefCounted for Probed {
    type Data = ();
    type Word = lockref::CasWord;
    type Grace = ();

    fn lockref(&self) -> &LockRef<()> {
        &self.lockref
    }

    fn last_put(&self, _: &mut LockRefGuard<'_, ()>) -> Fate {
        Fate::Kill
    }

    unsafe fn release(_: NonNull<Self>) -> Option<CountedRef<Self>> {
        None
    }
}

/// `CountedRef::clone`: `LockRef::get`, so the same fast path.
#[no_mangle]
#[inline(never)]
pub fn probe_counted_clone(r: &CountedRef<Probed>) -> CountedRef<Probed> {
    r.clone()
}

/// `CountedRef::drop`: `LockRef::put_or_lock`, with the last reference's
/// decision out of line.
#[no_mangle]
#[inline(never)]
pub fn probe_counted_drop(r: CountedRef<Probed>) {
    drop(r);
}

/// `LockRef<_, AddWord>::get`: one fetch_add.
#[cfg(target_has_atomic = "64")]
#[no_mangle]
#[inline(never)]
pub fn probe_add_get(r: &LockRef<(), lockref::experimental::AddWord>) {
    r.get();
}

/// `LockRef<_, AddWord>::get_not_dead`: one fetch_add, the undo out of line.
#[cfg(target_has_atomic = "64")]
#[no_mangle]
#[inline(never)]
pub fn probe_add_get_not_dead(r: &LockRef<(), lockref::experimental::AddWord>) -> bool {
    r.get_not_dead()
}

/// `LockRef<_, AddWord>::put_owned`: one fetch_sub, the undo out of line.
///
/// # Safety
///
/// The caller owns a reference.
#[cfg(target_has_atomic = "64")]
#[no_mangle]
#[inline(never)]
pub unsafe fn probe_add_put_owned(
    r: &LockRef<(), lockref::experimental::AddWord>,
) -> Result<u32, PutError> {
    // SAFETY: the caller's.
    unsafe { r.put_owned() }
}

/// An object on the fetch_add word for the `CountedRef` probes, with a
/// grace section (as the dcache's dentry): freed by nobody, the probes are
/// only compiled.
#[cfg(target_has_atomic = "64")]
pub struct ProbedAdd {
    lockref: LockRef<(), lockref::experimental::AddWord>,
}

// SAFETY: as `Probed`: never executed, `release` frees nothing, so the
// memory outlives every grace value.
#[cfg(target_has_atomic = "64")]
unsafe impl RefCounted for ProbedAdd {
    type Data = ();
    type Word = lockref::experimental::AddWord;
    type Grace = ();

    fn lockref(&self) -> &LockRef<(), lockref::experimental::AddWord> {
        &self.lockref
    }

    fn last_put(&self, _: &mut LockRefGuard<'_, (), lockref::experimental::AddWord>) -> Fate {
        Fate::Kill
    }

    unsafe fn release(_: NonNull<Self>) -> Option<CountedRef<Self>> {
        None
    }

    fn grace() -> Option<()> {
        Some(())
    }
}

/// `CountedRef::clone` on the fetch_add word: one fetch_add.
#[cfg(target_has_atomic = "64")]
#[no_mangle]
#[inline(never)]
pub fn probe_add_counted_clone(r: &CountedRef<ProbedAdd>) -> CountedRef<ProbedAdd> {
    r.clone()
}

/// `CountedRef::drop` on the fetch_add word with a grace section: one
/// fetch_sub (`put_owned`), the put to zero out of line.
#[cfg(target_has_atomic = "64")]
#[no_mangle]
#[inline(never)]
pub fn probe_add_counted_drop(r: CountedRef<ProbedAdd>) {
    drop(r);
}

/// `lockref_table::Table::get` (feature `table`): a lookup by id, with no
/// lock and no epoch pin: the slot's id read, one compare-and-swap on the
/// entry's count, the id read again. The handle is returned, not dropped
/// (its drop is `probe_counted_drop`'s path).
#[cfg(feature = "table")]
#[no_mangle]
#[inline(never)]
pub fn probe_table_get(
    table: &lockref_table::Table<u64, u64>,
    id: u64,
) -> Result<lockref_table::Handle<u64, u64>, lockref_table::TableError> {
    table.get(id)
}
