//! The fetch_add word's encoding: the biased count's regions in the low
//! half, the lock bit, and their decoding (the layout is in the
//! [module docs](super)).

/// The count's bias in the low half.
pub(super) const BIAS: u32 = 1 << 30;
/// The lowest saturated count: the crate's one `SATURATED`, which the
/// regions below are laid out around.
pub(super) use crate::raw::count::SATURATED;
const _: () = assert!(SATURATED == 1 << 29 && BIAS + SATURATED < DEAD_LOW);
/// The lowest stored value that reads as dead: the dead region is
/// `DEAD_LOW ..= u32::MAX`.
pub(super) const DEAD_LOW: u32 = 0xC000_0000;
/// The stored value of a dead count: the middle of the dead region, 2^29
/// from either end, so that the transients of refused operations (a put's
/// decrement below, a lookup's add above) never leave it. At the region's
/// low end (in 0.1.0) one refused put's transient read as
/// saturated, and a concurrent `get_not_dead` took a reference on a dead
/// object.
pub(super) const DEAD_STORED: u32 = 0xE000_0000;
/// Where a saturated count is pinned: the middle of the saturated region,
/// 3 * 2^28 from either end, so no transient ever leaves it.
pub(super) const SATURATED_STORED: u32 = 0x9000_0000;
/// The count's half.
pub(super) const COUNT_MASK: u64 = 0xFFFF_FFFF;

/// The count a word holds, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Count {
    /// Below zero: a refused put, being undone.
    Negative,
    /// A live count.
    Live(u32),
    /// Saturated.
    Saturated,
    /// Dead.
    Dead,
}

#[inline(always)]
pub(super) fn decode(word: u64) -> Count {
    let stored = (word & COUNT_MASK) as u32;
    if stored < BIAS {
        Count::Negative
    } else if stored < BIAS + SATURATED {
        Count::Live(stored - BIAS)
    } else if stored < DEAD_LOW {
        Count::Saturated
    } else {
        Count::Dead
    }
}

/// The count a word reports: `None` if dead, [`SATURATED`] if saturated,
/// a transient below zero as zero.
pub(super) fn reported(word: u64) -> Option<u32> {
    match decode(word) {
        Count::Negative => Some(0),
        Count::Live(n) => Some(n),
        Count::Saturated => Some(SATURATED),
        Count::Dead => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every region's resting value keeps 2^29 values of headroom on each
    /// side (the module docs' promise), so no pile of in-flight transients
    /// moves a word into another region.
    #[test]
    fn every_resting_value_has_its_headroom() {
        const HEADROOM: u32 = 1 << 29;
        let zero = BIAS;
        let resting = [
            (zero, Count::Live(0), Count::Negative),
            (SATURATED_STORED, Count::Saturated, Count::Saturated),
            (DEAD_STORED, Count::Dead, Count::Dead),
        ];
        for (stored, at, below) in resting {
            assert_eq!(decode(u64::from(stored)), at);
            assert_eq!(decode(u64::from(stored - 1)), below, "{stored:#x} - 1");
            assert_eq!(
                decode(u64::from(stored - HEADROOM)),
                below,
                "{stored:#x} - 2^29"
            );
            let above = stored
                .checked_add(HEADROOM - 1)
                .expect("no carry into the lock bit");
            // Live counts above zero are other values of the same region.
            let region = |stored: u32| core::mem::discriminant(&decode(u64::from(stored)));
            assert_eq!(region(above), region(stored), "{stored:#x} + 2^29 - 1");
        }
        // A dead word's transients above and below stay dead.
        assert_eq!(decode(u64::from(DEAD_STORED + (HEADROOM - 1))), Count::Dead);
        assert_eq!(decode(u64::from(DEAD_STORED - HEADROOM)), Count::Dead);
    }
}
