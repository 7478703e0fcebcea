//! [`AddLockRefGuard`]: the held lock of an [`AddLockRef`], whose count
//! other threads' gets and puts still move.

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use super::add_count::{decode, reported, Count, BIAS, DEAD_STORED, LOCKED, SATURATED};
use super::AddLockRef;
use crate::error::CountError;
use crate::sync::{acquire_fence_after, MutPtr, Ordering};

/// The held lock of an [`AddLockRef`]: the data, and the count as it is
/// now (other threads' adds still land).
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct AddLockRefGuard<'a, T> {
    lockref: &'a AddLockRef<T>,
    /// The access to the data, tracked by loom under `cfg(lockref_loom)`.
    data: MutPtr<T>,
    /// Unlocking from another thread is fine for a spinlock, but the data
    /// may be `!Send`: the guard stays on its thread, as a `MutexGuard`.
    _not_send: PhantomData<*const ()>,
}

// SAFETY: shared access to the guard only reads the data (`Deref`).
unsafe impl<T: Sync> Sync for AddLockRefGuard<'_, T> {}

impl<'a, T> AddLockRefGuard<'a, T> {
    /// The guard of a lock just taken.
    pub(super) fn new(lockref: &'a AddLockRef<T>) -> Self {
        AddLockRefGuard {
            lockref,
            data: lockref.data.get_mut(),
            _not_send: PhantomData,
        }
    }

    /// The count now: at least the references this holder knows of; other
    /// threads' gets and puts land while the lock is held. `None` if dead.
    ///
    /// Read with a read-modify-write that changes nothing (`AcqRel`), so
    /// that it takes its place among the gets and puts in the word's
    /// modification order: a put that lands after it sees what this holder
    /// wrote before reading it (a flag cleared: the put's `Acquire` at zero
    /// pairs with it), and a put it reads is seen with its writes. A plain
    /// load would let both miss each other: the holder reads the count from
    /// before the put while the put reads the flag from before the clear
    /// (the loom model
    /// `shrink_races_revive_and_lockless_put_of_a_referenced_dentry`).
    pub fn count(&self) -> Option<u32> {
        // AcqRel: see above. The slow path: the lock is held anyway.
        reported(self.lockref.word.fetch_add(0, Ordering::AcqRel))
    }

    /// Kills the object if its count is zero *at this instant*: one CAS
    /// from zero to dead, which fails if a lookup revived it (then the
    /// reviver owns a reference and the object stays). Returns whether it
    /// killed.
    pub fn kill_if_zero(&mut self) -> bool {
        let zero = LOCKED | u64::from(BIAS);
        // Relaxed: under the lock, whose release publishes the death; a
        // lookup's add that lands after it sees a dead count and undoes.
        self.lockref
            .word
            .compare_exchange(
                zero,
                LOCKED | u64::from(DEAD_STORED),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Takes a reference under the lock (an atomic add: others land too),
    /// from zero too.
    ///
    /// `AcqRel`: since adds land under this lock, a lookup can take a
    /// reference on the count this raises before the unlock; the `Release`
    /// here publishes what the holder wrote before it to that lookup (the
    /// compare-and-swap word publishes with the unlock, as no lockless
    /// operation succeeds while its lock is held).
    ///
    /// # Errors
    ///
    /// [`CountError::Dead`] on a dead object (nothing changed).
    pub fn increment(&mut self) -> Result<(), CountError> {
        let old = self.lockref.word.fetch_add(1, Ordering::AcqRel);
        match decode(old) {
            Count::Live(_) | Count::Negative => Ok(()),
            was => {
                if self.lockref.undo_add(was) {
                    Ok(())
                } else {
                    Err(CountError::Dead)
                }
            }
        }
    }

    /// Drops a reference under the lock; returns the count left. A
    /// compare-and-swap loop (this is the slow path), so that a decrement
    /// at zero is refused without ever showing a count below it.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] at zero, [`CountError::Dead`] on a dead
    /// object (nothing changed).
    pub fn decrement(&mut self) -> Result<u32, CountError> {
        self.decrement_by(1)
    }

    /// Drops `n` references under the lock; returns the count left. A
    /// compare-and-swap loop, as [`decrement`](Self::decrement). A
    /// saturated count stays.
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if fewer than `n` are counted,
    /// [`CountError::Dead`] on a dead object (nothing changed).
    pub fn decrement_by(&mut self, n: u32) -> Result<u32, CountError> {
        let word = &self.lockref.word;
        // Relaxed: the first guess; the CAS decides.
        let mut old = word.load(Ordering::Relaxed);
        loop {
            let left = match decode(old) {
                Count::Dead => return Err(CountError::Dead),
                Count::Saturated => return Ok(SATURATED),
                Count::Live(c) if c >= n => c - n,
                Count::Live(_) | Count::Negative => return Err(CountError::Underflow),
            };
            // Release: as `put_return`.
            match word.compare_exchange_weak(
                old,
                old - u64::from(n),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if left == 0 {
                        // Acquire: as `put_return` reaching zero.
                        acquire_fence_after!(word);
                    }
                    return Ok(left);
                }
                Err(now) => old = now,
            }
        }
    }
}

impl<T> Deref for AddLockRefGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock: no other guard reaches the
        // data, and the shared reference is made from the raw pointer.
        self.data.with(|p| unsafe { &*p })
    }
}

impl<T> DerefMut for AddLockRefGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock and `&mut self` is unique.
        self.data.with(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for AddLockRefGuard<'_, T> {
    fn drop(&mut self) {
        // Release: the data written under the lock, and a death, for the
        // next holder and for lookups.
        self.lockref.word.fetch_and(!LOCKED, Ordering::Release);
    }
}
