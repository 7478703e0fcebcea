//! Extended attributes (`GETXATTR`, `SETXATTR`, `LISTXATTR`,
//! `REMOVEXATTR`), passed through to the host inode with the caller's
//! rights, POSIX ACLs (`system.posix_acl_access`, `system.posix_acl_default`)
//! included: the kernel negotiates `FUSE_POSIX_ACL` and enforces the ACLs
//! it reads here on every path walk.
//!
//! Each call goes through the inode's `/proc/self/fd` path (which lands on
//! the inode itself, a symlink included) as the caller, so the host checks
//! the caller's permission: read permission for `user.*`, ownership for an
//! ACL. The one thing the host cannot check is capability: a serving
//! thread with the caller's filesystem ids keeps root's `CAP_SYS_ADMIN`,
//! which `trusted.*` and `security.*` writes need. So for a caller other
//! than root those are refused here as the host refuses an unprivileged
//! user: `trusted.*` is invisible (`ENODATA`, left out of listings) and
//! unwritable (`EPERM`), and `security.*` is readable but unwritable.

use std::ffi::OsStr;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;

use fuser::{Errno, INodeNo};

use crate::creds::Caller;
use crate::fs::Passthrough;
use crate::host;
use crate::table::InodeTable;

/// The longest attribute name (Linux's `XATTR_NAME_MAX`).
pub(crate) const XATTR_NAME_MAX: usize = 255;

/// The largest attribute value (Linux's `XATTR_SIZE_MAX`).
pub(crate) const XATTR_SIZE_MAX: usize = 65536;

/// The largest listing of names (Linux's `XATTR_LIST_MAX`).
const XATTR_LIST_MAX: usize = 65536;

/// The attribute holding a directory's default ACL.
const DEFAULT_ACL: &str = "system.posix_acl_default";

/// The attribute holding an inode's access ACL.
const ACCESS_ACL: &str = "system.posix_acl_access";

/// What an attribute's namespace asks of the caller beyond the host's own
/// checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Namespace {
    /// `trusted.*`: root's alone (`CAP_SYS_ADMIN` on the host).
    Trusted,
    /// `security.*`: anyone reads, root writes.
    Security,
    /// `user.*`, `system.*` and anything else: the host decides alone.
    Host,
}

fn namespace(name: &[u8]) -> Namespace {
    if name.starts_with(b"trusted.") {
        Namespace::Trusted
    } else if name.starts_with(b"security.") {
        Namespace::Security
    } else {
        Namespace::Host
    }
}

/// An attribute name from the kernel, checked: not empty, no NUL, at most
/// [`XATTR_NAME_MAX`] bytes.
///
/// # Errors
///
/// `ERANGE` for an empty or over-long name (as the host's `getxattr`
/// answers), `EINVAL` for a NUL inside.
pub(crate) fn check_xattr_name(name: &OsStr) -> Result<&OsStr, Errno> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > XATTR_NAME_MAX {
        return Err(Errno::ERANGE);
    }
    if bytes.contains(&0) {
        return Err(Errno::EINVAL);
    }
    Ok(name)
}

/// Whether a caller may read (`write == false`) or write an attribute in
/// `name`'s namespace, before the host's own check.
fn may(name: &[u8], write: bool, caller_is_root: bool) -> Result<(), Errno> {
    if caller_is_root {
        return Ok(());
    }
    match (namespace(name), write) {
        (Namespace::Trusted, false) => Err(Errno::NO_XATTR),
        (Namespace::Trusted | Namespace::Security, true) => Err(Errno::EPERM),
        _ => Ok(()),
    }
}

/// The names of a `listxattr` buffer (each NUL-terminated) that a caller
/// may see, in the same form.
fn visible_names(list: &[u8], caller_is_root: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.len());
    for name in list.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        if may(name, false, caller_is_root).is_ok() {
            out.extend_from_slice(name);
            out.push(0);
        }
    }
    out
}

/// What a `GETXATTR` or `LISTXATTR` answers: the size the value would
/// take (the kernel asked with size 0), or the value.
pub(crate) enum XattrReply {
    /// The value's size, for a request of size 0.
    Size(u32),
    /// The value itself.
    Data(Vec<u8>),
}

impl XattrReply {
    /// The answer to a request that allowed `size` bytes.
    fn of(value: Vec<u8>, size: u32) -> Result<Self, Errno> {
        let len = u32::try_from(value.len()).map_err(|_| Errno::E2BIG)?;
        if size == 0 {
            Ok(XattrReply::Size(len))
        } else if len > size {
            Err(Errno::ERANGE)
        } else {
            Ok(XattrReply::Data(value))
        }
    }
}

fn io_errno(e: rustix::io::Errno) -> Errno {
    Errno::from_i32(e.raw_os_error())
}

/// Reads a whole attribute value or listing with `read` (a `getxattr` or
/// `listxattr` into the buffer given), growing the buffer while the value
/// grows under it (`ERANGE`), up to `max` bytes.
fn read_all(
    max: usize,
    mut read: impl FnMut(&mut [u8]) -> rustix::io::Result<usize>,
) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0; 256];
    loop {
        match read(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(rustix::io::Errno::RANGE) if buf.len() < max => {
                let grown = (buf.len() * 4).min(max);
                buf.resize(grown, 0);
            }
            Err(e) => return Err(io_errno(e)),
        }
    }
}

