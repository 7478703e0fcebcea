//! Inodes: what a dentry names. A directory inode holds its entries (the
//! "disk" of this in-memory filesystem) behind a reader-writer lock that
//! stands in for the kernel's `i_rwsem`.

use std::boxed::Box;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::sync::{AtomicU64, Ordering, RwLock};

/// What kind of object an inode is.
///
/// ```
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// assert_eq!(cache.alloc_pseudo().dentry().kind(), Some(lockref_dcache::InodeKind::Pipe));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InodeKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A pipe or socket (pseudo filesystem).
    Pipe,
}

/// A directory's entries: the filesystem's truth that the dcache caches.
pub(crate) type Entries = BTreeMap<Box<[u8]>, Arc<Inode>>;

/// An inode.
pub(crate) struct Inode {
    pub(crate) ino: u64,
    pub(crate) kind: InodeKind,
    /// `i_rwsem`: shared for lookups and revalidation, exclusive for
    /// changing the entries. Empty for non-directories.
    pub(crate) rwsem: RwLock<Entries>,
    /// Bumped (under `rwsem` held exclusively) whenever the entries
    /// change; revalidation compares it with what a dentry last verified.
    pub(crate) generation: AtomicU64,
    /// Exclusive acquisitions of `rwsem`, for tests that assert a path
    /// took no directory lock.
    #[cfg(feature = "testing")]
    pub(crate) write_locks: core::sync::atomic::AtomicUsize,
}

impl Inode {
    pub(crate) fn new(ino: u64, kind: InodeKind) -> Arc<Self> {
        Arc::new(Inode {
            ino,
            kind,
            rwsem: RwLock::new(BTreeMap::new()),
            generation: AtomicU64::new(0),
            #[cfg(feature = "testing")]
            write_locks: core::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Takes `i_rwsem` exclusively (`inode_lock`).
    pub(crate) fn lock_write(&self) -> impl core::ops::DerefMut<Target = Entries> + '_ {
        #[cfg(feature = "testing")]
        self.write_locks
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        self.rwsem.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `i_rwsem` shared (`inode_lock_shared`).
    pub(crate) fn lock_read(&self) -> impl core::ops::Deref<Target = Entries> + '_ {
        self.rwsem.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a change of the entries; call with `rwsem` held exclusively.
    pub(crate) fn bump_generation(&self) {
        // Release: pairs with the Acquire in revalidation, which reads it
        // under `rwsem` shared anyway; the lock orders it, this documents it.
        self.generation.fetch_add(1, Ordering::Release);
    }
}
