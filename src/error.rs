//! Typed errors. Every refusal leaves the count exactly as it was.

use core::fmt;

/// Why a count change made under the lock (through a
/// [`LockRefGuard`](crate::LockRefGuard)) or at construction was refused.
/// The count is unchanged.
///
/// ```
/// use lockref::{CountError, LockRef};
///
/// let r = LockRef::with_count((), 0).unwrap();
/// let mut g = r.lock();
/// assert_eq!(g.decrement(), Err(CountError::Underflow));
/// assert_eq!(g.count(), Some(0));
/// assert_eq!(CountError::Underflow.to_string(), "lockref count would go below zero");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CountError {
    /// The object is dead (count negative): no reference may be taken or
    /// dropped through the count any more.
    Dead,
    /// Dropping a reference at count zero: there is none to drop. Wrapping
    /// below zero would make a live object look dead, or worse.
    Underflow,
    /// A count outside `0 ..= SATURATED` was given where a live count is
    /// needed; use [`LockRefGuard::mark_dead`](crate::LockRefGuard::mark_dead)
    /// to kill an object.
    OutOfRange,
    /// A revival of an object that is not dead
    /// ([`LockRefGuard::revive`](crate::LockRefGuard::revive)).
    NotDead,
}

impl fmt::Display for CountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CountError::Dead => "lockref is dead",
            CountError::Underflow => "lockref count would go below zero",
            CountError::OutOfRange => "lockref count out of range 0..=SATURATED",
            CountError::NotDead => "lockref is not dead",
        })
    }
}

impl core::error::Error for CountError {}

/// Why [`LockRef::put_return`](crate::LockRef::put_return) did not drop a
/// reference. It never takes the lock, so on any of these the caller does
/// the work under the lock itself (as the kernel's `dput` does). The count
/// is unchanged.
///
/// ```
/// use lockref::{LockRef, PutError};
///
/// let r = LockRef::with_count((), 0).unwrap();
/// let expected = if lockref::LOCKLESS { PutError::NotPositive } else { PutError::Unsupported };
/// assert_eq!(r.put_return(), Err(expected));
/// assert_eq!(r.count(), Some(0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PutError {
    /// The count was zero or dead: no reference to drop without the lock.
    NotPositive,
    /// The lock was held (lockless updates never happen under the lock).
    Locked,
    /// The compare-and-swap failed as many times as the policy allows.
    Contended,
    /// This build has no lockless path (no 64-bit compare-and-swap on the
    /// target, or `cfg(lockref_lock_only)`): like the kernel without
    /// `CONFIG_ARCH_USE_CMPXCHG_LOCKREF`, `put_return` always fails.
    Unsupported,
}

impl fmt::Display for PutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PutError::NotPositive => "lockref count is zero or dead",
            PutError::Locked => "lockref is locked",
            PutError::Contended => "lockref compare-and-swap retries ran out",
            PutError::Unsupported => "lockref has no lockless path on this target",
        })
    }
}

impl core::error::Error for PutError {}
