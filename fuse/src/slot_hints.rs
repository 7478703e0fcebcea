//! [`SlotHints`]: a lossy map from node id to the table slot that last
//! held it, so a request naming a node id reaches its inode by
//! `Table::get` (one atomic on the inode, no epoch pin, no hash) instead
//! of a walk of its key's chain.
//!
//! A hint is only a guess: a slot id names one entry of one generation,
//! and the inode found through it is used only if its node id is the one
//! asked for, read after the reference is taken. A torn or stale hint
//! (two words written apart, a slot reused, an entry gone) finds another
//! inode or none, and the caller walks the chain, as it would with no
//! hint.

use std::sync::atomic::{AtomicU64, Ordering};

/// Hints kept: a direct-mapped array, 16 bytes each (64 KiB).
const HINTS: usize = 4096;

/// Node id to slot id, direct-mapped and lossy.
pub(crate) struct SlotHints {
    /// `[node id, slot id]` pairs; a node id of 0 (never handed out) is
    /// an empty hint.
    pairs: Box<[[AtomicU64; 2]]>,
}

impl SlotHints {
    pub(crate) fn new() -> Self {
        SlotHints {
            pairs: (0..HINTS)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
        }
    }

    fn pair(&self, node: u64) -> &[AtomicU64; 2] {
        // Fibonacci hashing: node ids of one directory are often
        // consecutive, and their hints should not share a line.
        let index = node.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - HINTS.trailing_zeros());
        &self.pairs[index as usize]
    }

    /// The slot that last held `node`, if the hint is still for it (a
    /// guess: see the module's docs).
    pub(crate) fn slot(&self, node: u64) -> Option<u64> {
        let [id, slot] = self.pair(node);
        // Relaxed: a guess, checked by the caller after the reference is
        // taken; no other memory is read through it.
        (id.load(Ordering::Relaxed) == node).then(|| slot.load(Ordering::Relaxed))
    }

    /// Remembers that `slot` holds `node`. Writes nothing when the hint is
    /// there already (the common case: a `LOOKUP` of an inode the kernel
    /// holds), so a hot inode's hint line stays shared.
    pub(crate) fn remember(&self, node: u64, slot: u64) {
        let [id, held] = self.pair(node);
        // Relaxed: as in `slot`.
        if id.load(Ordering::Relaxed) == node && held.load(Ordering::Relaxed) == slot {
            return;
        }
        held.store(slot, Ordering::Relaxed);
        id.store(node, Ordering::Relaxed);
    }
}
