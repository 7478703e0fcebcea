//! [`DentryRef`] and the dentry life cycle: allocate (`d_alloc`), `dget`,
//! `dput` with its keep-or-kill decision at zero, and the kill.

use core::fmt;
use core::ptr::NonNull;
use std::boxed::Box;
use std::string::String;
use std::sync::Arc;

use crossbeam_epoch::{self as epoch, Owned, Shared};
use lockref::LockRefGuard;

use crate::cache::Dcache;
use crate::dentry::{Dentry, Revalidation, REVALIDATE, WAS_HASHED};
use crate::inode::{Inode, InodeKind};
use crate::name;

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
pub struct DentryRef<'c> {
    pub(crate) cache: &'c Dcache,
    pub(crate) ptr: NonNull<Dentry>,
}

// SAFETY: a reference may be used and dropped from any thread; the dentry
// is `Sync`.
unsafe impl Send for DentryRef<'_> {}
// SAFETY: `&DentryRef` only reads immutable or atomic dentry fields.
unsafe impl Sync for DentryRef<'_> {}

impl<'c> DentryRef<'c> {
    /// Wraps a reference the caller already counted.
    pub(crate) fn from_counted(cache: &'c Dcache, ptr: NonNull<Dentry>) -> Self {
        DentryRef { cache, ptr }
    }

    pub(crate) fn dentry(&self) -> &Dentry {
        // SAFETY: we hold a reference, so the dentry is alive.
        unsafe { self.ptr.as_ref() }
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
    pub fn count(&self) -> i32 {
        self.dentry().lockref.count()
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
        let parent = self.dentry().parent;
        self.cache.dget(self.dentry().parent());
        DentryRef::from_counted(self.cache, parent)
    }
}

impl Clone for DentryRef<'_> {
    /// `dget`.
    fn clone(&self) -> Self {
        self.cache.dget(self.dentry());
        DentryRef {
            cache: self.cache,
            ptr: self.ptr,
        }
    }
}

impl Drop for DentryRef<'_> {
    /// `dput`.
    fn drop(&mut self) {
        self.cache.dput(self.ptr);
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

impl Dcache {
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
    /// `dget`: one more reference on a dentry the caller holds one on.
    pub(crate) fn dget(&self, d: &Dentry) {
        d.lockref.get();
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
    fn dput_one<'d>(&self, d: &'d Dentry) -> Option<LockRefGuard<'d, Revalidation>> {
        let lockref = &*d.lockref;
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
        mut guard: LockRefGuard<'_, Revalidation>,
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
