//! [`Live`]: an inode referenced for a request with a descriptor of its
//! host inode, reopened from its file handle when the descriptor cache
//! does not hold one (`Passthrough::live`, in `fs.rs`).

use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use crate::host_inode::HostInode;
use crate::table::InodeData;

/// An inode referenced for a request, with a descriptor of its host inode
/// for the request's length: the one it holds, or one from the descriptor
/// cache (kept open by this reference even if evicted meanwhile).
pub(crate) struct Live<R> {
    pub(crate) inode: R,
    /// `Some` exactly when the inode is named by file handle
    /// ([`Passthrough::live`] reopens every such inode).
    pub(crate) reopened: Option<Arc<OwnedFd>>,
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
