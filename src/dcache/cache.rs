//! The hash table and the dentry life cycle: allocate, hash, look up,
//! `dget`/`dput`, kill.

use core::ptr::NonNull;
use std::boxed::Box;
use std::sync::Arc;

use crossbeam_epoch::{self as epoch, Guard, Owned, Shared};

use super::dentry::{Dentry, HASHED, REVALIDATE, WAS_HASHED};
use super::inode::Inode;
use super::name;
use super::{Dcache, DentryRef};
use crate::sync::Ordering;
use crate::{LockRef, LockRefGuard};

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

impl Dcache {
    #[inline]
    pub(crate) fn bucket(&self, hash: u64) -> &Bucket {
        &self.buckets[(hash as usize) & (self.buckets.len() - 1)]
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
        )));
        // SAFETY: `Box::into_raw` never returns null.
        let ptr = unsafe { NonNull::new_unchecked(raw) };
        let parent = match (parent, parent_ref) {
            (Some(p), Some(p_ref)) => {
                // `d_alloc`: the parent's lock and a reference, taken
                // together. The caller holds a reference, so it is alive.
                let mut guard = p_ref.lockref.0.lock();
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

    /// Takes a reference on a dentry found by [`lookup_rcu`] if it is still
    /// alive and hashed (`__legitimize_path`'s `lockref_get_not_dead`, then
    /// `d_unhashed`). Does not revalidate.
    pub(crate) fn legitimize(&self, ptr: NonNull<Dentry>) -> Option<DentryRef<'_>> {
        // SAFETY: the caller found it while pinned, or holds a reference:
        // its memory is valid.
        let d = unsafe { ptr.as_ref() };
        if !d.lockref.0.get_not_dead() {
            return None;
        }
        let r = DentryRef::from_counted(self, ptr);
        // Unhashed after we found it (unlinked, or being killed before we
        // counted): a miss. Our reference is dropped normally.
        r.dentry().is_hashed().then_some(r)
    }

    /// `d_lookup`: the dentry (parent, name) with a reference, if cached.
    pub(crate) fn d_lookup(&self, parent: &Dentry, name: &[u8]) -> Option<DentryRef<'_>> {
        let guard = epoch::pin();
        let found = self.lookup_rcu(parent, name, &guard)?;
        self.legitimize(found)
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
            if let Some(r) = self.legitimize(existing) {
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

    /// `dget`: one more reference on a dentry the caller holds one on.
    pub(crate) fn dget(&self, d: &Dentry) {
        d.lockref.0.get();
    }

    /// `dput`: drops a reference; at zero keeps a hashed dentry, kills an
    /// unhashed one, and goes on to the parent (the cascade).
    pub(crate) fn dput(&self, d: NonNull<Dentry>) {
        let mut next = Some(d);
        while let Some(ptr) = next {
            // SAFETY: the caller (or the loop, for a parent) holds a
            // reference, so the dentry is alive.
            let d = unsafe { ptr.as_ref() };
            next = match self.dput_one(d) {
                Some(guard) => self.dentry_kill(ptr, guard),
                None => None,
            };
        }
    }

    /// Drops one reference. Returns the lock guard when the dentry must be
    /// killed (count zero, not to be kept).
    fn dput_one<'d>(&self, d: &'d Dentry) -> Option<LockRefGuard<'d, super::dentry::Locked>> {
        let lockref = &d.lockref.0;
        // The fast path: lockless, never takes the lock.
        match lockref.put_return() {
            Ok(n) if n > 0 => return None,
            // Zero: keep it if hashed; decided without the lock, as
            // `fast_dput` does under RCU.
            Ok(_) if retain(d) => return None,
            Ok(_) => {
                let guard = lockref.lock();
                // Someone took a reference, or hashed it, meanwhile.
                if guard.count() != 0 || retain(d) {
                    return None;
                }
                return Some(guard);
            }
            Err(_) => {}
        }
        // Locked, contended, or the count is not positive: decide under the
        // lock, as `fast_dput` does.
        let mut guard = lockref.lock();
        match guard.decrement() {
            Ok(0) if !retain(d) => Some(guard),
            Ok(_) => None,
            // A put without a reference: refused, the count is untouched.
            Err(e) => {
                debug_assert!(false, "dput: {e}");
                None
            }
        }
    }

    /// Kills a dentry whose count is zero, lock held: mark dead, unhash,
    /// free (after a grace period if lookups could have found it). Returns
    /// the parent whose reference it held, for the caller to `dput`.
    fn dentry_kill(
        &self,
        ptr: NonNull<Dentry>,
        mut guard: LockRefGuard<'_, super::dentry::Locked>,
    ) -> Option<NonNull<Dentry>> {
        guard.mark_dead();
        drop(guard);
        // SAFETY: the count was zero under the lock and is now dead: the
        // dentry is ours to tear down, and still allocated.
        let d = unsafe { ptr.as_ref() };
        self.d_drop(d);
        self.live.add(-1);
        let parent = (!d.is_self_parented()).then_some(d.parent);
        let ptr = ptr.as_ptr().cast_const();
        if d.flags() & WAS_HASHED != 0 {
            let guard = epoch::pin();
            // SAFETY: dead and unhashed: no new reader can reach it, and the
            // readers that did are pinned, so the destruction waits for
            // them. Nobody holds a reference (count was zero, now dead).
            unsafe { guard.defer_destroy(Shared::from(ptr)) };
        } else {
            // SAFETY: never reachable from a chain, and no reference is
            // left: ours alone points to it. It came from `Box::into_raw` in `d_alloc`.
            drop(unsafe { Owned::from_raw(ptr.cast_mut()) });
        }
        parent
    }

    /// A reference on the root dentry.
    pub(crate) fn root_ref(&self) -> DentryRef<'_> {
        // SAFETY: the cache holds a reference on the root for its lifetime.
        self.dget(unsafe { self.root.as_ref() });
        DentryRef::from_counted(self, self.root)
    }
}

/// Whether a dentry at count zero stays cached (`retain_dentry`): hashed
/// ones do, negative included; unhashed and pseudo ones do not.
#[inline]
fn retain(d: &Dentry) -> bool {
    d.is_hashed()
}

impl Drop for Dcache {
    fn drop(&mut self) {
        // No handle can outlive the cache (they borrow it), so every
        // dentry left is hashed at its cached count, or a root. Free them
        // all now: nothing else can reach them.
        for bucket in self.buckets.iter() {
            // SAFETY: `&mut self`: no other thread walks the chains.
            let guard = unsafe { epoch::unprotected() };
            let mut cur = bucket.head.load(Ordering::Relaxed, guard);
            while !cur.is_null() {
                // SAFETY: a hashed dentry, from `d_alloc`'s box, freed once.
                let owned = unsafe { cur.into_owned() };
                cur = owned.next.load(Ordering::Relaxed, guard);
                drop(owned);
            }
        }
        for root in [self.root, self.pseudo_root] {
            // SAFETY: roots are never hashed or killed; freed here only.
            drop(unsafe { Owned::from_raw(root.as_ptr()) });
        }
    }
}
