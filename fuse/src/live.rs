//! [`Live`]: an inode referenced for a request with a descriptor of its
//! host inode, reopened from its file handle when the descriptor cache
//! does not hold one; and how a new inode is named for the table.

use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use fuser::{Errno, INodeNo};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::descriptors::Descriptors;
use crate::file_handle;
use crate::fs::Passthrough;
use crate::host_inode::{DescriptorSlot, HostInode};
use crate::table::{InodeData, InodeTable};

/// An inode referenced for a request, with a descriptor of its host inode
/// for the request's length: the one it holds, or one from the descriptor
/// cache (kept open by this reference even if evicted meanwhile).
pub(crate) struct Live<R> {
    pub(crate) inode: R,
    /// `Some` exactly when the inode is named by file handle
    /// ([`Passthrough::live`] reopens every such inode).
    reopened: Option<Arc<OwnedFd>>,
}

impl<R: Deref<Target: Deref<Target = InodeData>>> Live<R> {
    /// The host inode's `O_PATH` descriptor.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match (&self.reopened, &self.inode.host) {
            (Some(fd), _) => fd.as_fd(),
            (None, HostInode::Descriptor(fd)) => fd.as_fd(),
            (None, HostInode::Handle { .. }) => {
                unreachable!("Passthrough::live reopens every inode named by handle")
            }
        }
    }
}

impl<R: Deref<Target: Deref<Target = InodeData>>> Deref for Live<R> {
    type Target = InodeData;
    fn deref(&self) -> &InodeData {
        &self.inode
    }
}

impl<T: InodeTable> Passthrough<T> {
    /// That the share's root gives a file handle and that this process can
    /// reopen it; returns a descriptor of the root to reopen handles
    /// through, and its mount's id.
    pub(crate) fn check_file_handles(
        source: &Path,
        root: &OwnedFd,
    ) -> std::io::Result<(OwnedFd, i32)> {
        let advice = "serve it with --inode-descriptors (HostInodes::ByDescriptor), which \
                      keeps a descriptor per inode the kernel remembers";
        let refuse = |why: String| std::io::Error::new(std::io::ErrorKind::Unsupported, why);
        let (handle, mount_id) = file_handle::handle_of(root.as_fd()).map_err(|e| {
            refuse(format!(
                "{}: its filesystem gives no file handles (name_to_handle_at: {e}); {advice}",
                source.display()
            ))
        })?;
        // The handle is reopened through a descriptor that is not O_PATH:
        // open_by_handle_at refuses those (EBADF) on some kernels.
        let mount = nix::fcntl::open(
            source,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        file_handle::open_handle(mount.as_fd(), &handle).map_err(|e| {
            refuse(format!(
                "{}: cannot reopen a file handle (open_by_handle_at: {e}; it needs \
                 CAP_DAC_READ_SEARCH: run as root); {advice}",
                source.display()
            ))
        })?;
        Ok((mount, mount_id))
    }

    /// The inode of node id `id`, referenced for a request, with its host
    /// descriptor. Called before the request switches to the caller's
    /// credentials: reopening a file handle needs the server's own.
    pub(crate) fn inode(&self, id: INodeNo) -> Result<Live<T::Ref>, Errno> {
        let inode = self.table().get(id.0).ok_or(Errno::ESTALE)?;
        self.live(inode)
    }

    /// `inode` with its host descriptor: a file handle is reopened unless
    /// the cache holds its descriptor.
    pub(crate) fn live(&self, inode: T::Ref) -> Result<Live<T::Ref>, Errno> {
        let reopened = match (&inode.host, &self.by_handle) {
            (HostInode::Descriptor(_), _) => None,
            (HostInode::Handle { handle, slot }, Some((mount, _))) => {
                Some(match Descriptors::cached(slot) {
                    Some(fd) => fd,
                    None => {
                        let fd = file_handle::open_handle(mount.as_fd(), handle)?;
                        self.descriptors.install(slot, fd)
                    }
                })
            }
            // Handles are made only when inodes are named by handle.
            (HostInode::Handle { .. }, None) => return Err(Errno::EIO),
        };
        Ok(Live { inode, reopened })
    }

    /// The host inode for the table to keep for `fd`, just opened on a
    /// new inode: its file handle, with `fd` cached in a new slot (which
    /// `fresh` receives, to enter it in the cache's clock once the table
    /// has taken it), or `fd` itself when inodes are named by descriptor,
    /// the filesystem gives this inode no handle, or it is on another
    /// mount than the share's root (a handle reopens only on its own).
    pub(crate) fn host_inode(
        &self,
        fd: OwnedFd,
        fresh: &mut Option<Arc<DescriptorSlot>>,
    ) -> HostInode {
        let Some((_, root_mount)) = &self.by_handle else {
            return HostInode::Descriptor(fd);
        };
        match file_handle::handle_of(fd.as_fd()) {
            Ok((handle, mount)) if mount == *root_mount => {
                let slot = Arc::new(DescriptorSlot::default());
                *slot.fd.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(fd));
                *fresh = Some(slot.clone());
                HostInode::Handle { handle, slot }
            }
            _ => HostInode::Descriptor(fd),
        }
    }
}
