//! [`VirtiofsdTable`]: the baseline, counting as virtiofsd's passthrough
//! inode store does. Each inode is an `Arc` with an atomic count of the
//! kernel's lookups; requests and handles hold `Arc` clones. A lookup
//! takes the store's lock shared and counts the kernel's lookup under it
//! (so a concurrent `FORGET` cannot remove the inode in between); every
//! `FORGET` takes the lock exclusively, and the inode leaves the store when
//! the kernel's count reaches zero. As virtiofsd's, it numbers its inodes
//! (the node ids, counted from 2) and keeps two maps under the one lock:
//! by node id and by host inode.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::host_inode::HostInode;
use crate::table::{ForgetError, InodeData, InodeTable, Key, ServerHasher, ROOT_ID};

/// An inode of the locked table.
pub struct VirtiofsdInode {
    data: InodeData,
    /// The kernel's lookups (virtiofsd's `refcount`), changed under the
    /// store's lock (shared for a lookup, exclusive for a forget).
    kernel_lookups: AtomicU64,
}

impl std::ops::Deref for VirtiofsdInode {
    type Target = InodeData;
    fn deref(&self) -> &InodeData {
        &self.data
    }
}

/// The inodes by node id, their node ids by host inode, and the next
/// node id.
#[derive(Default)]
struct Store {
    by_id: HashMap<u64, Arc<VirtiofsdInode>, ServerHasher>,
    by_key: HashMap<Key, u64, ServerHasher>,
    next_id: u64,
}

/// The inode table behind one reader-writer lock, as virtiofsd's.
pub struct VirtiofsdTable {
    store: RwLock<Store>,
}

impl VirtiofsdTable {
    fn read(&self) -> RwLockReadGuard<'_, Store> {
        self.store.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(store: &mut Store, id: u64, key: Key, host: HostInode) {
        let inode = Arc::new(VirtiofsdInode {
            data: InodeData { id, key, host },
            kernel_lookups: AtomicU64::new(1),
        });
        store.by_id.insert(id, inode);
        store.by_key.insert(key, id);
    }

    /// One more of the kernel's lookups on `key`'s inode in `store`, if
    /// there: its node id.
    fn count_in(store: &Store, key: Key) -> Option<u64> {
        let id = *store.by_key.get(&key)?;
        // Relaxed: under the store's lock (shared), which every FORGET
        // takes exclusively.
        store.by_id[&id]
            .kernel_lookups
            .fetch_add(1, Ordering::Relaxed);
        Some(id)
    }
}

impl InodeTable for VirtiofsdTable {
    type Ref = Arc<VirtiofsdInode>;
    const NAME: &'static str = "virtiofsd";

    fn new(root: HostInode, key: Key) -> Self {
        let table = VirtiofsdTable {
            store: RwLock::new(Store {
                next_id: ROOT_ID + 1,
                ..Store::default()
            }),
        };
        Self::insert(&mut table.write(), ROOT_ID, key, root);
        table
    }

    fn lookup<F: FnOnce() -> HostInode>(&self, key: Key, host: F) -> u64 {
        if let Some(id) = Self::count_in(&self.read(), key) {
            return id;
        }
        let mut store = self.write();
        if let Some(id) = Self::count_in(&store, key) {
            return id;
        }
        let id = store.next_id;
        store.next_id += 1;
        Self::insert(&mut store, id, key, host());
        id
    }

    fn lookup_known(&self, key: Key) -> Option<u64> {
        Self::count_in(&self.read(), key)
    }

    fn find_known(&self, key: Key) -> Option<Self::Ref> {
        let store = self.read();
        let id = store.by_key.get(&key)?;
        store.by_id.get(id).cloned()
    }

    fn get(&self, id: u64) -> Option<Self::Ref> {
        self.read().by_id.get(&id).cloned()
    }

    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError> {
        let mut store = self.write();
        let inode = store.by_id.get(&id).ok_or(ForgetError::UnknownInode(id))?;
        // Relaxed: under the store's exclusive lock.
        let held = inode.kernel_lookups.load(Ordering::Relaxed);
        let left = held.checked_sub(n).ok_or(ForgetError::MoreThanHeld {
            id,
            forget: n,
            held,
        })?;
        inode.kernel_lookups.store(left, Ordering::Relaxed);
        if left == 0 {
            let key = inode.data.key;
            store.by_id.remove(&id);
            store.by_key.remove(&key);
        }
        Ok(())
    }

    fn inodes(&self) -> usize {
        self.read().by_id.len()
    }

    fn kernel_lookups(&self, id: u64) -> Option<u64> {
        let inode = self.get(id)?;
        Some(inode.kernel_lookups.load(Ordering::Relaxed))
    }
}
