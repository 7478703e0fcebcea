//! [`Mounts`]: the host mounts whose inodes the server names by file
//! handle, each with the descriptor its handles are reopened through.
//!
//! `open_by_handle_at` reopens a handle only through a descriptor on the
//! handle's own mount, and not through an `O_PATH` one (`EBADF`, Linux
//! 6.18 included). The share's root gives the share's. A mount inside the
//! share (a tmpfs, a bind mount, another disk) gets its own from the first
//! directory of it that a lookup meets (opened read-only through the
//! lookup's `O_PATH` descriptor, as the caller: a caller who may not read
//! the directory gives none), and only if its filesystem gives file
//! handles. Its inodes are then named by handle like the share's, and
//! their descriptors are the bounded cache's, within the one budget
//! (`descriptors.rs`).
//!
//! Each inode on such a mount holds the mount's [`OtherMount`]: the
//! reopening descriptor closes with the mount's last inode, so the server
//! never keeps a mount inside the share busy once the kernel has forgotten
//! its inodes (they are not kept at zero: `lockref_inodes.rs`), and the
//! mount is met afresh if a lookup reaches it again.
//!
//! An inode on a mount with no descriptor to reopen by (none given yet, no
//! handles, or past [`MAX_OTHER_MOUNTS`] at once) keeps the descriptor its
//! lookup opened for its life: counted against the budget, never evicted
//! (`Descriptors::pin`). The reopening descriptors themselves, one per
//! mount, are outside the budget, with the descriptor limit's spare.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::file_handle;

/// Mounts other than the share's remembered at once.
pub(crate) const MAX_OTHER_MOUNTS: usize = 63;

/// A mount inside the share whose handles reopen: held by each of its
/// inodes' slots.
#[derive(Debug)]
pub(crate) struct OtherMount {
    id: u64,
    reopen: OwnedFd,
}

impl OtherMount {
    /// The descriptor its handles are reopened through.
    pub(crate) fn reopening_fd(&self) -> BorrowedFd<'_> {
        self.reopen.as_fd()
    }
}

/// What is known of a mount other than the share's.
enum Met {
    /// Its handles reopen through this, while an inode holds it.
    Reopening(Weak<OtherMount>),
    /// Its filesystem gives no handles.
    NoHandles(u64),
}

/// Where a new inode's handle reopens.
pub(crate) enum Reopens {
    /// Through the share's root.
    OnTheShare,
    /// Through a mount inside the share.
    On(Arc<OtherMount>),
    /// Nowhere: its descriptor is held for its life.
    Nowhere,
}

/// The share's mount and those met inside it.
pub(crate) struct Mounts {
    share: OwnedFd,
    share_id: u64,
    others: Mutex<Vec<Met>>,
}

impl Mounts {
    /// The share's mount: `share`, a descriptor on it that is not
    /// `O_PATH`, and `share_id`, its mount id.
    pub(crate) fn new(share: OwnedFd, share_id: u64) -> Self {
        Mounts {
            share,
            share_id,
            others: Mutex::new(Vec::new()),
        }
    }

