//! [`VirtiofsdTable`]: the baseline, counting as virtiofsd's passthrough
//! inode store does. Each inode is an `Arc` with an atomic count of the
//! kernel's lookups; requests and handles hold `Arc` clones. A lookup
//! takes the store's lock shared and counts the kernel's lookup under it
//! (so a concurrent `FORGET` cannot remove the inode in between); every
//! `FORGET` takes the lock exclusively, and the inode leaves the store when
//! the kernel's count reaches zero.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::host_inode::HostInode;
use crate::table::{ForgetError, InodeData, InodeTable, Key, ROOT_ID};

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

#[derive(Default)]
struct Store {
    by_id: HashMap<u64, Arc<VirtiofsdInode>>,
    by_key: HashMap<Key, Arc<VirtiofsdInode>>,
}

/// The virtiofsd-style inode table: an `Arc` per inode and an atomic count
/// of the kernel's lookups, counted under the store's lock held shared; every
/// `FORGET` takes the lock exclusively, and the inode leaves the store when
/// the kernel's count reaches zero.
pub struct VirtiofsdTable {
    store: RwLock<Store>,
    next_id: AtomicU64,
}

impl VirtiofsdTable {
    fn read(&self) -> RwLockReadGuard<'_, Store> {
        self.store.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(store: &mut Store, id: u64, key: Key, host: HostInode, lookups: u64) {
        let inode = Arc::new(VirtiofsdInode {
            data: InodeData { id, key, host },
            kernel_lookups: AtomicU64::new(lookups),
        });
        store.by_id.insert(id, inode.clone());
        store.by_key.insert(key, inode);
    }
}

impl InodeTable for VirtiofsdTable {
    type Ref = Arc<VirtiofsdInode>;
    const NAME: &'static str = "virtiofsd";

    fn new(root: HostInode, key: Key) -> Self {
        let table = VirtiofsdTable {
            store: RwLock::new(Store::default()),
            next_id: AtomicU64::new(ROOT_ID + 1),
        };
        // The root's count never reaches zero: one lookup of its own.
        Self::insert(&mut table.write(), ROOT_ID, key, root, 1);
        table
    }

    fn lookup<F: FnOnce() -> HostInode>(&self, key: Key, host: F) -> u64 {
        if let Some(inode) = self.read().by_key.get(&key) {
            // Relaxed: under the store's lock, which orders it against the
            // forget that would remove the inode.
            inode.kernel_lookups.fetch_add(1, Ordering::Relaxed);
            return inode.data.id;
        }
        let mut store = self.write();
        if let Some(inode) = store.by_key.get(&key) {
            inode.kernel_lookups.fetch_add(1, Ordering::Relaxed);
            return inode.data.id;
        }
        // Relaxed: a unique number is all that is needed.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Self::insert(&mut store, id, key, host(), 1);
        id
    }

    fn get(&self, id: u64) -> Option<Self::Ref> {
        self.read().by_id.get(&id).cloned()
    }

    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError> {
        let mut store = self.write();
        let inode = store.by_id.get(&id).ok_or(ForgetError::UnknownInode(id))?;
        // Relaxed: under the exclusive lock.
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
            if store.by_key.get(&key).is_some_and(|i| i.data.id == id) {
                store.by_key.remove(&key);
            }
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
