//! Loom models of the rule that nothing touches an object after the
//! read-modify-write that gives up a reference: two holders put at once,
//! and the one that sees zero frees the object at once, on both words and
//! through every releasing operation. Each holder reads the object before
//! its put; the free is an exclusive write to the object (a loom-tracked
//! cell), then the `Box`'s drop, so loom flags any interleaving in which a
//! holder's use is not ordered before the free (a put without its
//! `Release`, a zero seen without its `Acquire`, a lock that does not
//! order the locked put). The statistics counters are not loom objects
//! (see `lockref`'s `sync.rs`): their touches after a release are caught
//! by the same races under Miri and ThreadSanitizer (`src/tests/
//! release.rs`). Run with `--cfg loom --cfg lockref_loom --cfg
//! lockref_white_box`.
#![cfg(loom)]

use lockref::{LockRef, PutOrLock, RawLockRef};
use lockref_loom_tests::{model, Word};
use loom::cell::UnsafeCell;
use loom::thread;

/// The object raced to its free: a word and a field beside it.
struct Obj<W: Word> {
    word: LockRef<(), W>,
    payload: UnsafeCell<u32>,
}

// SAFETY: holders only read `payload` while they own a reference; the one
// that saw zero writes it, alone, before freeing.
unsafe impl<W: Word> Sync for Obj<W> {}

/// Gives up `n` owned references with `put_many_or_lock` (`put_or_lock`
/// for one), finishing under the lock when they are the last; returns
/// whether the count reached zero.
fn put_or_lock_n<W: RawLockRef>(w: &LockRef<(), W>, n: u32) -> bool {
    let guard = if n == 1 {
        w.put_or_lock()
    } else {
        w.put_many_or_lock(n)
    };
    let PutOrLock::Locked(mut guard) = guard else {
        return false;
    };
    let left = guard.decrement_by(n).expect("counted");
    drop(guard);
    left == 0
}

/// Gives up an owned reference with `put_owned` (`put_return`), then with
/// `put_or_lock` if it refused; returns whether it reached zero.
fn put_return_or_lock<W: RawLockRef>(w: &LockRef<(), W>, _n: u32) -> bool {
    // SAFETY: the caller owns the reference.
    match unsafe { w.put_owned() } {
        Ok(left) => left == 0,
        Err(_) => put_or_lock_n(w, 1),
    }
}

/// Two holders of `per` references each put them with `put`; the one
/// that sees zero frees the object.
fn the_last_put_frees_while_the_other_puts<W: Word>(
    per: u32,
    put: fn(&LockRef<(), W>, u32) -> bool,
) {
    model(move || {
        let obj = Box::new(Obj {
            word: LockRef::with_raw((), W::with_count(2 * per).unwrap()),
            payload: UnsafeCell::new(7),
        });
        let addr = Box::into_raw(obj) as usize;
        let holders: Vec<_> = (0..2)
            .map(|_| {
                thread::spawn(move || {
                    let ptr = addr as *mut Obj<W>;
                    // SAFETY: our references keep it alive until our put.
                    let obj = unsafe { &*ptr };
                    // SAFETY: holders only read the payload.
                    assert_eq!(obj.payload.with(|p| unsafe { *p }), 7);
                    if put(&obj.word, per) {
                        // The free: an exclusive write, then the drop.
                        // SAFETY: the count reached zero here; no holder
                        // is left.
                        obj.payload.with_mut(|p| unsafe { *p = 0 });
                        // SAFETY: as above; the box from `into_raw`.
                        drop(unsafe { Box::from_raw(ptr) });
                    }
                })
            })
            .collect();
        for h in holders {
            h.join().unwrap();
        }
    });
}

macro_rules! on_each_word {
    ($($word:ident: $ty:ty;)*) => {$(
        mod $word {
            use super::*;

            #[test]
            fn put_return_to_zero_frees_while_the_other_holder_puts() {
                the_last_put_frees_while_the_other_puts::<$ty>(1, put_return_or_lock::<$ty>);
            }

            #[test]
            fn put_or_lock_to_zero_frees_while_the_other_holder_puts() {
                the_last_put_frees_while_the_other_puts::<$ty>(1, put_or_lock_n::<$ty>);
            }

            #[test]
            fn put_many_or_lock_to_zero_frees_while_the_other_holder_puts() {
                the_last_put_frees_while_the_other_puts::<$ty>(2, put_or_lock_n::<$ty>);
            }
        }
    )*};
}

on_each_word! {
    cas_word: lockref::CasWord;
    add_word: lockref::experimental::AddWord;
}
