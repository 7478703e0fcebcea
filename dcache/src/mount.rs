//! Mounts: here only the reference count a path holds on one.

use crate::sharded_count::ShardedCount;

/// A mounted filesystem. A [`PathRef`](crate::PathRef) holds a reference on
/// its mount beside the one on its dentry (`mntget`/`mntput`). The count is
/// split per thread, as the kernel's per-cpu `mnt_count`, so it adds no
/// shared cache line to the paths measured.
pub(crate) struct Mount {
    count: ShardedCount,
}

impl Mount {
    pub(crate) fn new() -> Self {
        Mount {
            count: ShardedCount::new(),
        }
    }

    /// `mntget`.
    #[inline]
    pub(crate) fn get(&self) {
        self.count.add(1);
    }

    /// `mntput`.
    #[inline]
    pub(crate) fn put(&self) {
        self.count.add(-1);
    }

    /// References held now (exact when no thread is changing them).
    #[cfg(feature = "testing")]
    pub(crate) fn count(&self) -> isize {
        self.count.sum()
    }
}
