//! The dentry: what a hash-chain walk reads, and the lockref. The counted
//! references to dentries and their life cycle are in `dentry_ref.rs`.
//!
//! # Layout
//!
//! The fields a hash-chain walk reads (`hash`, `next`, `parent`, `name`,
//! `inode`, `flags`) come first; the [`LockRef`] starts on its own cache
//! line, so a lookup reading a popular dentry does not share a line with
//! the count that every `dget`/`dput` writes (the kernel moved `d_lockref`
//! out of the lookup line in 2024 for +55% on stat2). Asserted below.
//!
//! # Lifetime
//!
//! A dentry is alive while its count is `>= 0`. At count zero it is kept
//! if hashed (a cached name or a cached miss: it goes on the LRU of unused
//! dentries, from which the shrinker may kill it later), else killed: marked dead
//! under its lock, unhashed, and freed after an epoch grace period (if it
//! was ever reachable from a hash chain) or at once (if it never was). Each
//! dentry except a self-parented one holds a reference on its parent,
//! dropped when it is killed (the `dput` cascade).

use core::ptr::NonNull;
use std::sync::Arc;

use crate::dentry_word::{DentryLockRef, DentryWord};
use crossbeam_utils::CachePadded;

use crate::hash_table::Table;
use crate::inode::{Inode, InodeKind};
use crate::lru::LruLinks;
use crate::name::Name;
use crate::sync::{AtomicPtr, AtomicU32, Ordering};

/// In a hash chain (reachable by lookups).
pub(crate) const HASHED: u32 = 1 << 0;
/// Was once in a hash chain: must be freed after a grace period.
pub(crate) const WAS_HASHED: u32 = 1 << 1;
/// A pipe or socket dentry (seed 002); never hashed.
pub(crate) const PSEUDO: u32 = 1 << 2;
/// Revalidate before trusting a cached lookup (the filesystem has a
/// `d_revalidate` hook).
pub(crate) const REVALIDATE: u32 = 1 << 3;
/// On the LRU of unused dentries; set and cleared under the LRU's lock.
pub(crate) const ON_LRU: u32 = 1 << 4;
/// Used again since it was put on the LRU: the shrinker's second chance.
pub(crate) const REFERENCED: u32 = 1 << 5;

/// What the dentry lock guards beyond the count: the revalidation state.
#[derive(Default)]
pub(crate) struct Revalidation {
    /// The directory generation this dentry was last revalidated against.
    pub(crate) verified_gen: u64,
}

/// A directory entry.
#[repr(C)]
pub(crate) struct Dentry {
    /// Hash of (parent, name); immutable.
    pub(crate) hash: u64,
    /// Next in the hash chain; written under the bucket lock.
    pub(crate) next: crossbeam_epoch::Atomic<Dentry>,
    /// The parent (itself for a root or a pseudo dentry); immutable. A
    /// live dentry holds a reference on it.
    pub(crate) parent: NonNull<Dentry>,
    /// `Arc<Inode>` as a raw pointer; null for a negative dentry. Set at
    /// most once (instantiation), under the lock; released on free.
    pub(crate) inode: AtomicPtr<Inode>,
    /// `HASHED`, `WAS_HASHED`, `PSEUDO`, `REVALIDATE`, `ON_LRU`,
    /// `REFERENCED`.
    pub(crate) flags: AtomicU32,
    /// The name; immutable (no rename).
    pub(crate) name: Name,
    /// The table this dentry is (or was) hashed in, and its live count:
    /// what a kill needs. The cache's `Table` is boxed, outlives every
    /// dentry (the cache frees them before it), and never moves.
    pub(crate) table: NonNull<Table>,
    /// The count and the lock, on their own cache line
    /// ([`CachePadded`]: 128 bytes on x86_64, where the adjacent-line
    /// prefetcher pairs lines, 64 or more elsewhere).
    pub(crate) lockref: CachePadded<DentryLockRef>,
    /// Links in the LRU of unused dentries, under the LRU's lock; on the
    /// line after the lockref, away from what lookups read.
    pub(crate) lru: LruLinks,
}

