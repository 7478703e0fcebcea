//! The operations on names: `LOOKUP`, `MKNOD`, `MKDIR`, `SYMLINK`,
//! `LINK`, `UNLINK`, `RMDIR`, `RENAME` and `READLINK`, each on checked
//! single names in a directory's descriptor, as the caller.

use std::cell::Cell;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::atomic::Ordering;

use fuser::{Errno, INodeNo, RenameFlags};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};

use crate::creds::Caller;
use crate::fs::{Entry, Passthrough};
use crate::host::{self, check_name, errno};
use crate::live::Live;
use crate::root_alias::{ROOT_ALIAS_ID, ROOT_ALIAS_NAME};
use crate::table::{InodeTable, ROOT_ID};

impl<T: InodeTable> Passthrough<T> {
    /// Looks `name` up in the directory `parent` on the host and counts one
    /// kernel lookup on it: the attributes to reply with. While the table
    /// keeps inodes the kernel forgot, and this thread's recent lookups
    /// found them more often than not ([`known_likely`]), as
    /// [`lookup_listed_child`](Self::lookup_listed_child) does: one of them
    /// is found again with one `statx` (a name not in the table costs that
    /// `statx` more; a missing one costs the same one call).
    pub(crate) fn lookup_child(&self, parent: &Live<T::Ref>, name: &OsStr) -> Result<Entry, Errno> {
        self.look_up(parent, name, self.table.kept() > 0 && known_likely())
    }

    /// [`lookup_child`](Self::lookup_child) of a name just made: never in
    /// the table, so opened at once.
    pub(crate) fn lookup_made_child(
        &self,
        parent: &Live<T::Ref>,
        name: &OsStr,
    ) -> Result<Entry, Errno> {
        self.look_up(parent, name, false)
    }

    /// [`lookup_child`](Self::lookup_child) for a name whose inode the
    /// table may have already (a `READDIRPLUS` entry, most often looked up
    /// before the listing): one `statx` by name, and if the table has that
    /// host inode live, one more of the kernel's lookups on it, with no
    /// descriptor opened or closed. Otherwise the name is opened and looked
    /// up as `lookup_child` does (the `statx` then made again, on the
    /// descriptor: the name may have changed meanwhile).
    pub(crate) fn lookup_listed_child(
        &self,
        parent: &Live<T::Ref>,
        name: &OsStr,
    ) -> Result<Entry, Errno> {
        self.look_up(parent, name, true)
    }

