//! The operations: path walk, open, close, create, unlink, stat, lookups,
//! pseudo dentries, and the leak check.

use std::collections::HashMap;
use std::sync::Arc;
use std::vec::Vec;

use crossbeam_epoch::{self as epoch};

use super::dentry::{Dentry, PSEUDO, REVALIDATE};
use super::inode::{Entries, Inode, InodeKind};
use super::{
    name, task_work, Dcache, DentryRef, Errno, FileRef, OpenFlags, PathRef, MAX_DEPTH, PATH_MAX,
};
use crate::sync::Ordering;

/// What [`Dcache::stat`] reports (see its example).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The inode number.
    pub ino: u64,
    /// The kind of object.
    pub kind: InodeKind,
}

/// A reference count that [`Dcache::check_balanced`] found off its cached
/// baseline, or a count of objects that does not match what the cache
/// holds.
///
/// ```
/// let cache = lockref::dcache::Dcache::new(Default::default());
/// let root = cache.root(); // an outstanding handle
/// let err = cache.check_balanced().unwrap_err();
/// assert!(err.to_string().contains("root"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imbalance(pub String);

impl core::fmt::Display for Imbalance {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "dcache imbalance: {}", self.0)
    }
}

impl std::error::Error for Imbalance {}

/// What [`Dcache::check_balanced`] counted.
///
/// ```
/// use lockref::dcache::{Balance, Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let _ = cache.open("/missing", OpenFlags::RDONLY);
/// assert_eq!(cache.check_balanced().unwrap(), Balance { hashed: 1, negative: 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Balance {
    /// Hashed (cached) dentries, negative ones included.
    pub hashed: usize,
    /// Of those, negative (cached misses).
    pub negative: usize,
}

use std::format;
use std::string::String;

/// A path split into components, checked.
struct Components<'p> {
    parts: Vec<&'p [u8]>,
}

impl<'p> Components<'p> {
    /// `getname` and the checks of `link_path_walk`. Relative paths start
    /// at the root (the only directory a caller can start from here).
    fn parse(path: &'p str) -> Result<Self, Errno> {
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
        for part in bytes.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
            if part.len() > name::NAME_MAX {
                return Err(Errno::NameTooLong);
            }
            if parts.len() == MAX_DEPTH {
                return Err(Errno::NameTooLong);
            }
            parts.push(part);
        }
        Ok(Components { parts })
    }

    /// All but the last component, and the last (which must be a plain
    /// name: `.` and `..` cannot be created or removed).
    fn split_last(&self) -> Result<(&[&'p [u8]], &'p [u8]), Errno> {
        match self.parts.split_last() {
            None => Err(Errno::IsDir), // the root itself
            Some((last, _)) if *last == b"." || *last == b".." => Err(Errno::IsDir),
            Some((last, dirs)) => Ok((dirs, last)),
        }
    }
}

impl Dcache {
    // ----- the walk -----

