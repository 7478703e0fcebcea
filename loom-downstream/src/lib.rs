//! A small inode cache as a FUSE author would write it on lockref's public
//! API: a map from inode number to a counted inode behind a mutex, lookups
//! that revive nothing dead, and removal in `release` if the entry still
//! points to the inode. Its loom models (`tests/loom_inode.rs`) follow the
//! README's recipe for loom models of your own code, word for word.
//!
//! Beside it, [`InodeStore`], the same kind of store on `lockref-table`
//! (no `unsafe`), with its own models (`tests/loom_table.rs`) for the
//! recipe's table variant, and [`DentryTree`], a directory-entry tree on
//! the table (`tests/loom_dentry.rs`).

use std::collections::HashMap;
use std::ptr::NonNull;

use lockref::{CountedRef, Fate, LockRef, LockRefGuard, RefCounted};

pub mod dentry_tree;
mod inode_store;
mod sync;
pub use dentry_tree::DentryTree;
pub use inode_store::{Inode as StoreInode, InodeStore};
use sync::{Arc, AtomicUsize, Mutex, Ordering};

/// A handle to the cache; clones share it.
#[derive(Clone, Default)]
pub struct Cache {
    table: Arc<Table>,
}

/// The table: inode numbers to inodes, and how many were released.
#[derive(Default)]
struct Table {
    map: Mutex<HashMap<u64, Entry>>,
    released: AtomicUsize,
}

/// A map entry: the inode's address, with its allocation's provenance.
struct Entry(NonNull<Inode>);

// SAFETY: an entry is only dereferenced under the map's lock, through
// `CountedRef::try_get`, and the inode is `Send + Sync`.
unsafe impl Send for Entry {}

/// An inode: its number, its lockref, and the table it is in.
pub struct Inode {
    /// The inode number.
    pub ino: u64,
    lockref: LockRef<()>,
    table: Arc<Table>,
}

// SAFETY: inodes are made only by `Table::lookup_or_insert` (a `Box`),
// counted only by `CountedRef`; `release` removes the map's entry (if it
// is still this inode) under the map's lock, then frees the box once.
unsafe impl RefCounted for Inode {
    type Data = ();
    type Word = lockref::CasWord;
    type Grace = ();

    fn lockref(&self) -> &LockRef<()> {
        &self.lockref
    }

    fn last_put(&self, _: &mut LockRefGuard<'_, ()>) -> Fate {
        Fate::Kill
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: dead and unreferenced; lookups reach it only under the
        // map's lock, taken here before the free.
        let inode = unsafe { this.as_ref() };
        let table = inode.table.clone();
        {
            let mut map = table.map.lock().unwrap();
            if map.get(&inode.ino).is_some_and(|e| e.0 == this) {
                map.remove(&inode.ino);
            }
        }
        // SAFETY: from `Box::into_raw` in `lookup_or_insert`; no lookup
        // can find it any more.
        drop(unsafe { Box::from_raw(this.as_ptr()) });
        table.released.fetch_add(1, Ordering::Relaxed);
        None
    }
}

impl Cache {
    /// A new, empty cache.
    pub fn new() -> Cache {
        Cache::default()
    }

    /// The inode numbered `ino`: the live one, or a new one if it is absent
    /// or dying (its last put marked it dead, and its `release` has not
    /// removed it yet).
    pub fn lookup_or_insert(&self, ino: u64) -> CountedRef<Inode> {
        let mut map = self.table.map.lock().unwrap();
        if let Some(entry) = map.get(&ino) {
            // SAFETY: an entry's inode is freed only after `release`
            // removed it under this lock, which we hold.
            if let Some(found) = unsafe { CountedRef::try_get(entry.0) } {
                return found;
            }
        }
        let inode = Box::new(Inode {
            ino,
            lockref: LockRef::new(()),
            table: self.table.clone(),
        });
        // SAFETY: `into_raw` of a box is never null.
        let ptr = unsafe { NonNull::new_unchecked(Box::into_raw(inode)) };
        map.insert(ino, Entry(ptr));
        // SAFETY: the new inode's count of one is this handle's.
        unsafe { CountedRef::from_raw(ptr) }
    }

    /// Inodes released so far.
    pub fn released(&self) -> usize {
        self.table.released.load(Ordering::Relaxed)
    }

    /// Entries in the map now.
    pub fn len(&self) -> usize {
        self.table.map.lock().unwrap().len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
