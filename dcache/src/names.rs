//! The calls that remove, add and move names beside `mkdir` and `unlink`
//! (`ops.rs`): `rmdir`, `link` and `rename`, so that a trace of a real
//! build, which makes and moves names as it goes, replays exactly.
//!
//! Each changes a directory's entries under its `i_rwsem` held
//! exclusively, bumps its generation, and unhashes the cached dentries of
//! the names it changed (`d_drop`), so that the next walk looks them up
//! afresh. `rename` holds both directories' locks, taken under the cache's
//! rename lock (the kernel's `s_vfs_rename_mutex`) and an ancestor before
//! its descendant (as `lock_rename`), which keeps it from deadlocking with
//! another rename or with `rmdir` (which locks a parent, then the victim).

use std::sync::Arc;

use crate::cache::Dcache;
use crate::dentry::Dentry;
use crate::errno::Errno;
use crate::inode::{Entries, Inode, InodeKind};
use crate::name;
use crate::task_work;
use crate::walk::{require_dir, Components};

/// Whether `inode` is the inode of `d` or of one of its ancestors.
fn is_at_or_above(inode: &Inode, d: &Dentry) -> bool {
    let mut d = d;
    loop {
        if d.inode().is_some_and(|i| core::ptr::eq(i, inode)) {
            return true;
        }
        if d.is_self_parented() {
            return false;
        }
        d = d.parent();
    }
}

/// Checks that `moving` may replace what `to` names in `dst` (POSIX's
/// rules for `rename`); `Ok(true)` when they are the same inode (nothing
/// to do).
fn may_replace(moving: &Arc<Inode>, dst: &Entries, to: &[u8]) -> Result<bool, Errno> {
    let Some(existing) = dst.get(to) else {
        return Ok(false);
    };
    if Arc::ptr_eq(existing, moving) {
        return Ok(true);
    }
    match (
        moving.kind == InodeKind::Dir,
        existing.kind == InodeKind::Dir,
    ) {
        (true, false) => Err(Errno::NotDir),
        (false, true) => Err(Errno::IsDir),
        (true, true) if !existing.lock_read().is_empty() => Err(Errno::NotEmpty),
        _ => Ok(false),
    }
}

impl Dcache {
    /// `rmdir(2)`: removes an empty directory's name.
    ///
    /// # Errors
    ///
    /// `ENOENT`, `ENOTDIR` (not a directory, or a component), `ENOTEMPTY`
    /// (entries left, or a last component `..`), `EINVAL` (a last
    /// component `.`), `EBUSY` (the root), `ENAMETOOLONG`.
    ///
    /// ```
    /// use lockref_dcache::{Dcache, Errno, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// cache.close(cache.open("/d/f", OpenFlags::WRONLY.creat()).unwrap());
    /// assert_eq!(cache.rmdir("/d"), Err(Errno::NotEmpty));
    /// cache.unlink("/d/f").unwrap();
    /// cache.rmdir("/d").unwrap();
    /// assert_eq!(cache.stat("/d").err(), Some(Errno::NoEnt));
    /// ```
    pub fn rmdir(&self, path: &str) -> Result<(), Errno> {
        let _scope = task_work::Scope::enter();
        let parts = Components::parse(path)?;
        let Some((dirs, last)) = parts.split_last() else {
            return Err(Errno::Busy);
        };
        let dir = self.resolve_parent(dirs)?;
        let dir_inode = require_dir(dir.dentry())?;
        match last {
            b"." => return Err(Errno::Inval),
            b".." => return Err(Errno::NotEmpty),
            _ => {}
        }
        name::check_len(last)?;
        let mut entries = dir_inode.lock_write();
        match entries.get(last) {
            None => return Err(Errno::NoEnt),
            Some(inode) if inode.kind != InodeKind::Dir => return Err(Errno::NotDir),
            // A parent's lock, then its child's: the order `rename` keeps.
            Some(inode) if !inode.lock_read().is_empty() => return Err(Errno::NotEmpty),
            Some(_) => {}
        }
        entries.remove(last);
        dir_inode.bump_generation();
        if let Some(d) = self.table.d_lookup(dir.dentry(), last) {
            self.table.d_drop(d.dentry());
        }
        Ok(())
    }

