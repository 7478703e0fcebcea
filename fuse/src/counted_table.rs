//! [`CountedTable`]: each inode counted by an embedded [`LockRef`]
//! through [`CountedRef`]. A lookup that hits takes the table's lock
//! shared and its reference without a lock (`get_not_dead`); a put is one
//! lockless atomic unless it is the last, and only the last takes the
//! table's lock, exclusively, to remove the inode.
//!
//! The table's lock is taken before an inode's (a lookup finds the inode
//! under the table's lock, then counts it), so the last put cannot take
//! the table's lock under the inode's: [`RefCounted::last_put`] kills the
//! inode (marks it dead under its own lock), and
//! [`RefCounted::release`] then removes it from the maps if they still
//! point to it and frees it. A lookup that meets a dead inode treats it as
//! absent and inserts a new one under the same key.

use crossbeam_utils::sync::{ShardedLock, ShardedLockReadGuard, ShardedLockWriteGuard};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use lockref::{CountedRef, Fate, LockRef, LockRefGuard, RefCounted};

use crate::table::{ForgetError, InodeData, InodeTable, Key, ROOT_ID};

/// An inode of the counted table.
pub struct CountedInode {
    data: InodeData,
    lockref: LockRef<()>,
    /// The kernel's lookups, of the references counted in `lockref`: what
    /// a `FORGET` may give back (an untrusted kernel is refused more).
    kernel_lookups: AtomicU64,
    /// The maps this inode is in. The table's `Shared` is boxed and
    /// outlives every inode (the table frees them before it).
    shared: NonNull<Shared>,
}

impl std::ops::Deref for CountedInode {
    type Target = InodeData;
    fn deref(&self) -> &InodeData {
        &self.data
    }
}

// SAFETY: the fields are immutable, atomic or behind the lockref; the
// `shared` pointer is to a `Sync` value that outlives the inode.
unsafe impl Send for CountedInode {}
// SAFETY: as for `Send`.
unsafe impl Sync for CountedInode {}

#[derive(Default)]
struct Maps {
    by_id: HashMap<u64, NonNull<CountedInode>>,
    by_key: HashMap<Key, NonNull<CountedInode>>,
}

struct Shared {
    /// Read by every request (a per-thread shard: no shared line), written
    /// only to insert a new inode and by the last put of one.
    maps: ShardedLock<Maps>,
    next_id: AtomicU64,
}

// SAFETY: the pointers in the maps are to `Sync` inodes, reached only
// under the lock.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

impl Shared {
    fn read(&self) -> ShardedLockReadGuard<'_, Maps> {
        self.maps.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> ShardedLockWriteGuard<'_, Maps> {
        self.maps.write().unwrap_or_else(|e| e.into_inner())
    }
}

// SAFETY: inodes are made only by `CountedTable` (`Box`), counted only
// through `CountedRef` and the raw references it hands the kernel;
// `release` removes the inode from the maps under their write lock (so no
// lookup is still looking at it: lookups count under the read lock) and
// frees it, once.
unsafe impl RefCounted for CountedInode {
    type Word = LockRef<()>;
    type Grace = ();

    fn lockref(&self) -> &LockRef<()> {
        &self.lockref
    }

    /// No reference left: the inode leaves the table (the kernel forgot
    /// it and nothing has it open).
    fn last_put(&self, _: &mut LockRefGuard<'_, ()>) -> Fate {
        Fate::Kill
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: dead and unreferenced, still allocated.
        let inode = unsafe { this.as_ref() };
        // SAFETY: the table's `Shared` outlives its inodes.
        let shared = unsafe { inode.shared.as_ref() };
        let mut maps = shared.write();
        if maps.by_id.get(&inode.data.id) == Some(&this) {
            maps.by_id.remove(&inode.data.id);
        }
        // A lookup may have replaced it under the same key already.
        if maps.by_key.get(&inode.data.key) == Some(&this) {
            maps.by_key.remove(&inode.data.key);
        }
        drop(maps);
        // SAFETY: out of both maps under their write lock: no lookup can
        // reach it, no reference is left. It came from `Box::into_raw`.
        drop(unsafe { Box::from_raw(this.as_ptr()) });
        None
    }
}

/// The inode table on [`CountedRef`]: a hit reads the maps (a per-thread
/// shard of their lock) and takes its reference without a lock; every put
/// is lockless but the last, which kills the inode under its own lock and
/// then removes it from the maps under their write lock.
pub struct CountedTable {
    shared: Box<Shared>,
    /// The table's own reference on the root, which never leaves.
    root: Option<CountedRef<CountedInode>>,
}

