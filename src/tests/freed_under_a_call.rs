//! Every byte of a lockref may be freed while a call that gave up a
//! reference still holds its `&self`. A shared reference passed to a
//! function is *protected* by Rust's aliasing models (Stacked and Tree
//! Borrows) until the function returns, on every byte outside an
//! `UnsafeCell`, padding included: freeing such a byte then is undefined
//! behaviour. The last holder of a lockref frees it while the others may
//! still be returning from their releasing puts (`put_or_lock`,
//! `put_return`, `put_many_or_lock`, `put_owned` all take `&self`), so no
//! byte of a `LockRef`, nor of a word, may lie outside a cell.
//!
//! The tests here free the object under a live `&` argument, on one thread,
//! deterministically: for data of every size 0 to 17 bytes at alignments 1,
//! 2, 4, 8 and 16, on every word. A plain run cannot fail (nothing reads
//! the freed memory); Miri reports the first protected byte. `.ci/run`
//! runs them under both models, with and without `stats`. The racing form
//! (threads that really put while the last one frees) is `tests::release`.

use std::boxed::Box;

use crate::{CasWord, LockRef, RawLockRef};

use super::lockref_at;

/// Frees the box at `owner` while `borrowed`, a reference to the same
/// object, is a live argument of this call: undefined behaviour exactly
/// when some byte of `O` lies outside an `UnsafeCell`.
///
/// # Safety
///
/// `owner` is a pointer from `Box::into_raw`, `borrowed` points to the same
/// object, and neither is used after the call.
#[inline(never)]
unsafe fn free_under_argument<O>(borrowed: &O, owner: *mut O) {
    // The argument's protector lasts the whole call whether or not it is
    // read; keeping it named says that it is live here.
    let _still_borrowed = borrowed;
    // SAFETY: the caller's guarantee: a `Box` pointer, freed once, here.
    drop(unsafe { Box::from_raw(owner) });
}

/// Boxes `object` and frees it under a `&` argument.
fn free_under_a_call<O>(object: O) {
    let owner = Box::into_raw(Box::new(object));
    // SAFETY: `owner` is the box's pointer and the reference is made from
    // it; neither is used after the call.
    unsafe { free_under_argument(&*owner, owner) };
}

/// Data of `N` bytes at each alignment (its size `N` rounded up to it).
macro_rules! aligned_data {
    ($($name:ident = $align:literal),*) => {$(
        #[repr(C, align($align))]
        struct $name<const N: usize>([u8; N]);
    )*};
}
aligned_data!(Align1 = 1, Align2 = 2, Align4 = 4, Align8 = 8, Align16 = 16);

/// A lockref on the word `W` with `N` bytes of data at every alignment,
/// freed under a call.
fn every_alignment<W: RawLockRef, const N: usize>() {
    free_under_a_call(lockref_at::<W, _>(Align1([7; N]), 1));
    free_under_a_call(lockref_at::<W, _>(Align2([7; N]), 1));
    free_under_a_call(lockref_at::<W, _>(Align4([7; N]), 1));
    free_under_a_call(lockref_at::<W, _>(Align8([7; N]), 1));
    free_under_a_call(lockref_at::<W, _>(Align16([7; N]), 1));
}

/// Sizes 0 to 17 bytes at every alignment, and the word alone.
fn every_size_and_alignment<W: RawLockRef>() {
    macro_rules! sizes {
        ($($n:literal)*) => {$( every_alignment::<W, $n>(); )*};
    }
    sizes!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17);
    // Common data types, as users write them.
    free_under_a_call(lockref_at::<W, _>(true, 1));
    free_under_a_call(lockref_at::<W, _>(7_i32, 1));
    free_under_a_call(lockref_at::<W, _>([1_u8; 3], 1));
    free_under_a_call(lockref_at::<W, _>((1_u8, 2_u64), 1));
    // A call on the word itself (`RawLockRef`'s `&self`).
    free_under_a_call(W::with_count(1).unwrap());
}

#[test]
fn a_lockref_may_be_freed_under_a_call_for_data_of_every_size_and_alignment() {
    every_size_and_alignment::<CasWord>();
    every_size_and_alignment::<CasWord<crate::raw::policy::ExpBackoff>>();
    #[cfg(all(
        feature = "unstable-add-word",
        target_has_atomic = "64",
        not(lockref_lock_only)
    ))]
    every_size_and_alignment::<crate::experimental::AddWord>();
}

#[test]
fn an_open_count_may_be_freed_under_a_call() {
    free_under_a_call(crate::OpenCount::new());
}

#[test]
fn the_default_lockref_is_still_one_word_beside_its_data() {
    // The outer cell changes no layout: the word and the data, side by side.
    let word = core::mem::size_of::<CasWord>();
    assert_eq!(core::mem::size_of::<LockRef<()>>(), word);
    assert_eq!(core::mem::size_of::<LockRef<u8>>(), word + 8);
    assert_eq!(core::mem::size_of::<LockRef<u64>>(), word + 8);
    assert_eq!(core::mem::align_of::<LockRef<Align16<1>>>(), 16);
}