    /// `link(2)`: a new name for an existing file.
    ///
    /// # Errors
    ///
    /// `EEXIST` (the new name exists), `EPERM` (a directory), `ENOENT`,
    /// `ENOTDIR`, `ENAMETOOLONG`, `EINVAL`.
    ///
    /// ```
    /// use lockref_dcache::{Dcache, Errno, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// cache.close(cache.open("/f", OpenFlags::WRONLY.creat()).unwrap());
    /// cache.link("/f", "/g").unwrap();
    /// assert_eq!(cache.stat("/f").unwrap().ino, cache.stat("/g").unwrap().ino);
    /// assert_eq!(cache.link("/f", "/g"), Err(Errno::Exist));
    /// cache.mkdir("/d").unwrap();
    /// assert_eq!(cache.link("/d", "/e"), Err(Errno::Perm));
    /// ```
    pub fn link(&self, old: &str, new: &str) -> Result<(), Errno> {
        let _scope = task_work::Scope::enter();
        let target = self.resolve_positive(&Components::parse(old)?)?;
        let inode = target.dentry().inode().ok_or(Errno::NoEnt)?;
        if inode.kind == InodeKind::Dir {
            return Err(Errno::Perm);
        }
        let parts = Components::parse(new)?;
        let Some((dirs, last)) = parts.split_last() else {
            return Err(Errno::Exist);
        };
        if parts.trailing_slash {
            // A trailing slash names a directory, which a link never makes.
            return Err(Errno::NoEnt);
        }
        // The file's own `Arc`, from its directory's entries (the dentry
        // lends only a reference).
        let parent = require_dir(target.dentry().parent())?;
        let owned = parent
            .lock_read()
            .get(target.name())
            .filter(|i| core::ptr::eq(&***i, inode))
            .cloned()
            .ok_or(Errno::NoEnt)?;
        self.create_locked_with(dirs, last, || owned, true, Errno::Exist)
            .map(drop)
    }

    /// `rename(2)`: moves a name, replacing what the new name named (a
    /// file by a file, an empty directory by a directory).
    ///
    /// # Errors
    ///
    /// `ENOENT`, `ENOTDIR` (a directory over a non-directory, a component,
    /// a trailing slash on a file), `EISDIR` (a file over a directory),
    /// `ENOTEMPTY` (over a directory with entries), `EINVAL` (a directory
    /// into itself or its own subtree), `EBUSY` (the root, `.` or `..`),
    /// `ENAMETOOLONG`.
    ///
    /// ```
    /// use lockref_dcache::{Dcache, Errno, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// cache.mkdir("/a").unwrap();
    /// cache.close(cache.open("/a/f", OpenFlags::WRONLY.creat()).unwrap());
    /// cache.rename("/a", "/b").unwrap();
    /// assert!(cache.stat("/b/f").is_ok());
    /// assert_eq!(cache.stat("/a/f").err(), Some(Errno::NoEnt));
    /// assert_eq!(cache.rename("/b", "/b/f/x"), Err(Errno::NotDir));
    /// cache.mkdir("/b/sub").unwrap();
    /// assert_eq!(cache.rename("/b", "/b/sub/c"), Err(Errno::Inval));
    /// ```
    pub fn rename(&self, old: &str, new: &str) -> Result<(), Errno> {
        let _scope = task_work::Scope::enter();
        let (from, to) = (Components::parse(old)?, Components::parse(new)?);
        let (Some((from_dirs, from_last)), Some((to_dirs, to_last))) =
            (from.split_last(), to.split_last())
        else {
            return Err(Errno::Busy);
        };
        let from_dir = self.resolve_parent(from_dirs)?;
        let to_dir = self.resolve_parent(to_dirs)?;
        let from_inode = require_dir(from_dir.dentry())?;
        let to_inode = require_dir(to_dir.dentry())?;
        if name::is_dot(from_last) || name::is_dot(to_last) {
            return Err(Errno::Busy);
        }
        name::check_len(from_last)?;
        name::check_len(to_last)?;
        let slash = from.trailing_slash || to.trailing_slash;
        let _serial = self.rename_lock.write().unwrap_or_else(|e| e.into_inner());
        if core::ptr::eq(from_inode, to_inode) {
            let mut entries = from_inode.lock_write();
            let moving = entries.get(from_last).cloned().ok_or(Errno::NoEnt)?;
            if slash && moving.kind != InodeKind::Dir {
                return Err(Errno::NotDir);
            }
            if may_replace(&moving, &entries, to_last)? {
                return Ok(());
            }
            entries.remove(from_last);
            entries.insert(to_last.into(), moving);
            from_inode.bump_generation();
        } else {
            // An ancestor before its descendant; unrelated directories in
            // either order (the rename lock keeps two renames apart).
            let from_first = !is_at_or_above(to_inode, from_dir.dentry());
            let (mut first, mut second);
            if from_first {
                first = from_inode.lock_write();
                second = to_inode.lock_write();
            } else {
                second = to_inode.lock_write();
                first = from_inode.lock_write();
            }
            let (src, dst): (&mut Entries, &mut Entries) = (&mut first, &mut second);
            let moving = src.get(from_last).cloned().ok_or(Errno::NoEnt)?;
            if slash && moving.kind != InodeKind::Dir {
                return Err(Errno::NotDir);
            }
            if moving.kind == InodeKind::Dir && is_at_or_above(&moving, to_dir.dentry()) {
                return Err(Errno::Inval);
            }
            if may_replace(&moving, dst, to_last)? {
                return Ok(());
            }
            src.remove(from_last);
            dst.insert(to_last.into(), moving);
            from_inode.bump_generation();
            to_inode.bump_generation();
        }
        for (dir, last) in [(&from_dir, from_last), (&to_dir, to_last)] {
            if let Some(d) = self.table.d_lookup(dir.dentry(), last) {
                self.table.d_drop(d.dentry());
            }
        }
        Ok(())
    }
}
