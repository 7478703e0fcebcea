//! The system calls: `stat`, `open`, `close`, `mkdir`, `unlink` (`rmdir`,
//! `link` and `rename` are in `names.rs`), the
//! lookups by name (seed 004) and pseudo dentries (seed 002).

use crate::cache::Dcache;
use crate::dentry::{PSEUDO, REVALIDATE};
use crate::dentry_ref::DentryRef;
use crate::errno::Errno;
use crate::file::FileRef;
use crate::inode::{Inode, InodeKind};
use crate::name;
use crate::open_flags::OpenFlags;
use crate::path_ref::{MountRef, PathRef};
use crate::sync::Ordering;
use crate::task_work;
use crate::walk::{require_dir, Components};

/// What [`Dcache::stat`] reports (see its example).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The inode number.
    pub ino: u64,
    /// The kind of object.
    pub kind: InodeKind,
}

impl Dcache {
    /// Looks a path up: the positive dentry it names, referenced with its
    /// mount (`kern_path`).
    ///
    /// # Errors
    ///
    /// `ENOENT`, `ENOTDIR`, `ENAMETOOLONG`, `EINVAL` (a NUL byte).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/usr").unwrap();
    /// assert_eq!(cache.lookup_path("/usr").unwrap().dentry().name(), b"usr");
    /// assert!(cache.lookup_path("/nope").is_err());
    /// ```
    pub fn lookup_path(&self, path: &str) -> Result<PathRef<'_>, Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        let d = self.resolve_positive(&parts)?;
        Ok(self.path(d))
    }

    /// `stat(2)`: looks the path up, reads the inode, drops the reference.
    ///
    /// # Errors
    ///
    /// As [`lookup_path`](Self::lookup_path).
    ///
    /// ```
    /// use lockref_dcache::{Dcache, InodeKind};
    ///
    /// let cache = Dcache::new(Default::default());
    /// assert_eq!(cache.stat("/").unwrap().kind, InodeKind::Dir);
    /// ```
    pub fn stat(&self, path: &str) -> Result<Stat, Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        let d = self.resolve_positive(&parts)?;
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
    /// [`Variants`]: crate::Variants
    ///
    /// ```
    /// use lockref_dcache::{Dcache, Errno, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// let f = cache.open("/new", OpenFlags::RDWR.creat().excl()).unwrap();
    /// assert_eq!(cache.open("/new", OpenFlags::RDWR.creat().excl()).err(), Some(Errno::Exist));
    /// assert_eq!(cache.open("/new/x", OpenFlags::RDONLY).err(), Some(Errno::NotDir));
    /// cache.close(f);
    /// ```
    pub fn open(&self, path: &str, flags: OpenFlags) -> Result<FileRef<'_>, Errno> {
        let _scope = task_work::Scope::enter();
        // Contradicting flags are refused before anything changes.
        OpenFlags::from_bits(flags.bits())?;
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
            // Seed 001: freed now, no deferred work.
            empty.release();
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
    /// use lockref_dcache::{Dcache, OpenFlags};
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
            let d = self.resolve_positive(&parts)?;
            return Ok(self.path(d));
        }
        // `O_CREAT` of the root, of `.` or `..`, or of `name/`: only a
        // directory can be meant, and open does not create directories (or
        // open them for writing). Linux answers so once the parent is
        // walked, whatever is (or is not) at the name.
        let Some((dirs, last)) = parts.split_last() else {
            return Err(Errno::IsDir);
        };
        if parts.trailing_slash || name::is_dot(last) {
            self.resolve_parent(dirs)?;
            return Err(Errno::IsDir);
        }
        if self.variants.creat_lookup_first {
            // Seed 003: an opportunistic lookup without the directory lock.
            match self.walk_rcu(&parts.parts, false) {
                Ok(Some(d)) => {
                    if flags.is_excl() {
                        return Err(Errno::Exist);
                    }
                    if d.kind() == Some(InodeKind::Dir) {
                        return Err(Errno::IsDir);
                    }
                    return Ok(self.path(d));
                }
                // Absent (or a cache miss): create under the lock.
                Ok(None) | Err(Errno::NoEnt) => {}
                Err(e) => return Err(e),
            }
        }
        let d = self.create_locked(dirs, last, InodeKind::File, flags.is_excl(), Errno::IsDir)?;
        if d.kind() == Some(InodeKind::Dir) {
            // `O_CREAT` on an existing directory.
            return Err(Errno::IsDir);
        }
        Ok(self.path(d))
    }

    /// Looks `last` up in the directory `dirs` names with the directory's
    /// `i_rwsem` held exclusively, and creates it as `kind` if absent.
    /// `last` being `.` or `..` fails with `on_dot` once the directory is
    /// found.
    fn create_locked(
        &self,
        dirs: &[&[u8]],
        last: &[u8],
        kind: InodeKind,
        excl: bool,
        on_dot: Errno,
    ) -> Result<DentryRef<'_>, Errno> {
        self.create_locked_with(
            dirs,
            last,
            || Inode::new(self.alloc_ino(), kind),
            excl,
            on_dot,
        )
    }

    /// [`create_locked`](Self::create_locked) with the inode `make`
    /// returns (a new one, or an existing file's for `link`).
    pub(crate) fn create_locked_with(
        &self,
        dirs: &[&[u8]],
        last: &[u8],
        make: impl FnOnce() -> std::sync::Arc<Inode>,
        excl: bool,
        on_dot: Errno,
    ) -> Result<DentryRef<'_>, Errno> {
        let dir = self.resolve_parent(dirs)?;
        let dir_inode = require_dir(dir.dentry())?;
        if name::is_dot(last) {
            return Err(on_dot);
        }
        name::check_len(last)?;
        let mut entries = dir_inode.lock_write();
        let d = self.lookup_locked(&dir, last, &entries, dir_inode);
        if d.kind().is_some() {
            return if excl { Err(Errno::Exist) } else { Ok(d) };
        }
        let inode = make();
        entries.insert(last.into(), inode.clone());
        dir_inode.bump_generation();
        {
            let mut guard = d.dentry().lockref.lock();
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
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/a").unwrap();
    /// cache.mkdir("/a/b").unwrap();
    /// assert_eq!(cache.mkdir("/a"), Err(lockref_dcache::Errno::Exist));
    /// ```
    pub fn mkdir(&self, path: &str) -> Result<(), Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        // The root, `.` and `..` exist.
        let Some((dirs, last)) = parts.split_last() else {
            return Err(Errno::Exist);
        };
        self.create_locked(dirs, last, InodeKind::Dir, true, Errno::Exist)
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
    /// use lockref_dcache::{Dcache, Errno, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// cache.close(cache.open("/f", OpenFlags::WRONLY.creat()).unwrap());
    /// cache.unlink("/f").unwrap();
    /// assert_eq!(cache.unlink("/f"), Err(Errno::NoEnt));
    /// ```
    pub fn unlink(&self, path: &str) -> Result<(), Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        // The root, `.` and `..` are directories.
        let Some((dirs, last)) = parts.split_last() else {
            return Err(Errno::IsDir);
        };
        let dir = self.resolve_parent(dirs)?;
        let dir_inode = require_dir(dir.dentry())?;
        if name::is_dot(last) {
            return Err(Errno::IsDir);
        }
        name::check_len(last)?;
        let mut entries = dir_inode.lock_write();
        match entries.get(last) {
            None => return Err(Errno::NoEnt),
            Some(inode) if inode.kind == InodeKind::Dir => return Err(Errno::IsDir),
            // `file/`: a trailing slash names a directory.
            Some(_) if parts.trailing_slash => return Err(Errno::NotDir),
            Some(_) => {}
        }
        entries.remove(last);
        dir_inode.bump_generation();
        if let Some(d) = self.table.d_lookup(dir.dentry(), last) {
            // `d_delete`: unhash; killed when the last reference goes.
            self.table.d_drop(d.dentry());
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
    /// let cache = lockref_dcache::Dcache::new(Default::default());
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
        self.require_own(dir)?;
        name::validate(name)?;
        require_dir(dir.dentry())?;
        let Some(d) = self.table.d_lookup(dir.dentry(), name) else {
            return Ok(None);
        };
        if !self.variants.try_lookup_skips_revalidate
            && d.dentry().flags() & REVALIDATE != 0
            && !self.revalidate(&d)
        {
            self.table.d_drop(d.dentry());
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
    /// let cache = lockref_dcache::Dcache::new(Default::default());
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
        self.require_own(dir)?;
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
    /// let cache = lockref_dcache::Dcache::new(Default::default());
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
        // SAFETY: a new dentry of this cache; its count of one is ours.
        let d =
            unsafe { DentryRef::from_raw(self.table.d_alloc(parent, b"", PSEUDO, Some(inode))) };
        PathRef::new(MountRef::new(&self.pseudo_mnt), d)
    }
}
