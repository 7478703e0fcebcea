//! [`DentryRef`] and the dentry life cycle, on [`lockref::CountedRef`]:
//! allocate (`d_alloc`), `dget` (clone), `dput` (drop) with its
//! keep-or-kill decision at zero, and the kill.

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;
use std::string::String;

use crossbeam_epoch::{self as epoch, Owned, Shared};
use lockref::{CountedRef, Fate, RefCounted};

use crate::cache::Dcache;
use crate::dentry::{Dentry, Revalidation, HASHED, ON_LRU, REFERENCED, WAS_HASHED};
use crate::dentry_word::{DentryGuard, DentryLockRef, DentryWord};
use crate::inode::InodeKind;

// SAFETY: dentries are only made by `Table::d_alloc` (a `Box`), counted
// only through `CountedRef` (the cache's own references on the roots and a
// child's on its parent are raw references taken and given back through
// it); `release` unhashes and frees once, after an epoch grace period if a
// lookup could have reached the dentry. That grace is what makes a put to
// zero without the lock safe (`grace`), and a dentry's hashed flag, which
// `retain_unlocked` reads, is cleared only by holders of a reference
// (unlink, a failed revalidation) or by the kill itself. The LRU flags it
// also reads are cleared by the shrinker without a reference but under the
// dentry's lock, where no lockless put can land; a stale read of them can
// only keep a hashed dentry off the LRU, which the cache's drop still frees.
unsafe impl RefCounted for Dentry {
    type Data = Revalidation;
    type Word = DentryWord;
    type Grace = epoch::Guard;

    fn lockref(&self) -> &DentryLockRef {
        &self.lockref
    }

    /// `retain_dentry`: hashed dentries (cached names and cached misses)
    /// stay at zero, on the LRU, unless the bound keeps none
    /// (`max_unused` of zero); unhashed and pseudo ones are killed.
    fn last_put(&self, _: &mut DentryGuard<'_>) -> Fate {
        // SAFETY: the table outlives every dentry.
        let lru = &unsafe { self.table.as_ref() }.lru;
        if self.is_hashed() && lru.keeps_any() {
            lru.retain(self);
            Fate::Keep
        } else {
            Fate::Kill
        }
    }

    /// `dentry_kill` after the mark: unhash, uncount, free (after a grace
    /// period if it was ever reachable from a chain), and hand the parent's
    /// reference on for the cascade.
    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: dead and unreferenced, still allocated.
        let d = unsafe { this.as_ref() };
        // SAFETY: the table outlives every dentry (see `Dentry::table`).
        let table = unsafe { d.table.as_ref() };
        table.d_drop(d);
        table.lru.remove_dead(d);
        table.live.add(-1);
        // SAFETY: a dentry that is not its own parent holds one reference
        // on it, handed on here.
        let parent = (!d.is_self_parented()).then(|| unsafe { CountedRef::from_raw(d.parent) });
        let ptr = this.as_ptr().cast_const();
        if d.flags() & WAS_HASHED != 0 {
            let guard = epoch::pin();
            // SAFETY: dead and unhashed: no new reader can reach it, and
            // the readers that did are pinned, so the destruction waits for
            // them.
            unsafe { guard.defer_destroy(Shared::from(ptr)) };
        } else {
            // SAFETY: never reachable from a chain, no reference left: ours
            // alone points to it. It came from `Box::into_raw` in
            // `d_alloc`.
            drop(unsafe { Owned::from_raw(ptr.cast_mut()) });
        }
        parent
    }

    /// `dput` runs pinned, as `fast_dput` runs under `rcu_read_lock`, so a
    /// put to zero decides without the lock when the dentry is hashed.
    fn grace() -> Option<epoch::Guard> {
        Some(epoch::pin())
    }

    /// `fast_dput`'s lockless `retain_dentry`: only a hashed dentry that
    /// is on the LRU and already marked referenced needs nothing done under
    /// its lock.
    fn retain_unlocked(&self) -> bool {
        let all = HASHED | ON_LRU | REFERENCED;
        self.flags() & all == all
    }
}

