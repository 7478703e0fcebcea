//! The hash table: buckets of lock-free chains that lookups walk without
//! locks or references, and a spinlock per bucket for the writers
//! (`d_add`, `__d_drop`).

use core::ptr::NonNull;
use std::boxed::Box;
use std::sync::Arc;

use crossbeam_epoch::{self as epoch, Guard, Shared};
use lockref::LockRef;

use crate::dentry::{Dentry, HASHED, REVALIDATE, WAS_HASHED};
use crate::dentry_ref::DentryRef;
use crate::inode::Inode;
use crate::lru::Lru;
use crate::name;
use crate::sharded_count::ShardedCount;
use crate::sync::Ordering;
use crate::walk::legitimize;

/// A hash bucket: a chain of dentries that lookups walk without locks, and
/// a lock (a `LockRef<()>` used only as a spinlock) that serializes the
/// writers of the chain.
pub(crate) struct Bucket {
    pub(crate) lock: LockRef<()>,
    pub(crate) head: epoch::Atomic<Dentry>,
}

impl Bucket {
    pub(crate) fn new() -> Self {
        Bucket {
            lock: LockRef::new(()),
            head: epoch::Atomic::null(),
        }
    }
}

/// The table, the count of live dentries and the LRU of unused ones: what
/// a dentry's last put and kill need, in one heap allocation that dentries
/// point to (the `Dcache` itself may move; this does not).
///
/// The table is sized once, when the cache is made (as the kernel sizes
/// `dentry_hashtable` at boot), not resized: lookups walk chains without
/// locks, and the shrinker keeps the entries near the number it was sized
/// for (see [`Config::buckets`](crate::Config::buckets)).
pub(crate) struct Table {
    pub(crate) buckets: Box<[Bucket]>,
    /// Dentries allocated and not yet killed.
    pub(crate) live: ShardedCount,
    /// Unused dentries, oldest reclaimed first.
    pub(crate) lru: Lru,
}

impl Table {
    pub(crate) fn new(buckets: usize, max_unused: usize) -> Box<Self> {
        Box::new(Table {
            buckets: (0..buckets).map(|_| Bucket::new()).collect(),
            live: ShardedCount::new(),
            lru: Lru::new(max_unused),
        })
    }

    #[inline]
    pub(crate) fn bucket(&self, hash: u64) -> &Bucket {
        &self.buckets[(hash as usize) & (self.buckets.len() - 1)]
    }
    /// Finds a hashed dentry (parent, name) without taking anything: the
    /// RCU part of `d_lookup`. What it returns is valid while `guard` is
    /// held, but may be dying: take a reference with `get_not_dead` before
    /// trusting it past the guard.
    ///
    /// The pointer keeps the provenance of the chain (that of the
    /// allocation), never that of a `&Dentry`, so it may later free.
    pub(crate) fn lookup_rcu(
        &self,
        parent: &Dentry,
        name: &[u8],
        guard: &Guard,
    ) -> Option<NonNull<Dentry>> {
        let hash = name::hash(parent as *const Dentry as usize, name);
        // Acquire on every link: a dentry published by an insert is seen
        // fully initialized.
        let mut cur = self.bucket(hash).head.load(Ordering::Acquire, guard);
        // SAFETY: chain nodes are freed only after a grace period that
        // cannot end while `guard` pins this thread.
        while let Some(d) = unsafe { cur.as_ref() } {
            if d.hash == hash
                && core::ptr::eq(d.parent.as_ptr(), parent)
                && d.name.as_bytes() == name
                && d.is_hashed()
            {
                return NonNull::new(cur.as_raw().cast_mut());
            }
            cur = d.next.load(Ordering::Acquire, guard);
        }
        None
    }

