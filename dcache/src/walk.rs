//! The path walk: parsing a path into components, the RCU walk (no
//! references while walking), the ref walk it falls back to, and the
//! per-component lookup with its revalidation.

use core::ptr::NonNull;
use std::sync::Arc;
use std::vec::Vec;

use crossbeam_epoch as epoch;
use lockref::CountedRef;

use crate::cache::Dcache;
use crate::dentry::{Dentry, REVALIDATE};
use crate::dentry_ref::DentryRef;
use crate::errno::Errno;
use crate::inode::{Entries, Inode, InodeKind};
use crate::name;
use crate::sync::Ordering;

/// The longest path, in bytes (`PATH_MAX` less its NUL).
///
/// ```
/// use lockref_dcache::{Dcache, Errno, PATH_MAX};
///
/// let cache = Dcache::new(Default::default());
/// assert_eq!(cache.stat(&"/".repeat(PATH_MAX + 1)), Err(Errno::NameTooLong));
/// ```
pub const PATH_MAX: usize = 4095;

/// The most components a path may have; deeper ones fail with
/// [`Errno::NameTooLong`].
///
/// ```
/// use lockref_dcache::{Dcache, Errno, MAX_DEPTH};
///
/// let cache = Dcache::new(Default::default());
/// assert_eq!(cache.stat(&"/a".repeat(MAX_DEPTH + 1)), Err(Errno::NameTooLong));
/// ```
pub const MAX_DEPTH: usize = 256;

/// A path split into components, checked.
pub(crate) struct Components<'p> {
    pub(crate) parts: Vec<&'p [u8]>,
    /// The path ends in `/` after a component: it must name a directory.
    pub(crate) trailing_slash: bool,
}

impl<'p> Components<'p> {
    /// `getname` and the checks of `link_path_walk`. Relative paths start
    /// at the root (the only directory a caller can start from here).
    pub(crate) fn parse(path: &'p str) -> Result<Self, Errno> {
        let bytes = path.as_bytes();
        if bytes.is_empty() {
            return Err(Errno::NoEnt);
        }
        if bytes.len() > PATH_MAX {
            return Err(Errno::NameTooLong);
        }
        if bytes.contains(&0) {
            return Err(Errno::Inval);
        }
        let mut parts = Vec::new();
        // A component's length is checked when it is looked up (see
        // `name::check_len`), so that the walk fails where Linux's does.
        for part in bytes.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
            if parts.len() == MAX_DEPTH {
                return Err(Errno::NameTooLong);
            }
            parts.push(part);
        }
        let trailing_slash = bytes.ends_with(b"/") && !parts.is_empty();
        Ok(Components {
            parts,
            trailing_slash,
        })
    }

    /// All but the last component, and the last; `None` for the root.
    /// The caller walks the first part before it judges the last (a dot,
    /// a name too long), as Linux does.
    pub(crate) fn split_last(&self) -> Option<(&[&'p [u8]], &'p [u8])> {
        self.parts.split_last().map(|(last, dirs)| (dirs, *last))
    }
}

