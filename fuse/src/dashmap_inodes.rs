//! [`DashmapTable`]: the second baseline, the inode table a FUSE author
//! writes on a well-kept concurrent map instead of lockref's table:
//! [`dashmap`]'s sharded maps (a hash map behind a reader-writer lock per
//! shard), an `Arc` per inode and an atomic count of the kernel's lookups.
//! It is here to measure the choice of the lockref table's design (chains
//! walked under an epoch pin, ids naming type-stable slots, one atomic on
//! the entry) against a map that
//! spreads its locks instead of removing them.
//!
//! Its protocol, each step under one shard lock of its one map, by node id
//! (a function of the host inode, [`NodeIds`]): a lookup that finds the
//! inode counts the kernel's lookup only while the count is above zero
//! (under the shard's read lock); a `FORGET` takes its lookups off the
//! same way, and the one that reaches zero removes the inode if its count
//! is still zero (the shard's write lock). A count at zero never rises
//! again, so the removal's check is final; a lookup that meets it puts a
//! new inode in its place under the shard's write lock, which the removal
//! then leaves (its count is not zero).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;

use crate::host_inode::HostInode;
use crate::node_id::NodeIds;
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

/// The inode table on a `DashMap` by node id.
pub struct DashmapTable {
    by_id: DashMap<u64, Arc<DashmapInode>, ServerHasher>,
    ids: NodeIds,
}

impl DashmapTable {
    /// One more of the kernel's lookups on `key`'s inode under `id`, made
    /// by `host` if absent or leaving; `host` back if a live inode of
    /// another birth holds `id` (the host gave a deleted file's number to
    /// this one while the kernel holds the first).
    fn lookup_at<F: FnOnce() -> HostInode>(&self, id: u64, key: Key, host: F) -> Result<(), F> {
        let found = self
            .by_id
            .get(&id)
            .map(|i| i.key == key && i.count_lookup());
        if found == Some(true) {
            return Ok(());
        }
        match self.by_id.entry(id) {
            Entry::Occupied(named) if named.get().key == key && named.get().count_lookup() => {
                Ok(())
            }
            // Relaxed: as in `count_lookup`; under the shard's write lock.
            Entry::Occupied(named)
                if named.get().key != key
                    && named.get().kernel_lookups.load(Ordering::Relaxed) > 0 =>
            {
                Err(host)
            }
            // Absent, or its inode is leaving: a new one in its place.
            named => {
                named.insert(Self::make(id, key, host()));
                Ok(())
            }
        }
    }

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
            by_id: DashMap::with_hasher(ServerHasher::default()),
            ids: NodeIds::new(key),
        };
        // The root's count never reaches zero: one lookup of its own.
        table.by_id.insert(ROOT_ID, Self::make(ROOT_ID, key, root));
        table
    }

    fn lookup<F: FnOnce() -> HostInode>(&self, key: Key, host: F) -> u64 {
        let mut host = host;
        let mut id = self.ids.id_of(key);
        // A numbered id names no other inode, so a second try is the last.
        loop {
            match self.lookup_at(id, key, host) {
                Ok(()) => return id,
                Err(back) => {
                    host = back;
                    id = self.ids.numbered(key);
                }
            }
        }
    }

    fn lookup_known(&self, key: Key) -> Option<u64> {
        self.ids.known_ids(key).find(|&id| {
            // Under the shard's read lock, as `lookup_at`'s hit.
            self.by_id
                .get(&id)
                .is_some_and(|inode| inode.data.key == key && inode.count_lookup())
        })
    }

    fn find_known(&self, key: Key) -> Option<Self::Ref> {
        let mut ids = self.ids.known_ids(key);
        ids.find_map(|id| self.get(id).filter(|inode| inode.data.key == key))
    }

    fn get(&self, id: u64) -> Option<Self::Ref> {
        self.by_id.get(&id).map(|inode| inode.clone())
    }

    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError> {
        let left = {
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
            held - n
        };
        if left == 0 && n > 0 {
            self.by_id
                .remove_if(&id, |_, i| i.kernel_lookups.load(Ordering::Relaxed) == 0);
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