    /// `__d_drop`: removes a dentry from its hash chain, if hashed. Returns
    /// whether it was. Lookups already walking past it keep working (its
    /// `next` still leads on), and see it unhashed.
    pub(crate) fn d_drop(&self, d: &Dentry) -> bool {
        // AcqRel: exactly one caller removes it; Release so lookups that
        // see the flag clear do not use it.
        if d.flags.fetch_and(!HASHED, Ordering::AcqRel) & HASHED == 0 {
            return false;
        }
        let bucket = self.bucket(d.hash);
        let _lock = bucket.lock.lock();
        let guard = epoch::pin();
        let target = d as *const Dentry;
        let next = d.next.load(Ordering::Relaxed, &guard);
        let mut link = &bucket.head;
        loop {
            let cur = link.load(Ordering::Relaxed, &guard);
            if cur.as_raw() == target {
                // Release: keeps the chain readable from here on.
                link.store(next, Ordering::Release);
                return true;
            }
            // SAFETY: chain nodes are valid under the bucket lock and the
            // guard; `d` was hashed, so it is on this chain.
            link = &unsafe { cur.as_ref() }
                .expect("hashed dentry is on its chain")
                .next;
        }
    }
}

impl Table {
    /// `d_lookup`: the dentry (parent, name) with a reference, if cached.
    pub(crate) fn d_lookup(&self, parent: &Dentry, name: &[u8]) -> Option<DentryRef<'_>> {
        let guard = epoch::pin();
        let found = self.lookup_rcu(parent, name, &guard)?;
        // SAFETY: found on a chain under `guard`, still pinned.
        unsafe { legitimize(found) }
    }

    /// Hashes a new dentry (`d_add`), unless a live one with the same
    /// parent and name is already hashed: then that one is returned with a
    /// reference and `new` is left unhashed for the caller to drop.
    pub(crate) fn d_add(&self, new: &DentryRef<'_>) -> Option<DentryRef<'_>> {
        let d = new.dentry();
        let bucket = self.bucket(d.hash);
        let _lock = bucket.lock.lock();
        let guard = epoch::pin();
        if let Some(existing) = self.lookup_rcu(d.parent(), d.name.as_bytes(), &guard) {
            // SAFETY: found on a chain under `guard`, still pinned.
            if let Some(r) = unsafe { legitimize(existing) } {
                return Some(r);
            }
        }
        // Release: set before the dentry becomes reachable below.
        d.flags.fetch_or(HASHED | WAS_HASHED, Ordering::Release);
        let head = bucket.head.load(Ordering::Relaxed, &guard);
        // Relaxed: `d` is not reachable yet; the Release store of the head
        // publishes both.
        d.next.store(head, Ordering::Relaxed);
        bucket
            .head
            .store(Shared::from(d as *const Dentry), Ordering::Release);
        None
    }

    /// Allocates a dentry with one reference, unhashed. `parent` gets a
    /// reference under its lock, as `d_alloc` takes it; `None` makes the
    /// dentry its own parent (a root, or a pseudo dentry: seed 002).
    pub(crate) fn d_alloc(
        &self,
        parent: Option<NonNull<Dentry>>,
        name: &[u8],
        flags: u32,
        inode: Option<Arc<Inode>>,
    ) -> NonNull<Dentry> {
        // SAFETY: the caller holds a reference on the parent.
        let parent_ref = parent.map(|p| unsafe { p.as_ref() });
        let parent_addr = parent.map_or(0, |p| p.as_ptr() as usize);
        let mut flags = flags;
        if parent_ref.is_some_and(|p| p.flags() & REVALIDATE != 0) {
            flags |= REVALIDATE;
        }
        // A raw pointer from the start (no `&mut` to the box is ever
        // made), as chain walkers and `defer_destroy` will use it.
        let raw = Box::into_raw(Box::new(Dentry::new(
            name,
            name::hash(parent_addr, name),
            flags,
            inode,
            NonNull::from(self),
        )));
        // SAFETY: `Box::into_raw` never returns null.
        let ptr = unsafe { NonNull::new_unchecked(raw) };
        let parent = match (parent, parent_ref) {
            (Some(p), Some(p_ref)) => {
                // `d_alloc`: the parent's lock and a reference, taken
                // together. The caller holds a reference, so it is alive.
                let mut guard = p_ref.lockref.lock();
                guard.increment().expect("d_alloc: parent is dead");
                drop(guard);
                p
            }
            _ => ptr,
        };
        // SAFETY: the new dentry is not shared yet: we are its only user.
        unsafe { (*raw).parent = parent };
        self.live.add(1);
        // The allocation is now owned by the returned reference; it is
        // freed with `Owned::from_raw` or `defer_destroy`, which accept a
        // pointer from `Box::into_raw`.
        ptr
    }
}
