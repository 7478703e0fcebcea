//! The count half: its special values and the arithmetic every path shares.
//!
//! The states are in the crate docs' word table.
//!
//! Saturation follows the kernel's `refcount_t`, not its lockref: a count
//! that reaches the top stays there, so an overflow leaks the object instead
//! of wrapping to zero and freeing it under its users.

/// The count a dead object holds on the compare-and-swap word after
/// `mark_dead` (the kernel's `-128`). Any negative count means dead; the
/// API reads it as `None`.
pub(crate) const DEAD: i32 = -128;

/// The saturated count, the same on every word. A count that reaches it
/// never changes again: gets succeed and puts return it, so the object is
/// never freed (leaked). 2^29: the `fetch_add` word needs the room above
/// it for its transients, and half a billion references to one object is
/// a leak.
///
/// ```
/// use lockref::{LockRef, PutOrLock, SATURATED};
///
/// let r = LockRef::with_count((), SATURATED).unwrap();
/// r.get();
/// assert!(matches!(r.put_or_lock(), PutOrLock::Put));
/// assert_eq!(r.count(), Some(SATURATED));
/// ```
pub const SATURATED: u32 = 1 << 29;

/// [`SATURATED`] in the compare-and-swap word's signed count half.
pub(crate) const SATURATED_I32: i32 = SATURATED as i32;

/// The count after taking one reference, or `None` when the object is dead.
#[inline(always)]
pub(crate) const fn incremented(count: i32) -> Option<i32> {
    if count < 0 {
        None
    } else if count == SATURATED_I32 {
        Some(SATURATED_I32)
    } else {
        Some(count + 1)
    }
}

/// The count after dropping one reference, or `None` when the count is zero
/// or dead (an underflow, refused).
#[inline(always)]
pub(crate) const fn decremented(count: i32) -> Option<i32> {
    if count <= 0 {
        None
    } else if count == SATURATED_I32 {
        Some(SATURATED_I32)
    } else {
        Some(count - 1)
    }
}

/// A count as `Debug` shows it: the number, or `dead`.
pub(crate) struct ShowCount(pub(crate) Option<u32>);

impl core::fmt::Debug for ShowCount {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("dead"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increment_refuses_dead_and_saturates() {
        assert_eq!(incremented(0), Some(1));
        assert_eq!(incremented(41), Some(42));
        assert_eq!(incremented(SATURATED_I32 - 1), Some(SATURATED_I32));
        assert_eq!(incremented(SATURATED_I32), Some(SATURATED_I32));
        assert_eq!(incremented(-1), None);
        assert_eq!(incremented(DEAD), None);
    }

    #[test]
    fn decrement_refuses_underflow_and_stays_saturated() {
        assert_eq!(decremented(1), Some(0));
        assert_eq!(decremented(SATURATED_I32), Some(SATURATED_I32));
        assert_eq!(decremented(0), None);
        assert_eq!(decremented(DEAD), None);
    }
}
