//! The count half: its special values and the arithmetic every path shares.
//!
//! The states are in the crate docs' word table.
//!
//! Saturation follows the kernel's `refcount_t`, not its lockref: a count
//! that reaches the top stays there, so an overflow leaks the object instead
//! of wrapping to zero and freeing it under its users.

/// The count a dead object holds after `mark_dead` (the kernel's `-128`).
/// Any negative count means dead.
///
/// ```
/// let r = lockref::LockRef::with_count((), 0).unwrap();
/// r.lock().mark_dead();
/// assert_eq!(r.count(), lockref::DEAD);
/// ```
pub const DEAD: i32 = -128;

/// The saturated count. A count that reaches it never changes again: gets
/// succeed and puts return it, so the object is never freed (leaked).
///
/// ```
/// use lockref::{LockRef, PutOrLock, SATURATED};
///
/// let r = LockRef::with_count((), SATURATED).unwrap();
/// r.get();
/// assert!(matches!(r.put_or_lock(), PutOrLock::Put));
/// assert_eq!(r.count(), SATURATED);
/// ```
pub const SATURATED: i32 = i32::MAX;

/// The count after taking one reference, or `None` when the object is dead.
#[inline(always)]
pub(crate) const fn incremented(count: i32) -> Option<i32> {
    if count < 0 {
        None
    } else if count == SATURATED {
        Some(SATURATED)
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
    } else if count == SATURATED {
        Some(SATURATED)
    } else {
        Some(count - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increment_refuses_dead_and_saturates() {
        assert_eq!(incremented(0), Some(1));
        assert_eq!(incremented(41), Some(42));
        assert_eq!(incremented(SATURATED - 1), Some(SATURATED));
        assert_eq!(incremented(SATURATED), Some(SATURATED));
        assert_eq!(incremented(-1), None);
        assert_eq!(incremented(DEAD), None);
    }

    #[test]
    fn decrement_refuses_underflow_and_stays_saturated() {
        assert_eq!(decremented(1), Some(0));
        assert_eq!(decremented(SATURATED), Some(SATURATED));
        assert_eq!(decremented(0), None);
        assert_eq!(decremented(DEAD), None);
    }
}