    /// RCU walk: no references while walking, one on the result
    /// (`__legitimize_path`). `Ok(None)` means "retry taking references"
    /// (the kernel's `-ECHILD`): a miss in the cache, a dentry that must be
    /// revalidated, or a result that died before we counted it. A negative
    /// result is `ENOENT` without any reference taken, unless
    /// `keep_negative` (a cached miss writes nothing, as in the kernel's
    /// RCU walk).
    fn walk_rcu(
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
            match part {
                b"." => continue,
                b".." => {
                    ptr = cur.parent;
                    continue;
                }
                _ => {}
            }
            match cur.kind() {
                Some(InodeKind::Dir) => {}
                Some(_) => return Err(Errno::NotDir),
                None => return Err(Errno::NoEnt),
            }
            match self.lookup_rcu(cur, part, &guard) {
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
        Ok(self.legitimize(ptr))
    }

    /// Ref walk: a reference on each component in turn (`dget`, `dput`),
    /// revalidating and asking the filesystem on a miss.
    fn walk_ref(&self, parts: &[&[u8]]) -> Result<DentryRef<'_>, Errno> {
        let mut cur = self.root_ref();
        for &part in parts {
            match part {
                b"." => continue,
                b".." => {
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
    fn resolve(&self, parts: &[&[u8]]) -> Result<DentryRef<'_>, Errno> {
        match self.walk_rcu(parts, true)? {
            Some(d) => Ok(d),
            None => self.walk_ref(parts),
        }
    }

    /// [`resolve`](Self::resolve) for a name that must exist: `ENOENT` for
    /// a negative result, with no reference taken in the RCU walk.
    fn resolve_positive(&self, parts: &[&[u8]]) -> Result<DentryRef<'_>, Errno> {
        let d = match self.walk_rcu(parts, false)? {
            Some(d) => d,
            None => self.walk_ref(parts)?,
        };
        if d.kind().is_none() {
            return Err(Errno::NoEnt);
        }
        Ok(d)
    }

    /// `lookup_fast` then `lookup_slow` for one component under a
    /// referenced directory: the child, maybe negative, referenced.
    fn lookup_one<'c>(&'c self, dir: &DentryRef<'c>, name: &[u8]) -> Result<DentryRef<'c>, Errno> {
        let inode = require_dir(dir.dentry())?;
        if let Some(d) = self.d_lookup(dir.dentry(), name) {
            if d.dentry().flags() & REVALIDATE == 0 || self.revalidate(&d) {
                return Ok(d);
            }
            self.d_drop(d.dentry());
        }
        let entries = inode.lock_read();
        Ok(self.lookup_locked(dir, name, &entries, inode))
    }

    /// The dentry for `name` in `dir`, whose entries the caller holds
    /// locked (shared or exclusive): the cached one, or a new one made
    /// from the entries and hashed (`d_alloc_parallel` + `->lookup` +
    /// `d_add`).
    fn lookup_locked<'c>(
        &'c self,
        dir: &DentryRef<'c>,
        name: &[u8],
        entries: &Entries,
        dir_inode: &Inode,
    ) -> DentryRef<'c> {
        if let Some(d) = self.d_lookup(dir.dentry(), name) {
            // The caller holds the directory lock: check against the
            // entries directly (`d_revalidate` would take it again).
            if d.dentry().flags() & REVALIDATE == 0
                || self.revalidate_locked(&d, entries, dir_inode)
            {
                return d;
            }
            self.d_drop(d.dentry());
        }
        let inode = entries.get(name).cloned();
        let new = DentryRef::from_counted(self, self.d_alloc(Some(dir.ptr), name, 0, inode));
        new.dentry().lockref.0.lock().verified_gen = dir_inode.generation.load(Ordering::Acquire);
        // Another thread may have added it meanwhile: use theirs, and ours
        // is killed when dropped (never hashed, so freed at once).
        self.d_add(&new).unwrap_or(new)
    }

    /// The revalidate hook (`d_revalidate`) of a filesystem configured with
    /// one: under the directory's `i_rwsem` shared and the dentry's lock,
    /// compare the directory's generation with the one the dentry last
    /// verified; if it moved, check the name against the directory's
    /// entries. Returns whether the dentry is still valid.
    fn revalidate(&self, d: &DentryRef<'_>) -> bool {
        let dentry = d.dentry();
        let Some(dir) = dentry.parent().inode() else {
            return false;
        };
        let entries = dir.lock_read();
        self.revalidate_locked(d, &entries, dir)
    }

