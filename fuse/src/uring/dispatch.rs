//! A ring entry's request answered: its arguments taken from the entry's
//! buffers, the same [`Passthrough`] operation `server.rs` calls for
//! fuser's, and the reply written back into the entry.

use std::ffi::OsStr;
use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::time::Duration;

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, OpenFlags,
    RenameFlags, TimeOrNow,
};
use nix::sys::statvfs::Statvfs;
use nix::unistd::UnlinkatFlags;

use super::wire::{fattr, op, time, InHeader, Malformed, OpIn, Overflow, Payload, Reply, Request};
use crate::attrs::SetAttr;
use crate::backing::Backing;
use crate::creds::Caller;
use crate::dirs::{DirPage, DirPlusPage};
use crate::fs::{Passthrough, GENERATION};
use crate::server::{negative_entry, OPEN_FILE_FLAGS};
use crate::table::InodeTable;
use crate::xattr::XattrReply;

/// What an operation answers, before it is written into the entry (the
/// request's buffers are read until then, the reply overwrites them).
enum Answer {
    Empty,
    Entry(FileAttr),
    Attr(FileAttr),
    Data(Vec<u8>),
    /// An open's handle and flags, with its backing's id if passthrough.
    Open(FileHandle, FopenFlags, Option<u32>),
    Created(FileAttr, FileHandle, Option<u32>),
    Written(u32),
    Statfs(Statvfs),
    XattrSize(u32),
    Offset(i64),
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

impl From<Malformed> for Errno {
    fn from(_: Malformed) -> Self {
        Errno::EINVAL
    }
}

impl From<Overflow> for Errno {
    fn from(_: Overflow) -> Self {
        Errno::EIO
    }
}

/// The caller of a ring request.
pub(crate) fn caller(h: &InHeader) -> Caller {
    Caller {
        uid: h.uid,
        gid: h.gid,
        pid: h.pid,
    }
}

/// Registers a backing for an open answered on a ring: on the device the
/// server mounted (rings run only there).
fn register<T: InodeTable>(fs: &Passthrough<T>, fd: BorrowedFd<'_>) -> io::Result<Backing> {
    let device = fs.device.get().ok_or(io::ErrorKind::NotConnected)?;
    Backing::register(device, fd)
}

/// The `backing_id` an open's reply carries, if passthrough: only a
/// [`Backing::Device`] is made for a ring's open (`register`).
fn backing_id(backing: Option<&Backing>) -> Result<Option<u32>, Errno> {
    match backing {
        None => Ok(None),
        Some(Backing::Device { id, .. }) => Ok(Some(*id)),
        Some(Backing::Fuser(_)) => Err(Errno::EIO),
    }
}

/// Answers the request in `header` and `payload` (an entry's buffers,
/// handed over by the kernel's completion) into the same buffers, and
/// returns the id its commit names.
pub(crate) fn answer<T: InodeTable>(
    fs: &Passthrough<T>,
    header: &mut [u8; super::wire::HEADER_LEN],
    payload: &mut [u8],
) -> u64 {
    let unique = Request::unique_of(header);
    let commit_id = Request::commit_id_of(header);
    let answer = match Request::new(header, payload) {
        Ok(req) => decide(fs, &req.in_header(), req.op_in(), req.payload()),
        // A filled length past the buffer: nothing of it is read.
        Err(Malformed) => Err(Errno::EIO),
    };
    let mut reply = Reply::new(header, payload);
    let error = match answer.and_then(|a| write(fs, &mut reply, a)) {
        Ok(()) => 0,
        Err(e) => i32::from(e),
    };
    reply.finish(unique, error);
    commit_id
}

/// The operation `h.opcode` on its arguments.
#[allow(clippy::too_many_lines)] // one arm per operation, as `server.rs`
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
            Ok(attr) => Answer::Entry(attr),
            // A missing name: a negative entry, as `server.rs` says.
            Err(Errno::ENOENT) if !fs.ttl.is_zero() => Answer::Entry(negative_entry()),
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
            Answer::Open(fh, OPEN_FILE_FLAGS, backing_id(backing.as_deref())?)
        }
        op::READ => Answer::Data(fs.do_read(FileHandle(a.u64(0)), a.u64(8), a.u32(16))?),
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
            let (attr, fh, backing) =
                fs.do_create(caller, ino, name, mode, umask, flags, |fd| register(fs, fd))?;
            Answer::Created(attr, fh, backing_id(backing.as_deref())?)
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
        // tmpfile, statx, syncfs: not implemented, as fuser answers them
        // for `server.rs`.
        _ => return Err(Errno::ENOSYS),
    })
}

