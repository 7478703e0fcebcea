//! [`Server`]: the [`Filesystem`] fuser serves, each request handed to
//! [`Passthrough`] and its result sent as the reply (or its errno).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::attrs::SetAttr;
use crate::fs::{Passthrough, GENERATION};
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
        // Opens read and written by the kernel from the host file itself
        // (`backing.rs`), if asked for and offered; the share must not be
        // on a stacked filesystem itself (depth 1).
        if self.0.passthrough
            && config.set_max_stack_depth(1).is_ok()
            && config
                .add_capabilities(fuser::InitFlags::FUSE_PASSTHROUGH)
                .is_ok()
        {
            self.0.backings.enable();
        }
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
        reply_with!(reply, self.0.do_readlink(req, ino), |t| reply
            .data(t.as_bytes()));
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
        let r = self.0.do_mknod(req, parent, name, mode, umask, rdev);
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
        let r = self.0.do_mkdir(req, parent, name, mode, umask);
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
        let r = self.0.do_symlink(req, parent, link_name, target);
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
        let r = self
            .0
            .do_rename(req, parent, name, newparent, newname, flags);
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
        let r = self.0.do_link(req, ino, newparent, newname);
        reply_with!(reply, r, |a| reply.entry(&self.0.ttl, &a, GENERATION));
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let r = self.0.do_open(req, ino, flags, |fd| reply.open_backing(fd));
        reply_with!(reply, r, |(fh, backing)| match backing {
            Some(backing) => reply.opened_passthrough(fh, FopenFlags::empty(), &backing),
            None => reply.opened(fh, FopenFlags::empty()),
        });
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
        reply_with!(reply, self.0.do_flush(fh), |()| reply.ok());
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
        reply_with!(reply, self.0.do_release(fh), |()| reply.ok());
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply_with!(reply, self.0.do_fsync(fh, datasync), |()| reply.ok());
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply_with!(reply, self.0.do_opendir(req, ino), |(fh, flags)| reply
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
        match self.0.do_readdir(fh, offset, &mut reply) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
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
        reply_with!(reply, self.0.do_release(fh), |()| reply.ok());
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply_with!(reply, self.0.do_fsyncdir(ino), |()| reply.ok());
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        reply_with!(reply, self.0.do_statfs(ino), |s| reply.statfs(
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
        let r = self
            .0
            .do_create(req, parent, name, mode, umask, flags, |fd| {
                reply.open_backing(fd)
            });
        reply_with!(reply, r, |(a, fh, backing)| match backing {
            Some(backing) => reply.created_passthrough(
                &self.0.ttl,
                &a,
                GENERATION,
                fh,
                FopenFlags::empty(),
                &backing
            ),
            None => reply.created(&self.0.ttl, &a, GENERATION, fh, FopenFlags::empty()),
        });
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
