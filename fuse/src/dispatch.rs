//! The one dispatcher: a request's operation, decoded from its
//! arguments (`wire/`) and done by [`Passthrough`], whichever transport
//! brought it. Its answer is written as the reply by `answer.rs`.

use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::time::UNIX_EPOCH;

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, FopenFlags, INodeNo, OpenFlags,
    RenameFlags, TimeOrNow,
};
use nix::sys::statvfs::Statvfs;
use nix::unistd::UnlinkatFlags;

use crate::attrs::SetAttr;
use crate::backing::Backing;
use crate::creds::Caller;
use crate::fs::{Entry, Passthrough};
use crate::table::InodeTable;
use crate::wire::{fattr, op, time, InHeader, OpIn, Payload, Request};
use crate::xattr::XattrReply;

/// The flags of every regular file's open: no `FLUSH` at each close
/// (`FOPEN_NOFLUSH`, Linux 5.16+). The server keeps nothing to flush: every
/// write went to the host when it came, the kernel keeps `fcntl` and
/// `flock` locks itself (`FUSE_POSIX_LOCKS` is not negotiated), and there
/// is no writeback cache. So a close costs no round trip; the host file is
/// closed at the `RELEASE`. (A kernel without the flag still sends
/// `FLUSH`, answered by a check of the handle.)
pub(crate) const OPEN_FILE_FLAGS: FopenFlags = FopenFlags::FOPEN_NOFLUSH;

/// A `LOOKUP` reply for a name that does not exist: node id 0, nothing
/// else read. The kernel keeps it for the entry timeout, as libfuse's
/// passthrough does, so that the next failed open of the name is no round
/// trip; it drops it itself when a create, mkdir, link, symlink or rename
/// through this mount makes the name, and a name made on the host directly
/// shows after the timeout, as attributes do.
pub(crate) fn negative_entry() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: FileType::RegularFile,
        perm: 0,
        nlink: 0,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 0,
        flags: 0,
    }
}

/// What an operation answers, before it is written into the entry (the
/// request's buffers are read until then, the reply overwrites them).
pub(crate) enum Answer {
    Empty,
    Entry(Entry),
    Attr(FileAttr),
    Data(Vec<u8>),
    /// An open's handle and flags, with its backing's id if passthrough.
    Open(FileHandle, FopenFlags, Option<u32>),
    Created(Entry, FileHandle, Option<u32>),
    Written(u32),
    Statfs(Statvfs),
    XattrSize(u32),
    Offset(i64),
    /// A `READ` of at most `size` bytes from this handle and offset, read
    /// into the reply itself (one host read, no buffer of its own).
    Read {
        fh: FileHandle,
        offset: u64,
        size: u32,
    },
    /// A directory page, listed from this handle and offset into the reply
    /// itself, at most `size` bytes; with attributes (`READDIRPLUS`) for
    /// this caller in this directory.
    Listing {
        plus: Option<(Caller, INodeNo)>,
        fh: FileHandle,
        offset: u64,
        size: u32,
    },
}

/// The caller of a request.
pub(crate) fn caller(h: &InHeader) -> Caller {
    Caller {
        uid: h.uid,
        gid: h.gid,
        pid: h.pid,
    }
}

/// Registers a backing for an open: on the connection's device.
fn register<T: InodeTable>(fs: &Passthrough<T>, fd: BorrowedFd<'_>) -> io::Result<Backing> {
    let device = fs.device.get().ok_or(io::ErrorKind::NotConnected)?;
    Backing::register(device, fd)
}

/// The `backing_id` an open's reply carries, if passthrough.
fn backing_id(backing: Option<&Backing>) -> Option<u32> {
    backing.map(Backing::id)
}

/// The operation of `request`, done: what its reply is to carry, or its
/// error.
pub(crate) fn decide_request<T: InodeTable>(
    fs: &Passthrough<T>,
    request: &Request<'_>,
) -> Result<Answer, Errno> {
    decide(fs, &request.in_header(), request.op_in(), request.payload())
}