    /// Looks `name` up; with `known_first`, by `statx` first, opening it
    /// only if the table has not the inode (live or kept). Each outcome
    /// that tells whether `statx` first pays is counted in this thread's
    /// score ([`known_seen`]).
    fn look_up(
        &self,
        parent: &Live<T::Ref>,
        name: &OsStr,
        known_first: bool,
    ) -> Result<Entry, Errno> {
        #[cfg(feature = "testing")]
        self.fault.check()?;
        if known_first {
            if let Some(found) = host::stat_name_for_lookup(parent.fd(), name)? {
                if let Some(id) = self
                    .table
                    .lookup_known(host::key_of(&found.st, found.birth))
                {
                    // Relaxed: a counter for tests and reports.
                    self.found_known.fetch_add(1, Ordering::Relaxed);
                    known_seen(true);
                    return Ok(Entry {
                        node: id,
                        attr: self.attr(&found.st),
                    });
                }
            }
            known_seen(false);
        }
        let fd = nix::fcntl::openat(
            parent.fd(),
            name,
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let found = host::stat_for_lookup(fd.as_fd())?;
        let key = host::key_of(&found.st, found.birth);
        if !self.may_hold(found.mount_id) {
            // A new inode here would hold its descriptor for its life, and
            // such descriptors take their half of the budget already: the
            // lookup succeeds only if the table has the inode.
            let id = self.table.lookup_known(key).ok_or(Errno::ENFILE)?;
            return Ok(Entry {
                node: id,
                attr: self.attr(&found.st),
            });
        }
        let is_dir = found.st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let mut fresh = None;
        let mut made = false;
        let id = self.table.lookup(key, || {
            made = true;
            self.host_inode(fd, found.mount_id, is_dir, &mut fresh)
        });
        if let Some(slot) = fresh {
            self.descriptors.register(&slot);
        }
        if !known_first && !made {
            // The table had it: `statx` first would have paid.
            known_seen(true);
        }
        Ok(Entry {
            node: id,
            attr: self.attr(&found.st),
        })
    }

    pub(crate) fn do_lookup(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
    ) -> Result<Entry, Errno> {
        // Relaxed: a counter for tests and reports.
        self.lookups.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "testing")]
        self.stall.check(caller.uid);
        let name = check_name(name)?;
        let is_alias = parent.0 == ROOT_ID
            && name == OsStr::new(ROOT_ALIAS_NAME)
            && self.root_alias.load(Ordering::Relaxed);
        let parent = self.inode(parent)?;
        let _as = self.as_caller(caller)?;
        if is_alias {
            // The share's own directory under the alias's id, its lookup
            // counted on the root (`root_alias.rs`).
            let entry = self.lookup_child(&parent, OsStr::new("."))?;
            return Ok(Entry {
                node: ROOT_ALIAS_ID,
                ..entry
            });
        }
        self.lookup_child(&parent, name)
    }

    /// Creates `name` in `parent` with `make`, then looks it up.
    pub(crate) fn make_child(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
        make: impl FnOnce(BorrowedFd<'_>, &OsStr) -> nix::Result<()>,
    ) -> Result<Entry, Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(caller)?;
        make(parent.fd(), name).map_err(errno)?;
        self.lookup_made_child(&parent, name)
    }

    /// `UNLINK` or `RMDIR`.
    pub(crate) fn remove(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
        how: nix::unistd::UnlinkatFlags,
    ) -> Result<(), Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(caller)?;
        let removed = self.inode_removed_with(parent.fd(), name);
        nix::unistd::unlinkat(parent.fd(), name, how).map_err(errno)?;
        if let Some(removed) = removed {
            T::mark_gone(&removed);
        }
        Ok(())
    }

    /// The inode `name` in `dir` names, if removing the name removes its
    /// file (its last name; a directory's always), for a table that keeps
    /// forgotten inodes: to be marked gone once the removal succeeds
    /// ([`InodeTable::mark_gone`](crate::table::InodeTable::mark_gone)), so that the table does not keep it with its
    /// descriptor, which would hold the host file's blocks. One `statx`,
    /// made only for such a table.
    fn inode_removed_with(&self, dir: BorrowedFd<'_>, name: &OsStr) -> Option<T::Ref> {
        if !T::KEEPS_FORGOTTEN {
            return None;
        }
        let found = host::stat_name_for_lookup(dir, name).ok()??;
        let is_dir = found.st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        if !is_dir && found.st.st_nlink > 1 {
            return None;
        }
        self.table.find_known(host::key_of(&found.st, found.birth))
    }

    pub(crate) fn do_mknod(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
    ) -> Result<Entry, Errno> {
        self.make_child(caller, parent, name, |dir, name| {
            let kind = SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits());
            let perm = Mode::from_bits_truncate(self.creation_mode(dir, mode & 0o7777, umask));
            nix::sys::stat::mknodat(dir, name, kind, perm, u64::from(rdev))
        })
    }

    pub(crate) fn do_mkdir(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
    ) -> Result<Entry, Errno> {
        self.make_child(caller, parent, name, |dir, name| {
            let perm = self.creation_mode(dir, mode & 0o7777, umask);
            nix::sys::stat::mkdirat(dir, name, Mode::from_bits_truncate(perm))
        })
    }

    pub(crate) fn do_symlink(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
        target: &Path,
    ) -> Result<Entry, Errno> {
        self.make_child(caller, parent, name, |dir, name| {
            nix::unistd::symlinkat(target, dir, name)
        })
    }

    pub(crate) fn do_link(
        &self,
        caller: &Caller,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
    ) -> Result<Entry, Errno> {
        let inode = self.inode(ino)?;
        let path = host::proc_path(inode.fd());
        // Through /proc (AT_SYMLINK_FOLLOW jumps to the inode), not
        // AT_EMPTY_PATH, which needs CAP_DAC_READ_SEARCH the caller may
        // lack.
        self.make_child(caller, newparent, newname, |dir, name| {
            nix::unistd::linkat(
                nix::fcntl::AT_FDCWD,
                path.as_c_str(),
                dir,
                name,
                AtFlags::AT_SYMLINK_FOLLOW,
            )
        })
    }

    pub(crate) fn do_rename(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
    ) -> Result<(), Errno> {
        let name = check_name(name)?;
        let newname = check_name(newname)?;
        let from = self.inode(parent)?;
        let to = self.inode(newparent)?;
        let flags = nix::fcntl::RenameFlags::from_bits(flags.bits()).ok_or(Errno::EINVAL)?;
        let _as = self.as_caller(caller)?;
        // A rename over an existing name removes that name's file (not an
        // exchange, which keeps both).
        let replaced = if flags.contains(nix::fcntl::RenameFlags::RENAME_EXCHANGE) {
            None
        } else {
            self.inode_removed_with(to.fd(), newname)
        };
        nix::fcntl::renameat2(from.fd(), name, to.fd(), newname, flags).map_err(errno)?;
        if let Some(replaced) = replaced {
            T::mark_gone(&replaced);
        }
        Ok(())
    }

    pub(crate) fn do_readlink(
        &self,
        caller: &Caller,
        ino: INodeNo,
    ) -> Result<std::ffi::OsString, Errno> {
        let inode = self.inode(ino)?;
        let _as = self.as_caller(caller)?;
        nix::fcntl::readlinkat(inode.fd(), "").map_err(errno)
    }
}

