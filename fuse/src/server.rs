//! [`Server`]: the [`Filesystem`] fuser serves, each request handed to
//! [`Passthrough`] and its result sent as the reply (or its errno).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nix::unistd::UnlinkatFlags;
use std::time::{SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::attrs::SetAttr;
use crate::backing::Backing;
use crate::creds::Caller;
use crate::fs::{Passthrough, Waiting, GENERATION};
use crate::shares::Turn;
use crate::table::InodeTable;
use crate::xattr::XattrReply;

/// The flags of every regular file's open: no `FLUSH` at each close
/// (`FOPEN_NOFLUSH`, Linux 5.16+). The server keeps nothing to flush: every
/// write went to the host when it came, the kernel keeps `fcntl` and
/// `flock` locks itself (`FUSE_POSIX_LOCKS` is not negotiated), and there
/// is no writeback cache. So a close costs no round trip; the host file is
/// closed at the `RELEASE`. (A kernel without the flag still sends
/// `FLUSH`, answered by a check of the handle.)
pub(crate) const OPEN_FILE_FLAGS: FopenFlags = FopenFlags::FOPEN_NOFLUSH;

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

/// Serves a request in its user's turn ([`crate::shares`]): at once, on
/// this thread, while the user is within its share of the serving
/// threads; else later, on the thread that ends a turn when this user's
/// comes, with the arguments that borrow the request's buffer (listed in
/// brackets) copied.
macro_rules! in_turn {
    ($server:expr, $req:expr, [$($borrowed:ident),*], |$fs:ident, $caller:pat_param| $body:expr) => {{
        let caller = Caller::of($req);
        let fs: &Passthrough<T> = &$server.0;
        match fs.shares.admit(caller.uid) {
            Some(turn) => {
                {
                    let $fs = fs;
                    let $caller = &caller;
                    $body;
                }
                serve_waiting(fs, turn);
            }
            None => {
                $(let $borrowed = $borrowed.to_owned();)*
                let waiting: Waiting<T> = Box::new(move |$fs: &Passthrough<T>| {
                    let $caller = &caller;
                    $(let $borrowed = &*$borrowed;)*
                    $body;
                });
                if let Some((turn, request)) = fs.shares.wait(caller.uid, waiting) {
                    request(fs);
                    serve_waiting(fs, turn);
                }
            }
        }
    }};
}

/// Ends `turn`, then serves the requests waiting that the shares hand this
/// thread, one after the other, before it goes back to the kernel's queue.
pub(crate) fn serve_waiting<T: InodeTable>(fs: &Passthrough<T>, turn: Turn<'_, Waiting<T>>) {
    let mut next = turn.next();
    while let Some((turn, request)) = next {
        request(fs);
        next = turn.next();
    }
}

/// A `LOOKUP` reply for a name that does not exist: node id 0 (fuser sends
/// the attributes' `ino` as the node id), nothing else read.
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

impl<T: InodeTable> Filesystem for Server<T> {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // READDIRPLUS, adaptively: `ls -l` and `find` get entries with
        // attributes (and lookups) in one request.
        let _ = config.add_capabilities(
            fuser::InitFlags::FUSE_DO_READDIRPLUS | fuser::InitFlags::FUSE_READDIRPLUS_AUTO,
        );
        // Lookups and listings of one directory in parallel: the kernel
        // otherwise serializes them per directory (a held lookup would
        // hold every other caller's lookup in that directory, whatever
        // the serving threads). The table and the host calls take no
        // per-directory lock; changes of a directory still hold its lock
        // in the kernel's VFS.
        let _ = config.add_capabilities(fuser::InitFlags::FUSE_PARALLEL_DIROPS);
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
        // on a stacked filesystem itself (depth 1). Not asked for by a
        // server that is not root: the kernel refuses its registrations
        // (it takes CAP_SYS_ADMIN), and it could not register them as an
        // ordinary user's (`creds::as_backing_owner`).
        if self.0.passthrough
            && self.0.server_is_root
            && config.set_max_stack_depth(1).is_ok()
            && config
                .add_capabilities(fuser::InitFlags::FUSE_PASSTHROUGH)
                .is_ok()
        {
            self.0.backings.enable();
        }
        // FUSE over io_uring (`uring/`), if asked for: replies (and so the
        // rings' payload buffers) of at most `uring::MAX_WRITE`.
        // Relaxed: set before the mount, whose INIT comes after.
        if self.0.rings_asked.load(Ordering::Relaxed)
            && config.set_max_write(crate::uring::MAX_WRITE).is_ok()
            && config
                .add_capabilities(fuser::InitFlags::FUSE_OVER_IO_URING)
                .is_ok()
        {
            // Relaxed: read by the mount after INIT's reply, on this thread.
            self.0.rings_offered.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        in_turn!(
            self,
            req,
            [name],
            |fs, caller| match fs.do_lookup(caller, parent, name) {
                Ok(attr) => reply.entry(&fs.ttl, &attr, GENERATION),
                // A missing name: a negative entry (node id 0) that the kernel
                // keeps for the entry timeout, as libfuse's passthrough does,
                // so that the next failed open of it is no round trip. The
                // kernel drops it itself when a create, mkdir, link, symlink or
                // rename through this mount makes the name; a name made on the
                // host directly shows after the timeout, as attributes do.
                Err(Errno::ENOENT) if !fs.ttl.is_zero() => {
                    reply.entry(&fs.ttl, &negative_entry(), GENERATION);
                }
                Err(e) => reply.error(e),
            }
        );
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        // No reply, no host call: never waits for a turn.
        self.0.forget_one(ino.0, nlookup);
    }

    // BATCH_FORGET: fuser's default hands each entry to `forget` (its
    // entry type is not public to override it with).

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        in_turn!(self, req, [], |fs, _| {
            let r = fs.inode(ino).and_then(|i| fs.attr_of(&i));
            reply_with!(reply, r, |a| reply.attr(&fs.ttl, &a));
        });
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
        in_turn!(self, req, [], |fs, caller| {
            let r = fs.do_setattr(caller, ino, change);
            reply_with!(reply, r, |a| reply.attr(&fs.ttl, &a));
        });
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        in_turn!(self, req, [], |fs, caller| reply_with!(
            reply,
            fs.do_readlink(caller, ino),
            |t| reply.data(t.as_bytes())
        ));
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
        in_turn!(self, req, [name], |fs, caller| {
            let r = fs.do_mknod(caller, parent, name, mode, umask, rdev);
            reply_with!(reply, r, |a| reply.entry(&fs.ttl, &a, GENERATION));
        });
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
        in_turn!(self, req, [name], |fs, caller| {
            let r = fs.do_mkdir(caller, parent, name, mode, umask);
            reply_with!(reply, r, |a| reply.entry(&fs.ttl, &a, GENERATION));
        });
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        in_turn!(self, req, [name], |fs, caller| {
            let r = fs.remove(caller, parent, name, UnlinkatFlags::NoRemoveDir);
            reply_with!(reply, r, |()| reply.ok());
        });
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        in_turn!(self, req, [name], |fs, caller| {
            let r = fs.remove(caller, parent, name, UnlinkatFlags::RemoveDir);
            reply_with!(reply, r, |()| reply.ok());
        });
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        in_turn!(self, req, [link_name, target], |fs, caller| {
            let r = fs.do_symlink(caller, parent, link_name, target);
            reply_with!(reply, r, |a| reply.entry(&fs.ttl, &a, GENERATION));
        });
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
        in_turn!(self, req, [name, newname], |fs, caller| {
            let r = fs.do_rename(caller, parent, name, newparent, newname, flags);
            reply_with!(reply, r, |()| reply.ok());
        });
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        in_turn!(self, req, [newname], |fs, caller| {
            let r = fs.do_link(caller, ino, newparent, newname);
            reply_with!(reply, r, |a| reply.entry(&fs.ttl, &a, GENERATION));
        });
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        in_turn!(self, req, [], |fs, caller| {
            let r = fs.do_open(caller, ino, flags, |fd| match fs.device.get() {
                Some(device) => Backing::register(device, fd),
                None => reply.open_backing(fd).map(Backing::Fuser),
            });
            reply_with!(reply, r, |(fh, backing)| match backing.as_deref() {
                Some(Backing::Fuser(id)) => reply.opened_passthrough(fh, OPEN_FILE_FLAGS, id),
                Some(Backing::Device { id, .. }) => {
                    // SAFETY: `id` is open on this connection (its
                    // `Backing` outlives the reply) and the wrapper is
                    // given back by `into_raw`, never dropped: fuser does
                    // not close it.
                    let wrapped = unsafe { reply.wrap_backing(*id) };
                    reply.opened_passthrough(fh, OPEN_FILE_FLAGS, &wrapped);
                    let _ = wrapped.into_raw();
                }
                None => reply.opened(fh, OPEN_FILE_FLAGS),
            });
        });
    }

    fn read(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_read(fh, offset, size),
            |d| reply.data(&d)
        ));
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        in_turn!(self, req, [data], |fs, _| reply_with!(
            reply,
            fs.do_write(fh, offset, data),
            |n| reply.written(n)
        ));
    }

    fn flush(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_flush(fh),
            |()| reply.ok()
        ));
    }

    fn release(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_release(fh),
            |()| reply.ok()
        ));
    }

    fn fsync(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_fsync(fh, datasync),
            |()| reply.ok()
        ));
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        in_turn!(self, req, [], |fs, caller| reply_with!(
            reply,
            fs.do_opendir(caller, ino),
            |(fh, flags)| reply.opened(fh, flags)
        ));
    }

    fn readdir(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        in_turn!(
            self,
            req,
            [],
            |fs, _| match fs.do_readdir(fh, offset, &mut reply) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        );
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        in_turn!(self, req, [], |fs, caller| match fs
            .do_readdirplus(caller, ino, fh, offset, &mut reply)
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        });
    }

    fn releasedir(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_release(fh),
            |()| reply.ok()
        ));
    }

    fn fsyncdir(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_fsyncdir(fh),
            |()| reply.ok()
        ));
    }

    fn statfs(&self, req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_statfs(ino),
            |s| reply.statfs(
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
                u32::try_from(s.block_size()).unwrap_or(4096),
                u32::try_from(s.name_max()).unwrap_or(255),
                u32::try_from(s.fragment_size()).unwrap_or(4096),
            )
        ));
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        in_turn!(self, req, [], |fs, caller| reply_with!(
            reply,
            fs.do_access(caller, ino, mask),
            |()| reply.ok()
        ));
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
        in_turn!(self, req, [name], |fs, caller| {
            let r = fs.do_create(caller, parent, name, mode, umask, flags, |fd| {
                match fs.device.get() {
                    Some(device) => Backing::register(device, fd),
                    None => reply.open_backing(fd).map(Backing::Fuser),
                }
            });
            let ttl = &fs.ttl;
            reply_with!(reply, r, |(a, fh, backing)| match backing.as_deref() {
                Some(Backing::Fuser(id)) => {
                    reply.created_passthrough(ttl, &a, GENERATION, fh, OPEN_FILE_FLAGS, id);
                }
                Some(Backing::Device { id, .. }) => {
                    // SAFETY: as in `open`.
                    let wrapped = unsafe { reply.wrap_backing(*id) };
                    reply.created_passthrough(ttl, &a, GENERATION, fh, OPEN_FILE_FLAGS, &wrapped);
                    let _ = wrapped.into_raw();
                }
                None => reply.created(ttl, &a, GENERATION, fh, OPEN_FILE_FLAGS),
            });
        });
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        in_turn!(self, req, [name], |fs, caller| reply_with!(
            reply,
            fs.do_getxattr(caller, ino, name, size),
            |x| match x {
                XattrReply::Size(n) => reply.size(n),
                XattrReply::Data(v) => reply.data(&v),
            }
        ));
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        in_turn!(self, req, [], |fs, caller| reply_with!(
            reply,
            fs.do_listxattr(caller, ino, size),
            |x| match x {
                XattrReply::Size(n) => reply.size(n),
                XattrReply::Data(v) => reply.data(&v),
            }
        ));
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
        in_turn!(self, req, [name, value], |fs, caller| {
            let r = fs.do_setxattr(caller, ino, name, value, flags);
            reply_with!(reply, r, |()| reply.ok());
        });
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        in_turn!(self, req, [name], |fs, caller| reply_with!(
            reply,
            fs.do_removexattr(caller, ino, name),
            |()| reply.ok()
        ));
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
        in_turn!(self, req, [], |fs, caller| {
            let r = fs.do_fallocate(caller, fh, offset, length, mode);
            reply_with!(reply, r, |()| reply.ok());
        });
    }

    fn lseek(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        in_turn!(self, req, [], |fs, _| reply_with!(
            reply,
            fs.do_lseek(fh, offset, whence),
            |o| reply.offset(o)
        ));
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
        let flags = flags.bits();
        in_turn!(self, req, [], |fs, caller| {
            let r = fs.do_copy_file_range(caller, fh_in, offset_in, fh_out, offset_out, len, flags);
            reply_with!(reply, r, |n| reply.written(n));
        });
    }
}
