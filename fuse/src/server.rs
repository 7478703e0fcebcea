//! [`Server`]: the [`Filesystem`] fuser serves, each request handed to
//! [`Passthrough`] and its result sent as the reply (or its errno).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};

use crate::fs::{Passthrough, SetAttr, GENERATION};
use crate::handles::Open;
use crate::host::{self, check_name, errno};
use crate::table::InodeTable;
use crate::xattr::XattrReply;

/// The [`Filesystem`] fuser serves: a shared [`Passthrough`].
pub struct Server<T: InodeTable>(pub Arc<Passthrough<T>>);

macro_rules! reply_with {
    ($reply:expr, $result:expr, |$v:pat_param| $ok:expr) => {
        match $result {
            Ok($v) => $ok,
            Err(e) => $reply.error(e),
        }
    };
}

/// A `LOOKUP` reply for a name that does not exist: node id 0 (fuser sends
/// the attributes' `ino` as the node id), nothing else read.
fn negative_entry() -> FileAttr {
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

impl<T: InodeTable> Filesystem for Server<T> {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // READDIRPLUS, adaptively: `ls -l` and `find` get entries with
        // attributes (and lookups) in one request.
        let _ = config.add_capabilities(
            fuser::InitFlags::FUSE_DO_READDIRPLUS | fuser::InitFlags::FUSE_READDIRPLUS_AUTO,
        );
        // The server clears set-user-ID and set-group-ID bits itself: every
        // write, truncate and chown runs on the host as the caller, whose
        // host kernel clears them as it would for the caller directly.
        // Without this the kernel first sends SETATTR (the mode without
        // the bits) on the writer's behalf, which the host refuses to a
        // writer who does not own the file.
        let _ = config.add_capabilities(fuser::InitFlags::FUSE_HANDLE_KILLPRIV_V2);
        // POSIX ACLs the kernel can see: it reads `system.posix_acl_*`
        // (`xattr.rs`) and enforces them with the mode bits on every path
        // walk, so a directory's ACL holds on cached paths too. With them
        // the caller's umask comes to the server unapplied (DONT_MASK),
        // which applies it only where no default ACL does, as the host.
        let _ = config
            .add_capabilities(fuser::InitFlags::FUSE_POSIX_ACL | fuser::InitFlags::FUSE_DONT_MASK);
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.0.do_lookup(req, parent, name) {
            Ok(attr) => reply.entry(&self.0.ttl, &attr, GENERATION),
            // A missing name: a negative entry (node id 0) that the kernel
            // keeps for the entry timeout, as libfuse's passthrough does,
            // so that the next failed open of it is no round trip. The
            // kernel drops it itself when a create, mkdir, link, symlink or
            // rename through this mount makes the name; a name made on the
            // host directly shows after the timeout, as attributes do.
            Err(Errno::ENOENT) if !self.0.ttl.is_zero() => {
                reply.entry(&self.0.ttl, &negative_entry(), GENERATION);
            }
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.0.forget_one(ino.0, nlookup);
    }

    // BATCH_FORGET: fuser's default hands each entry to `forget` (its
    // entry type is not public to override it with).

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let r = self.0.inode(ino).and_then(|i| self.0.attr_of(&i));
        reply_with!(reply, r, |a| reply.attr(&self.0.ttl, &a));
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let change = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            fh,
            ctime: ctime.is_some(),
        };
        let r = self.0.do_setattr(req, ino, change);
        reply_with!(reply, r, |a| reply.attr(&self.0.ttl, &a));
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        let r = self.0.inode(ino).and_then(|i| {
            let _as = self.0.as_caller(req)?;
            nix::fcntl::readlinkat(i.fd(), "").map_err(errno)
        });
        reply_with!(reply, r, |t| reply.data(t.as_bytes()));
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let r = self.0.make_child(req, parent, name, |dir, name| {
            let kind = SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits());
            let perm = Mode::from_bits_truncate(self.0.creation_mode(dir, mode & 0o7777, umask));
            nix::sys::stat::mknodat(dir, name, kind, perm, u64::from(rdev))
        });
        reply_with!(reply, r, |a| reply.entry(&self.0.ttl, &a, GENERATION));
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.0.make_child(req, parent, name, |dir, name| {
            let perm = self.0.creation_mode(dir, mode & 0o7777, umask);
            nix::sys::stat::mkdirat(dir, name, Mode::from_bits_truncate(perm))
        });
        reply_with!(reply, r, |a| reply.entry(&self.0.ttl, &a, GENERATION));
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self
            .0
            .remove(req, parent, name, nix::unistd::UnlinkatFlags::NoRemoveDir);
        reply_with!(reply, r, |()| reply.ok());
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self
            .0
            .remove(req, parent, name, nix::unistd::UnlinkatFlags::RemoveDir);
        reply_with!(reply, r, |()| reply.ok());
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let r = self.0.make_child(req, parent, link_name, |dir, name| {
            nix::unistd::symlinkat(target, dir, name)
        });
        reply_with!(reply, r, |a| reply.entry(&self.0.ttl, &a, GENERATION));
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let name = check_name(name)?;
            let newname = check_name(newname)?;
            let from = self.0.inode(parent)?;
            let to = self.0.inode(newparent)?;
            let flags = nix::fcntl::RenameFlags::from_bits(flags.bits()).ok_or(Errno::EINVAL)?;
            let _as = self.0.as_caller(req)?;
            nix::fcntl::renameat2(from.fd(), name, to.fd(), newname, flags).map_err(errno)
        })();
        reply_with!(reply, r, |()| reply.ok());
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = self.0.inode(ino).and_then(|inode| {
            let path = host::proc_path(inode.fd());
            // Through /proc (AT_SYMLINK_FOLLOW jumps to the inode), not
            // AT_EMPTY_PATH, which needs CAP_DAC_READ_SEARCH the caller
            // may lack.
            self.0.make_child(req, newparent, newname, |dir, name| {
                nix::unistd::linkat(
                    nix::fcntl::AT_FDCWD,
                    path.as_c_str(),
                    dir,
                    name,
                    AtFlags::AT_SYMLINK_FOLLOW,
                )
            })
        });
        reply_with!(reply, r, |a| reply.entry(&self.0.ttl, &a, GENERATION));
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        reply_with!(reply, self.0.do_open(req, ino, flags), |fh| reply
            .opened(fh, FopenFlags::empty()));
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        reply_with!(reply, self.0.do_read(fh, offset, size), |d| reply.data(&d));
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply_with!(reply, self.0.do_write(fh, offset, data), |n| reply
            .written(n));
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing buffered here: every write went to the host.
        reply_with!(reply, self.0.handles.file(fh), |_| reply.ok());
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        reply_with!(reply, self.0.handles.remove(fh), |()| reply.ok());
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.0.handles.file(fh).and_then(|h| match &h.open {
            Open::File(f, _) => if datasync {
                f.sync_data()
            } else {
                f.sync_all()
            }
            .map_err(Errno::from),
            Open::Dir(_) => Err(Errno::EISDIR),
        });
        reply_with!(reply, r, |()| reply.ok());
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // With entries cached at all, the kernel may cache the listing too
        // (`FOPEN_CACHE_DIR`) and keep it across opens (`FOPEN_KEEP_CACHE`),
        // as libfuse's passthrough does with caching on: it drops it when
        // the directory changes through this mount (its version moves) or
        // its mtime does (seen after the attribute timeout, for changes
        // made on the host directly).
        let flags = if self.0.ttl.is_zero() {
            FopenFlags::empty()
        } else {
            FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE
        };
        reply_with!(reply, self.0.do_opendir(req, ino), |fh| reply
            .opened(fh, flags));
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        // Relaxed: a counter for tests and reports.
        self.0.listings.fetch_add(1, Ordering::Relaxed);
        let h = match self.0.handles.dir(fh) {
            Ok(h) => h,
            Err(e) => return reply.error(e),
        };
        let Open::Dir(stream) = &h.open else {
            return reply.error(Errno::ENOTDIR);
        };
        let mut added = false;
        let listed = stream.list_from(offset, |entry| {
            let kind = entry.kind.unwrap_or(fuser::FileType::RegularFile);
            if reply.add(
                INodeNo(entry.ino),
                entry.next,
                kind,
                OsStr::from_bytes(entry.name),
            ) {
                return std::ops::ControlFlow::Break(());
            }
            added = true;
            std::ops::ControlFlow::Continue(())
        });
        match listed {
            // Nothing sent yet: the error is the reply. Otherwise the
            // entries gathered go, and the error comes with the next call.
            Err(e) if !added => reply.error(e),
            _ => reply.ok(),
        }
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        match self.0.do_readdirplus(req, ino, fh, offset, &mut reply) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        reply_with!(reply, self.0.handles.remove(fh), |()| reply.ok());
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.0.inode(ino).and_then(|i| {
            let fd = nix::fcntl::openat(
                i.fd(),
                ".",
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(errno)?;
            nix::unistd::fsync(&fd).map_err(errno)
        });
        reply_with!(reply, r, |()| reply.ok());
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let r = self
            .0
            .inode(ino)
            .and_then(|i| nix::sys::statvfs::fstatvfs(i.fd()).map_err(errno));
        reply_with!(reply, r, |s| reply.statfs(
            s.blocks(),
            s.blocks_free(),
            s.blocks_available(),
            s.files(),
            s.files_free(),
            u32::try_from(s.block_size()).unwrap_or(4096),
            u32::try_from(s.name_max()).unwrap_or(255),
            u32::try_from(s.fragment_size()).unwrap_or(4096),
        ));
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        reply_with!(reply, self.0.do_access(req, ino, mask), |()| reply.ok());
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self.0.do_create(req, parent, name, mode, umask, flags);
        reply_with!(reply, r, |(a, fh)| reply.created(
            &self.0.ttl,
            &a,
            GENERATION,
            fh,
            FopenFlags::empty()
        ));
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        reply_with!(
            reply,
            self.0.do_getxattr(req, ino, name, size),
            |x| match x {
                XattrReply::Size(n) => reply.size(n),
                XattrReply::Data(v) => reply.data(&v),
            }
        );
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        reply_with!(reply, self.0.do_listxattr(req, ino, size), |x| match x {
            XattrReply::Size(n) => reply.size(n),
            XattrReply::Data(v) => reply.data(&v),
        });
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let r = self.0.do_setxattr(req, ino, name, value, flags);
        reply_with!(reply, r, |()| reply.ok());
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply_with!(reply, self.0.do_removexattr(req, ino, name), |()| reply
            .ok());
    }

    fn fallocate(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let r = self.0.do_fallocate(req, fh, offset, length, mode);
        reply_with!(reply, r, |()| reply.ok());
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        reply_with!(reply, self.0.do_lseek(fh, offset, whence), |o| reply
            .offset(o));
    }

    fn copy_file_range(
        &self,
        req: &Request,
        _ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        _ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        let r =
            self.0
                .do_copy_file_range(req, fh_in, offset_in, fh_out, offset_out, len, flags.bits());
        reply_with!(reply, r, |n| reply.written(n));
    }
}