// The layout the module docs promise: the lockref on its own line, after
// every field a lookup reads.
static_assertions::const_assert_eq!(core::mem::offset_of!(Dentry, lockref) % 64, 0);
static_assertions::const_assert!(
    core::mem::offset_of!(Dentry, lockref)
        >= core::mem::offset_of!(Dentry, name) + core::mem::size_of::<Name>()
);

// SAFETY: every field is either immutable after publication, atomic, or
// behind a lock (the lockref's, or the LRU's for the links); the raw pointers (`parent`, `inode`) point to
// objects kept alive by the references the dentry holds.
unsafe impl Send for Dentry {}
// SAFETY: as for `Send`.
unsafe impl Sync for Dentry {}

impl Dentry {
    /// A new, unhashed dentry with one reference, `parent` unset (itself)
    /// until the caller links it.
    pub(crate) fn new(
        name: &[u8],
        hash: u64,
        flags: u32,
        inode: Option<Arc<Inode>>,
        table: NonNull<Table>,
    ) -> Self {
        Dentry {
            hash,
            next: crossbeam_epoch::Atomic::null(),
            parent: NonNull::dangling(),
            inode: AtomicPtr::new(
                inode.map_or(core::ptr::null_mut(), |i| Arc::into_raw(i).cast_mut()),
            ),
            flags: AtomicU32::new(flags),
            name: Name::new(name),
            table,
            lockref: CachePadded::new(DentryLockRef::with_raw(
                Revalidation::default(),
                DentryWord::default(),
            )),
            lru: LruLinks::new(),
        }
    }

    /// The inode, if positive. The reference lives as long as the dentry.
    #[inline]
    pub(crate) fn inode(&self) -> Option<&Inode> {
        // Acquire: pairs with the Release of instantiation, so the inode's
        // fields are visible.
        let ptr = self.inode.load(Ordering::Acquire);
        // SAFETY: a non-null pointer came from `Arc::into_raw` and the
        // dentry keeps that strong reference until it is freed, which is
        // after every user of `&self`.
        unsafe { ptr.as_ref() }
    }

    /// Makes a negative dentry positive. Call with the dentry's lock held.
    /// Returns false if it was already positive (nothing changes).
    pub(crate) fn instantiate(&self, inode: Arc<Inode>) -> bool {
        let raw = Arc::into_raw(inode).cast_mut();
        // Release: the inode's fields before the pointer. Acquire on
        // failure is not needed: the lock orders writers.
        match self.inode.compare_exchange(
            core::ptr::null_mut(),
            raw,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: `raw` came from `Arc::into_raw` above and was not
                // stored.
                drop(unsafe { Arc::from_raw(raw) });
                false
            }
        }
    }

    #[inline]
    pub(crate) fn flags(&self) -> u32 {
        // Acquire: a flag read decides whether a dentry found without the
        // lock may be used; pairs with the Release of the writer.
        self.flags.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn is_hashed(&self) -> bool {
        self.flags() & HASHED != 0
    }

    /// The kind of the inode, `None` if negative.
    #[inline]
    pub(crate) fn kind(&self) -> Option<InodeKind> {
        self.inode().map(|i| i.kind)
    }

    #[inline]
    pub(crate) fn parent(&self) -> &Dentry {
        // SAFETY: a live dentry holds a reference on its parent (or is its
        // own parent), and readers only reach dead ones while pinned, which
        // keeps the parent's memory too (it is freed after its own grace
        // period, which cannot end while we are pinned).
        unsafe { self.parent.as_ref() }
    }

    #[inline]
    pub(crate) fn is_self_parented(&self) -> bool {
        core::ptr::eq(self.parent.as_ptr(), self)
    }
}

impl Drop for Dentry {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, nothing races.
        let ptr = self.inode.load(Ordering::Relaxed);
        if !ptr.is_null() {
            // SAFETY: the strong reference taken by `new`/`instantiate`.
            drop(unsafe { Arc::from_raw(ptr) });
        }
    }
}