/// A counted reference to a dentry (the kernel's `struct dentry *` with a
/// reference held). Cloning is `dget`, dropping is `dput`.
///
/// ```
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// cache.mkdir("/d").unwrap();
/// let path = cache.lookup_path("/d").unwrap();
/// let d = path.dentry().clone(); // dget
/// assert_eq!(d.count(), 2); // the path's and this clone's
/// ```
#[derive(Clone)]
pub struct DentryRef<'c> {
    counted: CountedRef<Dentry>,
    /// Borrows the cache: no reference outlives it.
    _cache: PhantomData<&'c Dcache>,
}

impl<'c> DentryRef<'c> {
    /// Wraps a counted reference to a dentry of the cache borrowed for `'c`.
    pub(crate) fn from_counted(counted: CountedRef<Dentry>) -> Self {
        DentryRef {
            counted,
            _cache: PhantomData,
        }
    }

    /// Takes over a reference the caller counted on `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a dentry of the cache borrowed for `'c`, from `d_alloc`,
    /// and the caller gives up one reference it owns.
    pub(crate) unsafe fn from_raw(ptr: NonNull<Dentry>) -> Self {
        // SAFETY: the caller's guarantee.
        Self::from_counted(unsafe { CountedRef::from_raw(ptr) })
    }

    /// The dentry's address, with the allocation's provenance.
    pub(crate) fn ptr(&self) -> NonNull<Dentry> {
        CountedRef::as_ptr(&self.counted)
    }

    pub(crate) fn dentry(&self) -> &Dentry {
        &self.counted
    }

    /// The name (empty for a pseudo dentry, `/` for the root).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().name(), b"/");
    /// ```
    pub fn name(&self) -> &[u8] {
        self.dentry().name.as_bytes()
    }

    /// The inode's kind, or `None` for a negative dentry (a cached miss).
    ///
    /// ```
    /// use lockref_dcache::{Dcache, InodeKind};
    ///
    /// let cache = Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().kind(), Some(InodeKind::Dir));
    /// ```
    pub fn kind(&self) -> Option<InodeKind> {
        self.dentry().kind()
    }

    /// The inode number, or `None` for a negative dentry.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().ino(), Some(cache.stat("/").unwrap().ino));
    /// ```
    pub fn ino(&self) -> Option<u64> {
        self.dentry().inode().map(|i| i.ino)
    }

    /// The reference count now (a snapshot: `d_count`).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().count(), 2); // the cache's and ours
    /// ```
    pub fn count(&self) -> u32 {
        // Never dead: this reference keeps it alive.
        self.dentry().lockref.count().unwrap_or(0)
    }

    /// Whether the dentry is in the hash table.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// assert!(cache.lookup_path("/d").unwrap().dentry().is_hashed());
    /// ```
    pub fn is_hashed(&self) -> bool {
        self.dentry().is_hashed()
    }

    /// Whether the dentry is its own parent (a root or a pseudo dentry).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert!(cache.root().dentry().is_self_parented());
    /// ```
    pub fn is_self_parented(&self) -> bool {
        self.dentry().is_self_parented()
    }

    /// The parent, referenced (`dget_parent`).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// let d = cache.lookup_path("/d").unwrap();
    /// assert_eq!(d.dentry().parent().name(), b"/");
    /// ```
    pub fn parent(&self) -> DentryRef<'c> {
        let d = self.dentry();
        // `dget`: our reference keeps the child, and the child's keeps the
        // parent.
        d.parent().lockref.get();
        // SAFETY: the parent is a dentry of the same cache; the reference
        // was just taken.
        unsafe { DentryRef::from_raw(d.parent) }
    }
}

impl fmt::Debug for DentryRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DentryRef")
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("count", &self.count())
            .field("kind", &self.kind())
            .finish()
    }
}