impl Dcache {
    /// RCU walk: no references while walking, one on the result
    /// (`__legitimize_path`). `Ok(None)` means "retry taking references"
    /// (the kernel's `-ECHILD`): a miss in the cache, a dentry that must be
    /// revalidated, or a result that died before we counted it. A negative
    /// result is `ENOENT` without any reference taken, unless
    /// `keep_negative` (a cached miss writes nothing, as in the kernel's
    /// RCU walk).
    pub(crate) fn walk_rcu(
        &self,
        parts: &[&[u8]],
        keep_negative: bool,
    ) -> Result<Option<DentryRef<'_>>, Errno> {
        let guard = epoch::pin();
        let mut ptr = self.root;
        for &part in parts {
            // SAFETY: the root is referenced by the cache; everything else
            // was reached from a chain while pinned.
            let cur = unsafe { ptr.as_ref() };
            if cur.flags() & REVALIDATE != 0 {
                return Ok(None);
            }
            // Every component but the last is looked up in (or, for `.`
            // and `..`, steps from) a directory.
            match cur.kind() {
                Some(InodeKind::Dir) => {}
                Some(_) => return Err(Errno::NotDir),
                None => return Err(Errno::NoEnt),
            }
            match part {
                b"." => continue,
                b".." => {
                    ptr = cur.parent;
                    continue;
                }
                _ => {}
            }
            name::check_len(part)?;
            match self.table.lookup_rcu(cur, part, &guard) {
                Some(child) => ptr = child,
                None => return Ok(None),
            }
        }
        // SAFETY: as above.
        let last = unsafe { ptr.as_ref() };
        if last.flags() & REVALIDATE != 0 {
            return Ok(None);
        }
        if !keep_negative && last.kind().is_none() {
            return Err(Errno::NoEnt);
        }
        if ptr == self.root {
            return Ok(Some(self.root_ref()));
        }
        // SAFETY: found by this pinned walk, the pin still held.
        Ok(unsafe { legitimize(ptr) })
    }

    /// Ref walk: a reference on each component in turn (`dget`, `dput`),
    /// revalidating and asking the filesystem on a miss.
    pub(crate) fn walk_ref(&self, parts: &[&[u8]]) -> Result<DentryRef<'_>, Errno> {
        let mut cur = self.root_ref();
        for &part in parts {
            match part {
                b"." => {
                    require_dir(cur.dentry())?;
                    continue;
                }
                b".." => {
                    require_dir(cur.dentry())?;
                    cur = cur.parent();
                    continue;
                }
                _ => {}
            }
            cur = self.lookup_one(&cur, part)?;
        }
        Ok(cur)
    }

    /// `path_lookupat`: RCU walk, then ref walk if that asks for it. The
    /// result may be negative.
    pub(crate) fn resolve(&self, parts: &[&[u8]]) -> Result<DentryRef<'_>, Errno> {
        match self.walk_rcu(parts, true)? {
            Some(d) => Ok(d),
            None => self.walk_ref(parts),
        }
    }

    /// The directory that `dirs` names, referenced, for an operation on a
    /// name in it: `ENOENT` if it is missing, `ENOTDIR` if it is not a
    /// directory.
    pub(crate) fn resolve_parent(&self, dirs: &[&[u8]]) -> Result<DentryRef<'_>, Errno> {
        let dir = self.resolve(dirs)?;
        require_dir(dir.dentry())?;
        Ok(dir)
    }

    /// [`resolve`](Self::resolve) for a name that must exist: `ENOENT` for
    /// a negative result, with no reference taken in the RCU walk;
    /// `ENOTDIR` for a path with a trailing slash that names something else
    /// than a directory.
    pub(crate) fn resolve_positive(&self, path: &Components<'_>) -> Result<DentryRef<'_>, Errno> {
        let d = match self.walk_rcu(&path.parts, false)? {
            Some(d) => d,
            None => self.walk_ref(&path.parts)?,
        };
        match d.kind() {
            None => Err(Errno::NoEnt),
            Some(kind) if path.trailing_slash && kind != InodeKind::Dir => Err(Errno::NotDir),
            Some(_) => Ok(d),
        }
    }

    /// Rejects a handle of another cache (it would put this cache's
    /// references on a dentry whose cache may be gone).
    pub(crate) fn require_own(&self, d: &DentryRef<'_>) -> Result<(), Errno> {
        if core::ptr::eq(d.dentry().table.as_ptr(), &*self.table) {
            Ok(())
        } else {
            Err(Errno::XDev)
        }
    }

    /// `lookup_fast` then `lookup_slow` for one component under a
    /// referenced directory: the child, maybe negative, referenced.
    pub(crate) fn lookup_one<'c>(
        &'c self,
        dir: &DentryRef<'c>,
        name: &[u8],
    ) -> Result<DentryRef<'c>, Errno> {
        let inode = require_dir(dir.dentry())?;
        name::check_len(name)?;
        if let Some(d) = self.table.d_lookup(dir.dentry(), name) {
            if d.dentry().flags() & REVALIDATE == 0 || self.revalidate(&d) {
                return Ok(d);
            }
            self.table.d_drop(d.dentry());
        }
        let entries = inode.lock_read();
        Ok(self.lookup_locked(dir, name, &entries, inode))
    }

    /// The dentry for `name` in `dir`, whose entries the caller holds
    /// locked (shared or exclusive): the cached one, or a new one made
    /// from the entries and hashed (`d_alloc_parallel` + `->lookup` +
    /// `d_add`).
    pub(crate) fn lookup_locked<'c>(
        &'c self,
        dir: &DentryRef<'c>,
        name: &[u8],
        entries: &Entries,
        dir_inode: &Inode,
    ) -> DentryRef<'c> {
        if let Some(d) = self.table.d_lookup(dir.dentry(), name) {
            // The caller holds the directory lock: check against the
            // entries directly (`d_revalidate` would take it again).
            if d.dentry().flags() & REVALIDATE == 0
                || self.revalidate_locked(&d, entries, dir_inode)
            {
                return d;
            }
            self.table.d_drop(d.dentry());
        }
        let inode = entries.get(name).cloned();
        // The shrinker runs where the cache grows, before the allocation.
        self.table.lru.shrink_to_bound();
        // SAFETY: a new dentry of this cache; its count of one is ours.
        let new =
            unsafe { DentryRef::from_raw(self.table.d_alloc(Some(dir.ptr()), name, 0, inode)) };
        new.dentry().lockref.lock().verified_gen = dir_inode.generation.load(Ordering::Acquire);
        // Another thread may have added it meanwhile: use theirs, and ours
        // is killed when dropped (never hashed, so freed at once).
        self.table.d_add(&new).unwrap_or(new)
    }

    /// The revalidate hook (`d_revalidate`) of a filesystem configured with
    /// one: under the directory's `i_rwsem` shared and the dentry's lock,
    /// compare the directory's generation with the one the dentry last
    /// verified; if it moved, check the name against the directory's
    /// entries. Returns whether the dentry is still valid.
    pub(crate) fn revalidate(&self, d: &DentryRef<'_>) -> bool {
        let dentry = d.dentry();
        let Some(dir) = dentry.parent().inode() else {
            return false;
        };
        let entries = dir.lock_read();
        self.revalidate_locked(d, &entries, dir)
    }

    /// [`revalidate`](Self::revalidate) with the directory's entries
    /// already locked by the caller.
    pub(crate) fn revalidate_locked(
        &self,
        d: &DentryRef<'_>,
        entries: &Entries,
        dir: &Inode,
    ) -> bool {
        let dentry = d.dentry();
        // Acquire: pairs with `bump_generation`'s Release (the lock also
        // orders it).
        let generation = dir.generation.load(Ordering::Acquire);
        let mut guard = dentry.lockref.lock();
        if guard.verified_gen == generation {
            return true;
        }
        let valid = match (entries.get(dentry.name.as_bytes()), dentry.inode()) {
            (Some(on_disk), Some(cached)) => core::ptr::eq(Arc::as_ptr(on_disk), cached),
            (None, None) => true,
            _ => false,
        };
        if valid {
            guard.verified_gen = generation;
        }
        valid
    }
}