impl<T: InodeTable> Passthrough<T> {
    pub(crate) fn do_getxattr(
        &self,
        caller: &Caller,
        ino: INodeNo,
        name: &OsStr,
        size: u32,
    ) -> Result<XattrReply, Errno> {
        let name = check_xattr_name(name)?;
        may(name.as_bytes(), false, caller.uid == 0)?;
        let inode = self.inode(ino)?;
        let path = host::proc_path(inode.fd());
        // The host checks nothing on a read of an ACL (the kernel asks for
        // one on every permission check of a non-owner): no switch.
        let is_acl = [ACCESS_ACL, DEFAULT_ACL].contains(&name.to_str().unwrap_or(""));
        if is_acl {
            // Relaxed: a counter for tests and reports.
            self.acl_reads.fetch_add(1, Ordering::Relaxed);
        }
        let _as = if is_acl {
            None
        } else {
            Some(self.as_caller(caller)?)
        };
        let value = read_all(XATTR_SIZE_MAX, |buf| {
            rustix::fs::getxattr(path.as_c_str(), name, buf)
        })?;
        XattrReply::of(value, size)
    }

    pub(crate) fn do_listxattr(
        &self,
        caller: &Caller,
        ino: INodeNo,
        size: u32,
    ) -> Result<XattrReply, Errno> {
        let inode = self.inode(ino)?;
        let path = host::proc_path(inode.fd());
        let _as = self.as_caller(caller)?;
        let list = read_all(XATTR_LIST_MAX, |buf| {
            rustix::fs::listxattr(path.as_c_str(), buf)
        })?;
        XattrReply::of(visible_names(&list, caller.uid == 0), size)
    }

    pub(crate) fn do_setxattr(
        &self,
        caller: &Caller,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
    ) -> Result<(), Errno> {
        let name = check_xattr_name(name)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(Errno::E2BIG);
        }
        let flags = u32::try_from(flags)
            .ok()
            .and_then(rustix::fs::XattrFlags::from_bits)
            .ok_or(Errno::EINVAL)?;
        may(name.as_bytes(), true, caller.uid == 0)?;
        let inode = self.inode(ino)?;
        let path = host::proc_path(inode.fd());
        let _as = self.as_caller(caller)?;
        rustix::fs::setxattr(path.as_c_str(), name, value, flags).map_err(io_errno)
    }

    pub(crate) fn do_removexattr(
        &self,
        caller: &Caller,
        ino: INodeNo,
        name: &OsStr,
    ) -> Result<(), Errno> {
        let name = check_xattr_name(name)?;
        may(name.as_bytes(), true, caller.uid == 0)?;
        let inode = self.inode(ino)?;
        let path = host::proc_path(inode.fd());
        let _as = self.as_caller(caller)?;
        rustix::fs::removexattr(path.as_c_str(), name).map_err(io_errno)
    }

    /// The mode a new inode in directory `parent` is made with: with
    /// `FUSE_POSIX_ACL` (and so `FUSE_DONT_MASK`) the kernel leaves the
    /// caller's umask to the server. The serving thread takes the caller's
    /// umask (`umask.rs`), and the host applies it or the directory's
    /// default ACL, as for the caller: the mode as asked. Where the thread
    /// cannot have a umask of its own (its umask is the process's, 0), the
    /// umask is applied here unless the directory has a default ACL, as the
    /// host's own `open(O_CREAT)` does.
    pub(crate) fn creation_mode(&self, parent: BorrowedFd<'_>, mode: u32, umask: u32) -> u32 {
        if crate::umask::set_for_creation(umask) {
            return mode;
        }
        let path = host::proc_path(parent);
        match rustix::fs::getxattr_query(path.as_c_str(), DEFAULT_ACL) {
            Ok(len) if len > 0 => mode,
            _ => mode & !umask,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(check_xattr_name(OsStr::new("")), Err(Errno::ERANGE));
        let long = "user.".to_string() + &"x".repeat(XATTR_NAME_MAX);
        assert_eq!(check_xattr_name(OsStr::new(&long)), Err(Errno::ERANGE));
        assert_eq!(
            check_xattr_name(OsStr::new("user.a\0b")),
            Err(Errno::EINVAL)
        );
        assert!(check_xattr_name(OsStr::new("user.fine")).is_ok());
    }

    #[test]
    fn trusted_and_security_writes_are_root_only() {
        for write in [false, true] {
            assert_eq!(may(b"user.a", write, false), Ok(()));
            assert_eq!(may(b"system.posix_acl_access", write, false), Ok(()));
            assert_eq!(may(b"trusted.a", write, true), Ok(()));
            assert_eq!(may(b"security.a", write, true), Ok(()));
        }
        assert_eq!(may(b"trusted.a", false, false), Err(Errno::NO_XATTR));
        assert_eq!(may(b"trusted.a", true, false), Err(Errno::EPERM));
        assert_eq!(may(b"security.selinux", false, false), Ok(()));
        assert_eq!(may(b"security.selinux", true, false), Err(Errno::EPERM));
    }

    #[test]
    fn listings_hide_trusted_names_from_users() {
        let list = b"user.a\0trusted.t\0security.s\0system.posix_acl_access\0";
        assert_eq!(
            visible_names(list, false),
            b"user.a\0security.s\0system.posix_acl_access\0".to_vec()
        );
        assert_eq!(visible_names(list, true), list.to_vec());
    }

    #[test]
    fn a_reply_is_the_size_the_value_or_erange() {
        assert!(matches!(
            XattrReply::of(vec![1, 2, 3], 0),
            Ok(XattrReply::Size(3))
        ));
        assert!(
            matches!(XattrReply::of(vec![1, 2, 3], 3), Ok(XattrReply::Data(v)) if v == [1, 2, 3])
        );
        assert!(matches!(
            XattrReply::of(vec![1, 2, 3], 2),
            Err(Errno::ERANGE)
        ));
    }
}