/// The operation `h.opcode` on its arguments.
#[allow(clippy::too_many_lines)] // one arm per operation
fn decide<T: InodeTable>(
    fs: &Passthrough<T>,
    h: &InHeader,
    a: OpIn<'_>,
    p: Payload<'_>,
) -> Result<Answer, Errno> {
    let ino = INodeNo(h.nodeid);
    let caller = &caller(h);
    Ok(match h.opcode {
        op::LOOKUP => match fs.do_lookup(caller, ino, p.name()?.0) {
            Ok(entry) => Answer::Entry(entry),
            // A missing name: a negative entry (`answer.rs`).
            Err(Errno::ENOENT) if !fs.ttl.is_zero() => Answer::Entry(Entry {
                node: 0,
                attr: negative_entry(),
            }),
            Err(e) => return Err(e),
        },
        op::GETATTR => Answer::Attr(fs.attr_of(&fs.inode(ino)?)?),
        op::SETATTR => Answer::Attr(fs.do_setattr(caller, ino, set_attr(a))?),
        op::READLINK => Answer::Data(fs.do_readlink(caller, ino)?.into_encoded_bytes()),
        op::SYMLINK => {
            let (name, rest) = p.name()?;
            let target = Path::new(rest.name()?.0);
            Answer::Entry(fs.do_symlink(caller, ino, name, target)?)
        }
        op::MKNOD => {
            let name = p.name()?.0;
            Answer::Entry(fs.do_mknod(caller, ino, name, a.u32(0), a.u32(8), a.u32(4))?)
        }
        op::MKDIR => Answer::Entry(fs.do_mkdir(caller, ino, p.name()?.0, a.u32(0), a.u32(4))?),
        op::UNLINK => {
            fs.remove(caller, ino, p.name()?.0, UnlinkatFlags::NoRemoveDir)?;
            Answer::Empty
        }
        op::RMDIR => {
            fs.remove(caller, ino, p.name()?.0, UnlinkatFlags::RemoveDir)?;
            Answer::Empty
        }
        op::RENAME | op::RENAME2 => {
            let flags = if h.opcode == op::RENAME2 {
                RenameFlags::from_bits_retain(a.u32(8))
            } else {
                RenameFlags::empty()
            };
            let (name, rest) = p.name()?;
            let newname = rest.name()?.0;
            let newparent = INodeNo(a.u64(0));
            fs.do_rename(caller, ino, name, newparent, newname, flags)?;
            Answer::Empty
        }
        op::LINK => {
            let old = INodeNo(a.u64(0));
            Answer::Entry(fs.do_link(caller, old, ino, p.name()?.0)?)
        }
        op::OPEN => {
            let (fh, backing) =
                fs.do_open(caller, ino, OpenFlags(a.i32(0)), |fd| register(fs, fd))?;
            // The backing lives on in `Backings` while the file is open.
            Answer::Open(fh, OPEN_FILE_FLAGS, backing_id(backing.as_deref()))
        }
        // Read by `answer.rs` straight into the reply.
        op::READ => Answer::Read {
            fh: FileHandle(a.u64(0)),
            offset: a.u64(8),
            size: a.u32(16),
        },
        op::WRITE => {
            let data = p.bytes(a.u32(16) as usize)?;
            Answer::Written(fs.do_write(FileHandle(a.u64(0)), a.u64(8), data)?)
        }
        op::STATFS => Answer::Statfs(fs.do_statfs(ino)?),
        op::RELEASE | op::RELEASEDIR => {
            fs.do_release(FileHandle(a.u64(0)))?;
            Answer::Empty
        }
        op::FSYNC => {
            fs.do_fsync(FileHandle(a.u64(0)), a.u32(8) & 1 != 0)?;
            Answer::Empty
        }
        op::FSYNCDIR => {
            fs.do_fsyncdir(FileHandle(a.u64(0)))?;
            Answer::Empty
        }
        op::FLUSH => {
            fs.do_flush(FileHandle(a.u64(0)))?;
            Answer::Empty
        }
        op::SETXATTR => {
            let (name, rest) = p.name()?;
            let value = rest.bytes(a.u32(0) as usize)?;
            fs.do_setxattr(caller, ino, name, value, a.i32(4))?;
            Answer::Empty
        }
        op::GETXATTR => xattr(fs.do_getxattr(caller, ino, p.name()?.0, a.u32(0))?),
        op::LISTXATTR => xattr(fs.do_listxattr(caller, ino, a.u32(0))?),
        op::REMOVEXATTR => {
            fs.do_removexattr(caller, ino, p.name()?.0)?;
            Answer::Empty
        }
        op::OPENDIR => {
            let (fh, flags) = fs.do_opendir(caller, ino)?;
            Answer::Open(fh, flags, None)
        }
        op::READDIR | op::READDIRPLUS => Answer::Listing {
            plus: (h.opcode == op::READDIRPLUS).then_some((*caller, ino)),
            fh: FileHandle(a.u64(0)),
            offset: a.u64(8),
            size: a.u32(16),
        },
        op::ACCESS => {
            fs.do_access(caller, ino, AccessFlags::from_bits_retain(a.i32(0)))?;
            Answer::Empty
        }
        op::CREATE => {
            let name = p.name()?.0;
            let (flags, mode, umask) = (a.i32(0), a.u32(4), a.u32(8));
            let (entry, fh, backing) =
                fs.do_create(caller, ino, name, mode, umask, flags, |fd| register(fs, fd))?;
            Answer::Created(entry, fh, backing_id(backing.as_deref()))
        }
        op::FALLOCATE => {
            let (fh, offset, length) = (FileHandle(a.u64(0)), a.u64(8), a.u64(16));
            fs.do_fallocate(caller, fh, offset, length, a.i32(24))?;
            Answer::Empty
        }
        op::LSEEK => {
            // `fuse_lseek_in.offset` is an `int64_t`.
            let offset = a.u64(8) as i64;
            Answer::Offset(fs.do_lseek(FileHandle(a.u64(0)), offset, a.i32(16))?)
        }
        op::COPY_FILE_RANGE => {
            let (fh_in, off_in) = (FileHandle(a.u64(0)), a.u64(8));
            let (fh_out, off_out) = (FileHandle(a.u64(24)), a.u64(32));
            let (len, flags) = (a.u64(40), a.u64(48));
            Answer::Written(
                fs.do_copy_file_range(caller, fh_in, off_in, fh_out, off_out, len, flags)?,
            )
        }
        op::DESTROY => Answer::Empty,
        // Locks (`FUSE_POSIX_LOCKS` is not negotiated), ioctl, poll, bmap,
        // tmpfile, statx, syncfs: not implemented.
        _ => return Err(Errno::ENOSYS),
    })
}