/// The inode of a positive directory dentry.
pub(crate) fn require_dir(d: &Dentry) -> Result<&Inode, Errno> {
    match d.inode() {
        Some(inode) if inode.kind == InodeKind::Dir => Ok(inode),
        Some(_) => Err(Errno::NotDir),
        None => Err(Errno::NoEnt),
    }
}

/// Takes a reference on a dentry found by the RCU walk (or
/// [`Table::lookup_rcu`](crate::hash_table::Table::lookup_rcu)) if it is
/// still alive and hashed (`__legitimize_path`'s `lockref_get_not_dead`,
/// then `d_unhashed`). Does not revalidate.
///
/// # Safety
///
/// `ptr` is a dentry of the cache borrowed for `'c`, found on a chain
/// while pinned (the pin still held) or referenced by the caller: its
/// memory is valid for the call, and the pointer has the allocation's
/// provenance.
pub(crate) unsafe fn legitimize<'c>(ptr: NonNull<Dentry>) -> Option<DentryRef<'c>> {
    // SAFETY: the caller's guarantee.
    let r = DentryRef::from_counted(unsafe { CountedRef::try_get(ptr) }?);
    // Unhashed after we found it (unlinked, or being killed before we
    // counted): a miss. Our reference is dropped normally.
    r.dentry().is_hashed().then_some(r)
}
