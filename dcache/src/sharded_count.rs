//! A counter split across cache lines by thread, for counts that many
//! threads change and few read (mount references, live objects), as the
//! kernel's per-cpu `mnt_count` and `nr_dentry` are.

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicIsize, Ordering};

/// Shards per counter. One under loom: which shard a thread gets depends
/// on thread start order across executions, and a model must touch the
/// same objects every time it replays a path.
const SHARDS: usize = if cfg!(loom) { 1 } else { 16 };

crate::sync::thread_local! {
    /// This thread's shard.
    static SHARD: usize = next_shard();
}

#[cfg(loom)]
fn next_shard() -> usize {
    0
}

#[cfg(not(loom))]
fn next_shard() -> usize {
    // Plain `core` atomic, not modelled: only spreads threads over shards.
    static NEXT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed) % SHARDS
}

/// A sum of per-thread-shard deltas.
pub(crate) struct ShardedCount {
    shards: [CachePadded<AtomicIsize>; SHARDS],
}

impl ShardedCount {
    pub(crate) fn new() -> Self {
        Self {
            shards: core::array::from_fn(|_| CachePadded::new(AtomicIsize::new(0))),
        }
    }

    /// Adds `delta` to this thread's shard.
    #[inline]
    pub(crate) fn add(&self, delta: isize) {
        let shard = SHARD.with(|s| *s);
        // Relaxed: a count, read only as a sum when the caller knows the
        // changes it cares about have happened (after joins, or under a
        // lock that ordered them).
        self.shards[shard].fetch_add(delta, Ordering::Relaxed);
    }

    /// The sum of all shards.
    pub(crate) fn sum(&self) -> isize {
        // Relaxed: see `add`.
        self.shards.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}