/// The most a thread's score ([`known_likely`]) moves either way: a run of
/// this many lookups of new names stops the `statx` first, and as many
/// found in the table bring it back.
const KNOWN_SCORE_MAX: i8 = 8;

thread_local! {
    /// This thread's recent `LOOKUP`s that found their inode in the table
    /// (or would have, by `statx` first), less the `statx` first that did
    /// not, within [`KNOWN_SCORE_MAX`] either way. Per thread: no shared
    /// line is written for it.
    static KNOWN_SCORE: Cell<i8> = const { Cell::new(0) };
}

/// Whether `statx` first is likely to find the inode in the table: while
/// this thread's lookups find it as often as not. A walk over names never
/// looked up (a first `find`, a build reading new files) stops it after a
/// few, each then costing an `openat` and a `statx` as before the table
/// kept anything; a cold `git status` after `drop_caches` keeps it on.
fn known_likely() -> bool {
    KNOWN_SCORE.get() >= 0
}

/// Counts one lookup's outcome in this thread's score.
fn known_seen(found: bool) {
    let score = KNOWN_SCORE.get();
    KNOWN_SCORE.set(if found {
        (score + 1).min(KNOWN_SCORE_MAX)
    } else {
        (score - 1).max(-KNOWN_SCORE_MAX)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of new names turns `statx` first off after a few; as many
    /// found in the table turn it back on; the score never runs past its
    /// bound, so a long walk is undone by a short run of finds.
    #[test]
    fn statx_first_follows_what_this_threads_lookups_found() {
        std::thread::spawn(|| {
            assert!(known_likely(), "on at the start");
            for _ in 0..1000 {
                known_seen(false);
            }
            assert!(!known_likely(), "off after new names");
            for _ in 0..KNOWN_SCORE_MAX - 1 {
                known_seen(true);
            }
            assert!(!known_likely(), "bounded: not back before");
            known_seen(true);
            assert!(known_likely(), "back after as many finds as the bound");
        })
        .join()
        .unwrap();
    }
}