/// `fuse_setattr_in`'s fields.
fn set_attr(a: OpIn<'_>) -> SetAttr {
    let valid = a.u32(0);
    let when = |now, set, secs, nanos| {
        if valid & now != 0 {
            Some(TimeOrNow::Now)
        } else if valid & set != 0 {
            Some(TimeOrNow::SpecificTime(time(secs, nanos)))
        } else {
            None
        }
    };
    let given = |bit: u32| valid & bit != 0;
    SetAttr {
        mode: given(fattr::MODE).then(|| a.u32(68)),
        uid: given(fattr::UID).then(|| a.u32(76)),
        gid: given(fattr::GID).then(|| a.u32(80)),
        size: given(fattr::SIZE).then(|| a.u64(16)),
        atime: when(fattr::ATIME_NOW, fattr::ATIME, a.u64(32), a.u32(56)),
        mtime: when(fattr::MTIME_NOW, fattr::MTIME, a.u64(40), a.u32(60)),
        fh: given(fattr::FH).then(|| FileHandle(a.u64(8))),
        ctime: given(fattr::CTIME),
    }
}

fn xattr(x: XattrReply) -> Answer {
    match x {
        XattrReply::Size(n) => Answer::XattrSize(n),
        XattrReply::Data(v) => Answer::Data(v),
    }
}
