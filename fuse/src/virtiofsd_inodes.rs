//! [`VirtiofsdTable`]: the baseline, counting as virtiofsd's passthrough
//! inode store does. Each inode is an `Arc` with an atomic count of the
//! kernel's lookups; requests and handles hold `Arc` clones. A lookup
//! takes the store's lock shared and counts the kernel's lookup under it
//! (so a concurrent `FORGET` cannot remove the inode in between); every
//! `FORGET` takes the lock exclusively, and the inode leaves the store when
//! the kernel's count reaches zero. It is keyed by node id alone: a node
//! id is a function of the host inode here ([`NodeIds`]), where virtiofsd
//! numbers its inodes and keeps a second map by host inode.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::host_inode::HostInode;
use crate::node_id::NodeIds;
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

type Store = HashMap<u64, Arc<VirtiofsdInode>, ServerHasher>;

/// The virtiofsd-style inode table: an `Arc` per inode and an atomic count
/// of the kernel's lookups, counted under the store's lock held shared; every
/// `FORGET` takes the lock exclusively, and the inode leaves the store when
/// the kernel's count reaches zero.
pub struct VirtiofsdTable {
    store: RwLock<Store>,
    ids: NodeIds,
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
        store.insert(id, inode);
    }
}

impl InodeTable for VirtiofsdTable {
    type Ref = Arc<VirtiofsdInode>;
    const NAME: &'static str = "virtiofsd";

    fn new(root: HostInode, key: Key) -> Self {
        let table = VirtiofsdTable {
            store: RwLock::new(Store::default()),
            ids: NodeIds::new(key),
        };
        // The root's count never reaches zero: one lookup of its own.
        Self::insert(&mut table.write(), ROOT_ID, key, root, 1);
        table
    }

    fn lookup<F: FnOnce() -> HostInode>(&self, key: Key, host: F) -> u64 {
        // A live inode of another birth under the id (the host gave a
        // deleted file's number to this one): this one is numbered.
        let id_in = |store: &Store| {
            let id = self.ids.id_of(key);
            match store.get(&id) {
                Some(inode) if inode.data.key != key => self.ids.numbered(key),
                _ => id,
            }
        };
        {
            let store = self.read();
            let id = id_in(&store);
            if let Some(inode) = store.get(&id) {
                // Relaxed: under the store's lock, which orders it against
                // the forget that would remove the inode.
                inode.kernel_lookups.fetch_add(1, Ordering::Relaxed);
                return id;
            }
        }
        let mut store = self.write();
        let id = id_in(&store);
        if let Some(inode) = store.get(&id) {
            inode.kernel_lookups.fetch_add(1, Ordering::Relaxed);
            return id;
        }
        Self::insert(&mut store, id, key, host(), 1);
        id
    }

    fn lookup_known(&self, key: Key) -> Option<u64> {
        let store = self.read();
        let (id, inode) = self
            .ids
            .known_ids(key)
            .find_map(|id| Some((id, store.get(&id).filter(|inode| inode.data.key == key)?)))?;
        // Relaxed: under the store's lock, as in `lookup`.
        inode.kernel_lookups.fetch_add(1, Ordering::Relaxed);
        Some(id)
    }

    fn find_known(&self, key: Key) -> Option<Self::Ref> {
        let mut ids = self.ids.known_ids(key);
        ids.find_map(|id| self.get(id).filter(|inode| inode.data.key == key))
    }

    fn get(&self, id: u64) -> Option<Self::Ref> {
        self.read().get(&id).cloned()
    }

    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError> {
        let mut store = self.write();
        let inode = store.get(&id).ok_or(ForgetError::UnknownInode(id))?;
        // Relaxed: under the exclusive lock.
        let held = inode.kernel_lookups.load(Ordering::Relaxed);
        let left = held.checked_sub(n).ok_or(ForgetError::MoreThanHeld {
            id,
            forget: n,
            held,
        })?;
        inode.kernel_lookups.store(left, Ordering::Relaxed);
        if left == 0 {
            store.remove(&id);
        }
        Ok(())
    }

    fn inodes(&self) -> usize {
        self.read().len()
    }

    fn kernel_lookups(&self, id: u64) -> Option<u64> {
        let inode = self.get(id)?;
        Some(inode.kernel_lookups.load(Ordering::Relaxed))
    }
}
