//! The fetch_add word's encoding: the biased count's regions in the low
//! half, the lock bit, and their decoding (the layout is in the
//! [module docs](super)).

/// The count's bias in the low half.
pub(super) const BIAS: u32 = 1 << 30;
/// The lowest saturated count.
pub const SATURATED: u32 = 1 << 29;
/// The stored value of a dead count.
pub(super) const DEAD_STORED: u32 = 0xC000_0000;
/// Where a saturated count is pinned: the middle of the saturated region,
/// 2^29 and more from either end, so no transient ever leaves it.
pub(super) const SATURATED_STORED: u32 = 0x9000_0000;
/// The lock bit.
pub(super) const LOCKED: u64 = 1 << 32;
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
    } else if stored < DEAD_STORED {
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
