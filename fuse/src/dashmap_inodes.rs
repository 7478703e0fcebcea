//! [`DashmapTable`]: the second baseline, the inode table a FUSE author
//! writes on a well-kept concurrent map instead of lockref's table:
//! [`dashmap`]'s sharded maps (a hash map behind a reader-writer lock per
//! shard), an `Arc` per inode and an atomic count of the kernel's lookups.
//! It is here to measure the choice of the lockref table's design (chains
//! walked under an epoch pin, ids naming type-stable slots, one atomic on
//! the entry) against a map that
//! spreads its locks instead of removing them.
//!
//! Two maps, as a FUSE author keeps them: the inodes by host inode (for
//! `LOOKUP`) and by node id (for every other request), the node ids the
//! table's own, counted from 2. Its protocol, each step under one shard
//! lock: a lookup that finds the inode by key counts the kernel's lookup
//! only while the count is above zero (under the shard's read lock); a
//! `FORGET` takes its lookups off the same way, and the one that reaches
//! zero removes the inode from both maps if its count is still zero (each
//! shard's write lock, and by key only if the key still maps to this
//! inode). A count at zero never rises again, so the removal's check is
//! final; a lookup that meets it puts a new inode, with a new node id, in
//! its place under the key shard's write lock, which the removal then
//! leaves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;

use crate::host_inode::HostInode;
use crate::table::{ForgetError, InodeData, InodeTable, Key, ServerHasher, ROOT_ID};

/// An inode of the sharded table.
pub struct DashmapInode {
    data: InodeData,
    /// The kernel's lookups: raised only above zero, and the inode leaves
    /// the map when a `FORGET` brings it to zero.
    kernel_lookups: AtomicU64,
}

impl std::ops::Deref for DashmapInode {
    type Target = InodeData;
    fn deref(&self) -> &InodeData {
        &self.data
    }
}

impl DashmapInode {
    /// One more of the kernel's lookups, unless it has none left (the
    /// inode is leaving the map).
    fn count_lookup(&self) -> bool {
        // Relaxed: a counter; the map's shard locks order the removal.
        self.kernel_lookups
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n > 0).then(|| n.saturating_add(1))
            })
            .is_ok()
    }
}

/// The inode table on two `DashMap`s: by host inode and by node id.
pub struct DashmapTable {
    by_key: DashMap<Key, Arc<DashmapInode>, ServerHasher>,
    by_id: DashMap<u64, Arc<DashmapInode>, ServerHasher>,
    /// The next node id.
    next_id: AtomicU64,
}

impl DashmapTable {
    fn make(id: u64, key: Key, host: HostInode) -> Arc<DashmapInode> {
        Arc::new(DashmapInode {
            data: InodeData { id, key, host },
            kernel_lookups: AtomicU64::new(1),
        })
    }
}

impl InodeTable for DashmapTable {
    type Ref = Arc<DashmapInode>;
    const NAME: &'static str = "dashmap";

    fn new(root: HostInode, key: Key) -> Self {
        let table = DashmapTable {
            by_key: DashMap::with_hasher(ServerHasher::default()),
            by_id: DashMap::with_hasher(ServerHasher::default()),
            next_id: AtomicU64::new(ROOT_ID + 1),
        };
        // The root's count never reaches zero: one lookup of its own.
        let root = Self::make(ROOT_ID, key, root);
        table.by_id.insert(ROOT_ID, root.clone());
        table.by_key.insert(key, root);
        table
    }

    fn lookup<F: FnOnce() -> HostInode>(&self, key: Key, host: F) -> u64 {
        if let Some(id) = self.lookup_known(key) {
            return id;
        }
        match self.by_key.entry(key) {
            Entry::Occupied(found) if found.get().count_lookup() => found.get().data.id,
            // Absent, or its inode is leaving: a new one in its place.
            named => {
                // Relaxed: a counter; each id is taken once.
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let inode = Self::make(id, key, host());
                self.by_id.insert(id, inode.clone());
                named.insert(inode);
                id
            }
        }
    }

    fn lookup_known(&self, key: Key) -> Option<u64> {
        // Under the shard's read lock.
        let inode = self.by_key.get(&key)?;
        inode.count_lookup().then(|| inode.data.id)
    }

    fn find_known(&self, key: Key) -> Option<Self::Ref> {
        self.by_key.get(&key).map(|inode| inode.clone())
    }

    fn get(&self, id: u64) -> Option<Self::Ref> {
        self.by_id.get(&id).map(|inode| inode.clone())
    }

    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError> {
        let (left, key) = {
            let inode = self.by_id.get(&id).ok_or(ForgetError::UnknownInode(id))?;
            // Relaxed: as in `count_lookup`.
            let held = inode
                .kernel_lookups
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                    held.checked_sub(n)
                })
                .map_err(|held| {
                    if held == 0 {
                        ForgetError::UnknownInode(id)
                    } else {
                        ForgetError::MoreThanHeld {
                            id,
                            forget: n,
                            held,
                        }
                    }
                })?;
            (held - n, inode.data.key)
        };
        if left == 0 && n > 0 {
            // Relaxed: under each shard's write lock, as `count_lookup`.
            let leaving = |i: &Arc<DashmapInode>| {
                i.data.id == id && i.kernel_lookups.load(Ordering::Relaxed) == 0
            };
            self.by_key.remove_if(&key, |_, i| leaving(i));
            self.by_id.remove_if(&id, |_, i| leaving(i));
        }
        Ok(())
    }

    fn inodes(&self) -> usize {
        self.by_id.len()
    }

    fn kernel_lookups(&self, id: u64) -> Option<u64> {
        let inode = self.by_id.get(&id)?;
        Some(inode.kernel_lookups.load(Ordering::Relaxed))
    }
}
