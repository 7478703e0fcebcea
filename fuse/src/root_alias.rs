//! The share shown through an alias of the FUSE root, so that the kernel
//! caches the ACL of the directory every path walk into the mount starts
//! from.
//!
//! Why: the kernel makes the FUSE root inode (node id 1) when the mount is
//! made, before the server's `INIT` reply negotiates `FUSE_POSIX_ACL`, and
//! marks it then as an inode whose ACLs are never cached
//! (`ACL_DONT_CACHE`, `fuse_init_inode`); the mark stays for the mount's
//! life (Linux 6.18 keeps it even through an inode invalidation). So every
//! path walk through the root by a caller other than its owner asked the
//! server for the root's ACL: one synchronous `GETXATTR` round trip per
//! `open`, `stat` or `access` of an absolute path, which doubled an
//! ordinary user's open+close (measured: 60-80 us against 35 us through
//! the alias, on the 2-CPU VM).
//!
//! How: the server is mounted at a private directory, where the kernel
//! looks up [`ROOT_ALIAS_NAME`] in the root; the server answers with the
//! share's own directory under a node id of its own, [`ROOT_ALIAS_ID`],
//! an inode the kernel makes after `INIT`, whose ACL it caches like any
//! other's. That entry is bind-mounted at the mount point and the private
//! mount is detached: the mount point shows the same directory and the
//! same files, and no path reaches node id 1 any more (`..` of the mount's
//! root leaves the mount, as for any mount). The connection ends when the
//! mount point is unmounted, the last mount of it.
//!
//! Only a server that is root does this (a bind mount takes
//! `CAP_SYS_ADMIN`); one mounted by `fusermount3` shows node id 1 as
//! before. Requests for [`ROOT_ALIAS_ID`] are requests for the share's
//! root: [`crate::fs::Passthrough`] turns the id into [`ROOT_ID`] before
//! its table sees it, and the kernel's lookup of the alias is counted on
//! the root and forgotten from it.

use std::io;
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};

use crate::table::ROOT_ID;

/// The node id of the alias: above every node id a table gives (the
/// lockref table's ids stay below 2^63, the others count up from 2).
pub const ROOT_ALIAS_ID: u64 = 0xff << 56;

/// The name the alias is looked up by, in node id 1 only (which no path
/// reaches once the mount is shown): it hides no file of the share.
pub const ROOT_ALIAS_NAME: &str = ".lockref-fuse-root";

/// The node id the table knows a request's node id `id` by.
pub(crate) fn table_id(id: u64) -> u64 {
    if id == ROOT_ALIAS_ID {
        ROOT_ID
    } else {
        id
    }
}

/// A private directory to mount the server at before it is shown: made
/// with mode 0700 in the system's temporary directory, so that no other
/// user walks through node id 1 meanwhile.
///
/// # Errors
///
/// The host's.
pub(crate) fn private_mountpoint() -> io::Result<PathBuf> {
    let template = std::env::temp_dir().join("lockref-fuse.XXXXXX");
    Ok(nix::unistd::mkdtemp(&template)?)
}

/// Shows the share mounted at `private` at `mountpoint`: binds the alias
/// there, then detaches the private mount (the kernel keeps the connection
/// for the bind). On failure nothing is left mounted at either: the
/// private mount is detached (which ends the connection), and so is the
/// bind if it was made.
///
/// # Errors
///
/// The bind's, or the detach's.
pub(crate) fn show(private: &Path, mountpoint: &Path) -> io::Result<()> {
    let bound = mount(
        Some(&private.join(ROOT_ALIAS_NAME)),
        mountpoint,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    );
    let detached = umount2(private, MntFlags::MNT_DETACH);
    if bound.is_ok() && detached.is_err() {
        let _ = umount2(mountpoint, MntFlags::MNT_DETACH);
    }
    bound?;
    detached?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_alias_is_the_root() {
        assert_eq!(table_id(ROOT_ALIAS_ID), ROOT_ID);
        assert_eq!(table_id(ROOT_ID), ROOT_ID);
        assert_eq!(table_id(2), 2);
        assert_eq!(table_id(0xff << 56 | 1), 0xff << 56 | 1);
    }
}