    /// [`revalidate`](Self::revalidate) with the directory's entries
    /// already locked by the caller.
    fn revalidate_locked(&self, d: &DentryRef<'_>, entries: &Entries, dir: &Inode) -> bool {
        let dentry = d.dentry();
        // Acquire: pairs with `bump_generation`'s Release (the lock also
        // orders it).
        let generation = dir.generation.load(Ordering::Acquire);
        let mut guard = dentry.lockref.0.lock();
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

    fn path<'c>(&'c self, dentry: DentryRef<'c>) -> PathRef<'c> {
        self.root_mnt.get();
        PathRef {
            mnt: &self.root_mnt,
            dentry,
        }
    }

    /// Looks a path up: the positive dentry it names, referenced with its
    /// mount (`kern_path`).
    ///
    /// # Errors
    ///
    /// `ENOENT`, `ENOTDIR`, `ENAMETOOLONG`, `EINVAL` (a NUL byte).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/usr").unwrap();
    /// assert_eq!(cache.lookup_path("/usr").unwrap().name(), b"usr");
    /// assert!(cache.lookup_path("/nope").is_err());
    /// ```
    pub fn lookup_path(&self, path: &str) -> Result<PathRef<'_>, Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        let d = self.resolve_positive(&parts.parts)?;
        Ok(self.path(d))
    }