/// `fuse_setattr_in`'s fields, as fuser gives them to `server.rs`.
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

/// Writes `answer` into `reply`.
fn write<T: InodeTable>(
    fs: &Passthrough<T>,
    reply: &mut Reply<'_>,
    answer: Answer,
) -> Result<(), Errno> {
    let ttl = fs.ttl;
    match answer {
        Answer::Empty => {}
        Answer::Entry(attr) => reply.put_entry(ttl, &attr, GENERATION)?,
        Answer::Attr(attr) => reply.put_attr_out(ttl, &attr)?,
        Answer::Data(data) => reply.put(&data)?,
        Answer::Open(fh, flags, backing) => reply.put_open(fh.0, flags, backing)?,
        Answer::Created(attr, fh, backing) => {
            reply.put_entry(ttl, &attr, GENERATION)?;
            reply.put_open(fh.0, OPEN_FILE_FLAGS, backing)?;
        }
        Answer::Written(n) => {
            reply.put_u32(n)?;
            reply.put_u32(0)?;
        }
        Answer::Statfs(s) => {
            for v in [
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
            ] {
                reply.put_u64(v)?;
            }
            let bsize = u32::try_from(s.block_size()).unwrap_or(4096);
            let namelen = u32::try_from(s.name_max()).unwrap_or(255);
            let frsize = u32::try_from(s.fragment_size()).unwrap_or(4096);
            for v in [bsize, namelen, frsize, 0, 0, 0, 0, 0, 0, 0] {
                reply.put_u32(v)?;
            }
        }
        Answer::XattrSize(n) => {
            reply.put_u32(n)?;
            reply.put_u32(0)?;
        }
        Answer::Offset(o) => reply.put_u64(o as u64)?,
        Answer::Listing {
            plus,
            fh,
            offset,
            size,
        } => {
            let max = (size as usize).min(reply.room());
            let mut page = Page {
                reply,
                max,
                failed: None,
            };
            match plus {
                Some((caller, dir)) => fs.do_readdirplus(&caller, dir, fh, offset, &mut page)?,
                None => fs.do_readdir(fh, offset, &mut page)?,
            }
            if let Some(e) = page.failed {
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// A directory page written into a ring reply, at most `max` bytes.
pub(crate) struct Page<'r, 'a> {
    reply: &'r mut Reply<'a>,
    max: usize,
    failed: Option<Overflow>,
}

impl DirPage for Page<'_, '_> {
    fn add(&mut self, ino: INodeNo, offset: u64, kind: FileType, name: &OsStr) -> bool {
        match self.reply.put_dirent(self.max, ino, offset, kind, name) {
            Ok(added) => !added,
            Err(e) => {
                self.failed = Some(e);
                true
            }
        }
    }
}

impl DirPlusPage for Page<'_, '_> {
    fn add(
        &mut self,
        offset: u64,
        name: &OsStr,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
    ) -> bool {
        match self
            .reply
            .put_direntplus(self.max, *ttl, attr, generation, offset, name)
        {
            Ok(added) => !added,
            Err(e) => {
                self.failed = Some(e);
                true
            }
        }
    }
}