    /// The descriptor the share's handles are reopened through.
    pub(crate) fn share_fd(&self) -> BorrowedFd<'_> {
        self.share.as_fd()
    }

    /// Where the handles of a new inode on mount `id` reopen, as far as
    /// is known (no system call).
    pub(crate) fn reopening(&self, id: u64) -> Reopens {
        if id == self.share_id {
            return Reopens::OnTheShare;
        }
        let others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        match Self::find(&others, id) {
            Some(Met::Reopening(mount)) => mount.upgrade().map_or(Reopens::Nowhere, Reopens::On),
            _ => Reopens::Nowhere,
        }
    }

    fn find(others: &[Met], id: u64) -> Option<&Met> {
        others.iter().find(|met| match met {
            Met::Reopening(mount) => mount.upgrade().is_some_and(|m| m.id == id),
            Met::NoHandles(other) => *other == id,
        })
    }

    /// Where the handles of a new inode on mount `id` reopen, met now
    /// through `dir`, an `O_PATH` descriptor of a directory on it: if its
    /// filesystem gives handles, a reopening descriptor is opened from
    /// `dir`, with this thread's credentials (the caller's). `Nowhere` if
    /// its handles cannot reopen: the mount gives none (remembered), the
    /// caller may not read `dir` (tried again at the next directory), or
    /// [`MAX_OTHER_MOUNTS`] are held.
    pub(crate) fn meet(&self, id: u64, dir: BorrowedFd<'_>) -> Reopens {
        if id == self.share_id {
            return Reopens::OnTheShare;
        }
        let mut others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        match Self::find(&others, id) {
            Some(Met::Reopening(mount)) => {
                if let Some(mount) = mount.upgrade() {
                    return Reopens::On(mount);
                }
            }
            Some(Met::NoHandles(_)) => return Reopens::Nowhere,
            None => {}
        }
        // Mounts whose inodes are all gone leave their places.
        others.retain(|met| match met {
            Met::Reopening(mount) => mount.strong_count() > 0,
            Met::NoHandles(_) => true,
        });
        if others.len() == MAX_OTHER_MOUNTS {
            return Reopens::Nowhere;
        }
        match file_handle::handle_of(dir) {
            Ok((_, mount)) if u64::try_from(mount).ok() == Some(id) => {
                let Ok(reopen) = nix::fcntl::openat(
                    dir,
                    ".",
                    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                    Mode::empty(),
                ) else {
                    return Reopens::Nowhere;
                };
                let mount = Arc::new(OtherMount { id, reopen });
                others.push(Met::Reopening(Arc::downgrade(&mount)));
                Reopens::On(mount)
            }
            // Another mount's id: not what the lookup said (raced with a
            // mount or an unmount); nothing is remembered.
            Ok(_) => Reopens::Nowhere,
            Err(_) => {
                others.push(Met::NoHandles(id));
                Reopens::Nowhere
            }
        }
    }

    /// Mounts remembered other than the share's, for tests.
    #[cfg(test)]
    fn others(&self) -> usize {
        self.others.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(path: &std::path::Path) -> OwnedFd {
        nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    fn mounts(share_id: u64) -> Mounts {
        Mounts::new(std::fs::File::open("/").unwrap().into(), share_id)
    }

    #[test]
    fn the_share_reopens_and_an_unknown_mount_does_not() {
        let mounts = mounts(7);
        assert!(matches!(mounts.reopening(7), Reopens::OnTheShare));
        assert!(matches!(mounts.reopening(8), Reopens::Nowhere));
        assert_eq!(mounts.others(), 0);
    }

    #[test]
    fn a_mount_met_through_a_directory_reopens_while_its_inodes_live() {
        let tmp = tempfile::tempdir().unwrap();
        let fd = dir(tmp.path());
        let (_, id) = file_handle::handle_of(fd.as_fd()).expect("the temporary directory's handle");
        let id = u64::try_from(id).unwrap();
        // Another id for the share, so that the directory's mount is not it.
        let mounts = mounts(id + 1);
        let Reopens::On(first) = mounts.meet(id, fd.as_fd()) else {
            panic!("met");
        };
        let Reopens::On(again) = mounts.reopening(id) else {
            panic!("remembered while an inode holds it");
        };
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(mounts.others(), 1);
        drop((first, again));
        assert!(
            matches!(mounts.reopening(id), Reopens::Nowhere),
            "its descriptor closed with its last inode"
        );
        let Reopens::On(_held) = mounts.meet(id, fd.as_fd()) else {
            panic!("met again");
        };
        assert_eq!(mounts.others(), 1, "in the place it left");
        // A mount id the directory is not on: nothing remembered.
        assert!(matches!(mounts.meet(id + 2, fd.as_fd()), Reopens::Nowhere));
        assert_eq!(mounts.others(), 1);
    }

    #[test]
    fn a_mount_without_handles_is_remembered_as_such() {
        // A pipe's filesystem gives no file handles.
        let (read_end, _write_end) = nix::unistd::pipe().unwrap();
        let mounts = mounts(1);
        assert!(matches!(
            mounts.meet(99, read_end.as_fd()),
            Reopens::Nowhere
        ));
        assert_eq!(mounts.others(), 1, "remembered, not tried again");
        assert!(matches!(
            mounts.meet(99, read_end.as_fd()),
            Reopens::Nowhere
        ));
        assert_eq!(mounts.others(), 1);
    }
}