    /// `stat(2)`: looks the path up, reads the inode, drops the reference.
    ///
    /// # Errors
    ///
    /// As [`lookup_path`](Self::lookup_path).
    ///
    /// ```
    /// use lockref::dcache::{Dcache, InodeKind};
    ///
    /// let cache = Dcache::new(Default::default());
    /// assert_eq!(cache.stat("/").unwrap().kind, InodeKind::Dir);
    /// ```
    pub fn stat(&self, path: &str) -> Result<Stat, Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        let d = self.resolve_positive(&parts.parts)?;
        let inode = d.dentry().inode().ok_or(Errno::NoEnt)?;
        Ok(Stat {
            ino: inode.ino,
            kind: inode.kind,
        })
    }

    // ----- open and close -----

    /// `openat(2)`: walks the path, creates the file with `O_CREAT`, and
    /// opens it. Seeds 000, 001 and 003 choose how (see [`Variants`]).
    ///
    /// # Errors
    ///
    /// `ENOENT`, `EEXIST` (`O_CREAT | O_EXCL`), `ENOTDIR`, `EISDIR`,
    /// `ENAMETOOLONG`, `EINVAL`. Every count is as before the call.
    ///
    /// [`Variants`]: super::Variants
    ///
    /// ```
    /// use lockref::dcache::{Dcache, Errno, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// let f = cache.open("/new", OpenFlags::RDWR.creat().excl()).unwrap();
    /// assert_eq!(cache.open("/new", OpenFlags::RDWR.creat().excl()).err(), Some(Errno::Exist));
    /// assert_eq!(cache.open("/new/x", OpenFlags::RDONLY).err(), Some(Errno::NotDir));
    /// cache.close(f);
    /// ```
    pub fn open(&self, path: &str, flags: OpenFlags) -> Result<FileRef<'_>, Errno> {
        let _scope = task_work::Scope::enter();
        // `path_openat` allocates the file before walking.
        let empty = self.alloc_file(flags);
        let (errno, empty) = match self.open_path(path, flags) {
            Ok(path) => {
                let opened = if self.variants.open_consume {
                    // Seed 000: the file takes the walk's references.
                    empty.open_consume(path)
                } else {
                    // Before: `vfs_open` takes its own (`path_get`), then
                    // `terminate_walk` drops the walk's (`path_put`).
                    let opened = empty.open(&path);
                    drop(path);
                    opened
                };
                match opened {
                    Ok(file) => return Ok(file),
                    Err(failed) => failed,
                }
            }
            Err(errno) => (errno, empty),
        };
        if self.variants.failed_open_token {
            // Seed 001: freed now, no deferred work. A stray reference
            // (none here) would leave it to its last holder.
            let _ = empty.release();
        } else {
            // Before: `fput`, whose work runs when `open` returns.
            empty.release_deferred();
        }
        Err(errno)
    }

    /// `close(2)`: drops the file reference; the release of the last one
    /// (`__fput`: `dput`, `mntput`, free) runs as deferred work when this
    /// call returns.
    ///
    /// ```
    /// use lockref::dcache::{Dcache, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// cache.close(cache.open("/", OpenFlags::RDONLY).unwrap());
    /// cache.check_balanced().unwrap();
    /// ```
    pub fn close(&self, file: FileRef<'_>) {
        let _scope = task_work::Scope::enter();
        drop(file);
    }

    /// The path `open` opens: looked up, or created with `O_CREAT`.
    fn open_path(&self, path: &str, flags: OpenFlags) -> Result<PathRef<'_>, Errno> {
        let parts = Components::parse(path)?;
        if !flags.is_creat() {
            let d = self.resolve_positive(&parts.parts)?;
            return Ok(self.path(d));
        }
        let (dirs, last) = parts.split_last()?;
        if self.variants.creat_lookup_first {
            // Seed 003: an opportunistic lookup without the directory lock.
            match self.walk_rcu(&parts.parts, false) {
                Ok(Some(d)) => {
                    if flags.is_excl() {
                        return Err(Errno::Exist);
                    }
                    return Ok(self.path(d));
                }
                // Absent (or a cache miss): create under the lock.
                Ok(None) | Err(Errno::NoEnt) => {}
                Err(e) => return Err(e),
            }
        }
        let d = self.create_locked(dirs, last, InodeKind::File, flags.is_excl())?;
        Ok(self.path(d))
    }

    /// Looks `last` up in the directory `dirs` names with the directory's
    /// `i_rwsem` held exclusively, and creates it as `kind` if absent.
    fn create_locked(
        &self,
        dirs: &[&[u8]],
        last: &[u8],
        kind: InodeKind,
        excl: bool,
    ) -> Result<DentryRef<'_>, Errno> {
        let dir = self.resolve(dirs)?;
        let dir_inode = require_dir(dir.dentry())?;
        let mut entries = dir_inode.lock_write();
        let d = self.lookup_locked(&dir, last, &entries, dir_inode);
        if d.kind().is_some() {
            return if excl { Err(Errno::Exist) } else { Ok(d) };
        }
        let inode = Inode::new(self.alloc_ino(), kind);
        entries.insert(last.into(), inode.clone());
        dir_inode.bump_generation();
        {
            let mut guard = d.dentry().lockref.0.lock();
            d.dentry().instantiate(inode);
            guard.verified_gen = dir_inode.generation.load(Ordering::Acquire);
        }
        Ok(d)
    }

    /// `mkdir(2)`.
    ///
    /// # Errors
    ///
    /// `EEXIST`, `ENOENT` (a missing parent), `ENOTDIR`, `ENAMETOOLONG`,
    /// `EINVAL`.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/a").unwrap();
    /// cache.mkdir("/a/b").unwrap();
    /// assert_eq!(cache.mkdir("/a"), Err(lockref::dcache::Errno::Exist));
    /// ```
    pub fn mkdir(&self, path: &str) -> Result<(), Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        let (dirs, last) = parts.split_last().map_err(|_| Errno::Exist)?;
        self.create_locked(dirs, last, InodeKind::Dir, true)
            .map(drop)
    }

    /// `unlink(2)`: removes a file's name; its dentry is unhashed and freed
    /// when its last reference goes (open files keep it).
    ///
    /// # Errors
    ///
    /// `ENOENT`, `EISDIR` (a directory), `ENOTDIR`, `ENAMETOOLONG`,
    /// `EINVAL`.
    ///
    /// ```
    /// use lockref::dcache::{Dcache, Errno, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// cache.close(cache.open("/f", OpenFlags::WRONLY.creat()).unwrap());
    /// cache.unlink("/f").unwrap();
    /// assert_eq!(cache.unlink("/f"), Err(Errno::NoEnt));
    /// ```
    pub fn unlink(&self, path: &str) -> Result<(), Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        let (dirs, last) = parts.split_last()?;
        let dir = self.resolve(dirs)?;
        let dir_inode = require_dir(dir.dentry())?;
        let mut entries = dir_inode.lock_write();
        match entries.get(last) {
            None => return Err(Errno::NoEnt),
            Some(inode) if inode.kind == InodeKind::Dir => return Err(Errno::IsDir),
            Some(_) => {}
        }
        entries.remove(last);
        dir_inode.bump_generation();
        if let Some(d) = self.d_lookup(dir.dentry(), last) {
            // `d_delete`: unhash; killed when the last reference goes.
            self.d_drop(d.dentry());
        }
        Ok(())
    }

    // ----- lookups by name (seed 004) -----

    /// `try_lookup_noperm`: the cached dentry for `name` in `dir`, or
    /// `None`; never asks the filesystem. With seed 004 it does not
    /// revalidate what it finds; before it, it did (the old
    /// `lookup_dcache` call), which on a filesystem with a revalidate hook
    /// costs the hook's locks on every call.
    ///
    /// # Errors
    ///
    /// `ENOTDIR` if `dir` is not a directory; the name errors of a
    /// component (`ENOENT` for empty, `ENAMETOOLONG`, `EINVAL` for `/`,
    /// NUL, `.` or `..`).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// let root = cache.root();
    /// assert!(cache.try_lookup_noperm(root.dentry(), "d").unwrap().is_some());
    /// assert!(cache.try_lookup_noperm(root.dentry(), "e").unwrap().is_none());
    /// ```
    pub fn try_lookup_noperm<'c>(
        &'c self,
        dir: &DentryRef<'c>,
        name: &str,
    ) -> Result<Option<DentryRef<'c>>, Errno> {
        let name = name.as_bytes();
        name::validate(name)?;
        require_dir(dir.dentry())?;
        let Some(d) = self.d_lookup(dir.dentry(), name) else {
            return Ok(None);
        };
        if !self.variants.try_lookup_skips_revalidate
            && d.dentry().flags() & REVALIDATE != 0
            && !self.revalidate(&d)
        {
            self.d_drop(d.dentry());
            return Ok(None);
        }
        Ok(Some(d))
    }

    /// `lookup_noperm_unlocked`: the dentry for `name` in `dir`, revalidated
    /// if cached, else from the filesystem (maybe negative).
    ///
    /// # Errors
    ///
    /// As [`try_lookup_noperm`](Self::try_lookup_noperm).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// let root = cache.root();
    /// let d = cache.lookup_noperm_unlocked(root.dentry(), "missing").unwrap();
    /// assert_eq!(d.kind(), None); // a negative dentry, now cached
    /// ```
    pub fn lookup_noperm_unlocked<'c>(
        &'c self,
        dir: &DentryRef<'c>,
        name: &str,
    ) -> Result<DentryRef<'c>, Errno> {
        let name = name.as_bytes();
        name::validate(name)?;
        self.lookup_one(dir, name)
    }

    // ----- pseudo dentries (seed 002) -----

    /// A dentry for a pipe or socket, with a new inode, on the pseudo
    /// filesystem's mount: unhashed, killed when its last reference goes.
    /// With seed 002 it is its own parent, so its allocation and free touch
    /// no other dentry; before, it was a child of the pseudo root, whose
    /// lock and count every allocation and free wrote.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// let pipe = cache.alloc_pseudo();
    /// assert!(pipe.dentry().is_self_parented());
    /// drop(pipe);
    /// assert_eq!(cache.live_dentries(), 2);
    /// ```
    pub fn alloc_pseudo(&self) -> PathRef<'_> {
        let inode = Inode::new(self.alloc_ino(), InodeKind::Pipe);
        let parent = if self.variants.pseudo_self_parent {
            None
        } else {
            Some(self.pseudo_root)
        };
        let d = DentryRef::from_counted(self, self.d_alloc(parent, b"", PSEUDO, Some(inode)));
        self.pseudo_mnt.get();
        PathRef {
            mnt: &self.pseudo_mnt,
            dentry: d,
        }
    }

    /// The pseudo filesystem's root, referenced (for accounting tests).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.pseudo_root().count(), 2); // the cache's and ours
    /// ```
    pub fn pseudo_root(&self) -> DentryRef<'_> {
        // SAFETY: the cache holds a reference on the pseudo root.
        self.dget(unsafe { self.pseudo_root.as_ref() });
        DentryRef::from_counted(self, self.pseudo_root)
    }

    // ----- accounting -----

    /// Checks that every count is at its cached baseline, as it must be
    /// when no handle (path, dentry, file) is outstanding: each hashed
    /// dentry's count is the number of its live children, each root's is
    /// one more (the cache's own), the mounts hold no references, no file
    /// is alive, and the live dentries are exactly the hashed ones and the
    /// two roots.
    ///
    /// # Errors
    ///
    /// [`Imbalance`] naming the first count found off.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// assert_eq!(cache.check_balanced().unwrap().hashed, 1);
    /// ```
    pub fn check_balanced(&self) -> Result<Balance, Imbalance> {
        let guard = epoch::pin();
        let mut hashed: Vec<&Dentry> = Vec::new();
        for bucket in self.buckets.iter() {
            let mut cur = bucket.head.load(Ordering::Acquire, &guard);
            // SAFETY: as in `lookup_rcu`.
            while let Some(d) = unsafe { cur.as_ref() } {
                if d.is_hashed() {
                    hashed.push(d);
                }
                cur = d.next.load(Ordering::Acquire, &guard);
            }
        }
        let mut children: HashMap<*const Dentry, i32> = HashMap::new();
        for d in &hashed {
            *children.entry(d.parent.as_ptr().cast_const()).or_default() += 1;
        }
        let kids = |d: *const Dentry| children.get(&d).copied().unwrap_or(0);
        let mut negative = 0;
        for d in &hashed {
            let want = kids(*d as *const Dentry);
            let have = d.lockref.0.count();
            if have != want {
                return Err(Imbalance(format!(
                    "dentry {:?}: count {have}, expected {want} (its cached children)",
                    String::from_utf8_lossy(d.name.as_bytes())
                )));
            }
            negative += usize::from(d.inode().is_none());
        }
        for (what, root) in [("root", self.root), ("pseudo root", self.pseudo_root)] {
            // SAFETY: the roots live as long as the cache.
            let have = unsafe { root.as_ref() }.lockref.0.count();
            let want = 1 + kids(root.as_ptr());
            if have != want {
                return Err(Imbalance(format!("{what}: count {have}, expected {want}")));
            }
        }
        for (what, mnt) in [
            ("root mount", &self.root_mnt),
            ("pseudo mount", &self.pseudo_mnt),
        ] {
            if mnt.count() != 0 {
                return Err(Imbalance(format!(
                    "{what}: {} references held",
                    mnt.count()
                )));
            }
        }
        if self.live_files() != 0 {
            return Err(Imbalance(format!("{} files alive", self.live_files())));
        }
        if self.live_dentries() != hashed.len() + 2 {
            return Err(Imbalance(format!(
                "{} live dentries, {} hashed + 2 roots",
                self.live_dentries(),
                hashed.len()
            )));
        }
        Ok(Balance {
            hashed: hashed.len(),
            negative,
        })
    }
}

/// The inode of a positive directory dentry.
fn require_dir(d: &Dentry) -> Result<&Inode, Errno> {
    match d.inode() {
        Some(inode) if inode.kind == InodeKind::Dir => Ok(inode),
        Some(_) => Err(Errno::NotDir),
        None => Err(Errno::NoEnt),
    }
}