impl CountedTable {
    fn insert(&self, maps: &mut Maps, id: u64, key: Key, fd: OwnedFd) -> CountedRef<CountedInode> {
        let raw = Box::into_raw(Box::new(CountedInode {
            data: InodeData { id, key, fd },
            lockref: LockRef::new(()),
            kernel_lookups: AtomicU64::new(0),
            shared: NonNull::from(&*self.shared),
        }));
        // SAFETY: `Box::into_raw` is never null.
        let ptr = unsafe { NonNull::new_unchecked(raw) };
        maps.by_id.insert(id, ptr);
        maps.by_key.insert(key, ptr);
        // SAFETY: a new inode whose count of one is this reference.
        unsafe { CountedRef::from_raw(ptr) }
    }

    /// The inode of `key`, referenced: a live one found under the read
    /// lock (no write, the common case), else under the write lock, else
    /// a new one.
    fn find_or_insert(&self, key: Key, fd: impl FnOnce() -> OwnedFd) -> CountedRef<CountedInode> {
        {
            let maps = self.shared.read();
            if let Some(&ptr) = maps.by_key.get(&key) {
                // SAFETY: from the maps, under their lock.
                if let Some(r) = unsafe { Self::try_get(ptr) } {
                    return r;
                }
            }
        }
        let mut maps = self.shared.write();
        if let Some(&ptr) = maps.by_key.get(&key) {
            // SAFETY: as above.
            if let Some(r) = unsafe { Self::try_get(ptr) } {
                return r;
            }
        }
        // Relaxed: a unique number is all that is needed.
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        self.insert(&mut maps, id, key, fd())
    }

    /// The live inode `ptr` found in the maps, referenced.
    ///
    /// # Safety
    ///
    /// The maps' lock is held (either way), and `ptr` came from them.
    unsafe fn try_get(ptr: NonNull<CountedInode>) -> Option<CountedRef<CountedInode>> {
        // SAFETY: in the maps under their lock, so not freed (`release`
        // removes it under the write lock first); `get_not_dead` fails on
        // a killed one.
        unsafe { CountedRef::try_get(ptr) }
    }
}

impl InodeTable for CountedTable {
    type Ref = CountedRef<CountedInode>;
    const NAME: &'static str = "lockref";

    fn new(root: OwnedFd, key: Key) -> Self {
        let mut table = CountedTable {
            shared: Box::new(Shared {
                maps: ShardedLock::new(Maps::default()),
                next_id: AtomicU64::new(ROOT_ID + 1),
            }),
            root: None,
        };
        let mut maps = table.shared.write();
        let root = table.insert(&mut maps, ROOT_ID, key, root);
        drop(maps);
        table.root = Some(root);
        table
    }

    fn lookup<F: FnOnce() -> OwnedFd>(&self, key: Key, fd: F) -> u64 {
        let r = self.find_or_insert(key, fd);
        // Relaxed: only `forget` reads it, to bound what it gives back;
        // the kernel cannot forget this lookup before our reply, which
        // follows.
        r.kernel_lookups.fetch_add(1, Ordering::Relaxed);
        let id = r.data.id;
        // The reference is now the kernel's, given back by `forget`.
        let _ = CountedRef::into_raw(r);
        id
    }

    fn get(&self, id: u64) -> Option<Self::Ref> {
        let maps = self.shared.read();
        let &ptr = maps.by_id.get(&id)?;
        // SAFETY: from the maps, under their lock.
        unsafe { Self::try_get(ptr) }
    }

    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError> {
        let ptr = {
            let maps = self.shared.read();
            let &ptr = maps.by_id.get(&id).ok_or(ForgetError::UnknownInode(id))?;
            // SAFETY: in the maps under their lock: not freed.
            let inode = unsafe { ptr.as_ref() };
            // Relaxed: the count of references, not this number, orders
            // the inode's teardown; this only refuses a lying kernel.
            inode
                .kernel_lookups
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                    held.checked_sub(n)
                })
                .map_err(|held| ForgetError::MoreThanHeld {
                    id,
                    forget: n,
                    held,
                })?;
            ptr
        };
        // Outside the read lock: the last put takes the write lock.
        // SAFETY: the kernel owned `n` references (its lookups, handed
        // over by `hand_to_kernel`), just taken from `kernel_lookups`,
        // which keep the inode alive.
        unsafe { CountedRef::put_many(ptr, n) }.expect("the kernel's lookups are references");
        Ok(())
    }

    fn inodes(&self) -> usize {
        self.shared.read().by_id.len()
    }

    fn kernel_lookups(&self, id: u64) -> Option<u64> {
        let r = self.get(id)?;
        Some(r.kernel_lookups.load(Ordering::Relaxed))
    }
}

impl Drop for CountedTable {
    fn drop(&mut self) {
        drop(self.root.take());
        // What the kernel never forgot (an unmount need not send every
        // FORGET): free it all; no request can be running any more.
        let maps = std::mem::take(&mut *self.shared.write());
        for (_, ptr) in maps.by_id {
            // SAFETY: `&mut self`: no other user; each inode is in `by_id`
            // once and was made by `Box::into_raw`.
            drop(unsafe { Box::from_raw(ptr.as_ptr()) });
        }
    }
}
