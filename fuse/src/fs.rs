//! [`Passthrough`]: the filesystem, mirroring a host directory through an
//! [`InodeTable`].
//!
//! Every request names inodes by node id; each is looked up in the table
//! (a reference held for the request) and acted on through its `O_PATH`
//! descriptor with `*at` system calls on checked single names, so nothing
//! outside the mirrored directory is reachable. Requests run with the
//! caller's filesystem credentials ([`creds`](crate::creds)).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite,
    Request, TimeOrNow, WriteFlags,
};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, SFlag};
use nix::sys::time::TimeSpec;

use crate::creds::{self, AsCaller};
use crate::host::{self, check_name, errno, stat_fd};
use crate::table::{InodeTable, ROOT_ID};

/// How long the kernel may trust an entry or attributes without asking,
/// unless [`Passthrough::with_ttl`] says otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);

/// The largest read served: FUSE's own bound (256 pages of 4 KiB), for a
/// request whose size field says more.
const MAX_READ: u32 = 1 << 20;

/// Node ids are never reused, so one generation serves.
const GENERATION: Generation = Generation(0);

/// A directory entry as `OPENDIR` read it: name, host inode number, type
/// (if the host filesystem reports it).
type DirEntry = (Vec<u8>, u64, Option<fuser::FileType>);

enum Open {
    File(File),
    /// A directory's entries, read at `OPENDIR` (offsets index them).
    Dir(Vec<DirEntry>),
}

/// An open file or directory: holds a reference on its inode.
struct Handle<R> {
    _inode: R,
    open: Open,
}

/// The filesystem's state, shared by every serving thread (and kept by
/// tests, to look at the table after an unmount).
pub struct Passthrough<T: InodeTable> {
    /// Dropped before the table: handles hold table references.
    handles: RwLock<HashMap<u64, Arc<Handle<T::Ref>>>>,
    next_fh: AtomicU64,
    table: T,
    server_is_root: bool,
    refused_forgets: AtomicU64,
    ttl: Duration,
}

/// What `readdir` and `readdirplus` list: `.`, `..` and the entries.
fn read_dir_entries(fd: &OwnedFd) -> Result<Vec<DirEntry>, Errno> {
    let dir_fd = nix::fcntl::openat(
        fd,
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno)?;
    let mut dir = nix::dir::Dir::from_fd(dir_fd).map_err(errno)?;
    let mut out = Vec::new();
    for entry in dir.iter() {
        let entry = entry.map_err(errno)?;
        let kind = entry.file_type().map(|t| {
            use nix::dir::Type;
            match t {
                Type::Directory => fuser::FileType::Directory,
                Type::Symlink => fuser::FileType::Symlink,
                Type::Fifo => fuser::FileType::NamedPipe,
                Type::Socket => fuser::FileType::Socket,
                Type::CharacterDevice => fuser::FileType::CharDevice,
                Type::BlockDevice => fuser::FileType::BlockDevice,
                Type::File => fuser::FileType::RegularFile,
            }
        });
        out.push((entry.file_name().to_bytes().to_vec(), entry.ino(), kind));
    }
    Ok(out)
}

/// What a `SETATTR` changes (`None`: left as it is).
struct SetAttr {
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
    /// The open file a truncate goes through, if the caller had one.
    fh: Option<FileHandle>,
}

fn timespec(t: Option<TimeOrNow>) -> TimeSpec {
    match t {
        None => TimeSpec::UTIME_OMIT,
        Some(TimeOrNow::Now) => TimeSpec::UTIME_NOW,
        Some(TimeOrNow::SpecificTime(t)) => {
            let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
            TimeSpec::from_duration(d)
        }
    }
}

impl<T: InodeTable> Passthrough<T> {
    /// Mirrors the host directory `source`.
    ///
    /// # Errors
    ///
    /// The host's error opening or statting `source`.
    pub fn new(source: &Path) -> std::io::Result<Self> {
        Self::with_ttl(source, DEFAULT_TTL)
    }

    /// Mirrors `source`, letting the kernel cache entries and attributes
    /// for `ttl` (zero: every path walk and `stat` reaches the server, as
    /// for a filesystem others change underneath).
    ///
    /// # Errors
    ///
    /// The host's error opening or statting `source`.
    pub fn with_ttl(source: &Path, ttl: Duration) -> std::io::Result<Self> {
        let fd = nix::fcntl::open(
            source,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let st = nix::sys::stat::fstat(&fd)?;
        // The kernel applied the caller's umask already; the host must not
        // apply ours on top (virtiofsd does the same).
        nix::sys::stat::umask(Mode::empty());
        Ok(Passthrough {
            handles: RwLock::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            table: T::new(fd, host::key_of(&st)),
            server_is_root: creds::can_switch(),
            refused_forgets: AtomicU64::new(0),
            ttl,
        })
    }

    /// The inode table.
    pub fn table(&self) -> &T {
        &self.table
    }

    /// Open file and directory handles.
    pub fn open_handles(&self) -> usize {
        self.handles.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// `FORGET`s refused (unknown inode, more than the kernel held).
    pub fn refused_forgets(&self) -> u64 {
        self.refused_forgets.load(Ordering::Relaxed)
    }

    fn inode(&self, id: INodeNo) -> Result<T::Ref, Errno> {
        self.table.get(id.0).ok_or(Errno::ESTALE)
    }

    fn as_caller(&self, req: &Request) -> Result<AsCaller, Errno> {
        AsCaller::enter(req.uid(), req.gid(), req.pid(), self.server_is_root).map_err(Errno::from)
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<Handle<T::Ref>>, Errno> {
        let handles = self.handles.read().unwrap_or_else(|e| e.into_inner());
        handles.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    fn file(&self, fh: FileHandle) -> Result<Arc<Handle<T::Ref>>, Errno> {
        let h = self.handle(fh)?;
        match h.open {
            Open::File(_) => Ok(h),
            Open::Dir(_) => Err(Errno::EISDIR),
        }
    }

    fn add_handle(&self, inode: T::Ref, open: Open) -> FileHandle {
        // Relaxed: a unique number is all that is needed.
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let h = Arc::new(Handle {
            _inode: inode,
            open,
        });
        self.handles
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fh, h);
        FileHandle(fh)
    }

    fn remove_handle(&self, fh: FileHandle) -> Result<(), Errno> {
        let removed = self
            .handles
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        removed.map(drop).ok_or(Errno::EBADF)
    }

    /// Looks `name` up in the directory `parent` on the host and counts one
    /// kernel lookup on it: the attributes to reply with.
    fn lookup_child(&self, parent: &T::Ref, name: &OsStr) -> Result<FileAttr, Errno> {
        let fd = nix::fcntl::openat(
            &parent.fd,
            name,
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let st = stat_fd(fd.as_fd())?;
        let id = self.table.lookup(host::key_of(&st), || fd);
        Ok(host::attr(&st, id))
    }

    fn attr_of(&self, inode: &T::Ref) -> Result<FileAttr, Errno> {
        Ok(host::attr(&stat_fd(inode.fd.as_fd())?, inode.id))
    }

    fn do_lookup(&self, req: &Request, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        self.lookup_child(&parent, name)
    }

    fn do_setattr(&self, req: &Request, ino: INodeNo, change: SetAttr) -> Result<FileAttr, Errno> {
        let SetAttr {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            fh,
        } = change;
        let inode = self.inode(ino)?;
        let _as = self.as_caller(req)?;
        let st = stat_fd(inode.fd.as_fd())?;
        let is_symlink = host::file_type(st.st_mode) == fuser::FileType::Symlink;
        let path = host::proc_path(inode.fd.as_fd());
        // Through /proc: the jump of the magic link lands on the inode
        // itself, a symlink included (which the host then refuses a mode
        // change, as Linux does, and gives new times).
        if let Some(mode) = mode {
            nix::sys::stat::fchmodat(
                nix::fcntl::AT_FDCWD,
                path.as_c_str(),
                Mode::from_bits_truncate(mode & 0o7777),
                nix::sys::stat::FchmodatFlags::FollowSymlink,
            )
            .map_err(errno)?;
        }
        if uid.is_some() || gid.is_some() {
            nix::unistd::fchownat(
                &inode.fd,
                "",
                uid.map(nix::unistd::Uid::from_raw),
                gid.map(nix::unistd::Gid::from_raw),
                AtFlags::AT_EMPTY_PATH,
            )
            .map_err(errno)?;
        }
        if let Some(size) = size {
            let len = i64::try_from(size).map_err(|_| Errno::EFBIG)?;
            match fh.map(|fh| self.file(fh)).transpose()? {
                Some(h) => match &h.open {
                    Open::File(f) => nix::unistd::ftruncate(f, len).map_err(errno)?,
                    Open::Dir(_) => return Err(Errno::EISDIR),
                },
                None if is_symlink => return Err(Errno::EINVAL),
                None => nix::unistd::truncate(path.as_c_str(), len).map_err(errno)?,
            }
        }
        if atime.is_some() || mtime.is_some() {
            nix::sys::stat::utimensat(
                nix::fcntl::AT_FDCWD,
                path.as_c_str(),
                &timespec(atime),
                &timespec(mtime),
                nix::sys::stat::UtimensatFlags::FollowSymlink,
            )
            .map_err(errno)?;
        }
        self.attr_of(&inode)
    }

    /// Creates `name` in `parent` with `make`, then looks it up.
    fn make_child(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        make: impl FnOnce(&OwnedFd, &OsStr) -> nix::Result<()>,
    ) -> Result<FileAttr, Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        make(&parent.fd, name).map_err(errno)?;
        self.lookup_child(&parent, name)
    }

    /// `UNLINK` or `RMDIR`.
    fn remove(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        how: nix::unistd::UnlinkatFlags,
    ) -> Result<(), Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        nix::unistd::unlinkat(&parent.fd, name, how).map_err(errno)
    }

    fn do_open(&self, req: &Request, ino: INodeNo, flags: OpenFlags) -> Result<FileHandle, Errno> {
        let inode = self.inode(ino)?;
        let _as = self.as_caller(req)?;
        let st = stat_fd(inode.fd.as_fd())?;
        match host::file_type(st.st_mode) {
            fuser::FileType::Symlink => return Err(Errno::ELOOP),
            fuser::FileType::Directory => return Err(Errno::EISDIR),
            _ => {}
        }
        // The kernel handles these; a reopen must not create or follow.
        let flags = OFlag::from_bits_truncate(flags.0)
            & !(OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW);
        let fd = nix::fcntl::open(
            host::proc_path(inode.fd.as_fd()).as_c_str(),
            flags | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        Ok(self.add_handle(inode, Open::File(File::from(fd))))
    }

    fn do_read(&self, fh: FileHandle, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        let h = self.file(fh)?;
        let Open::File(f) = &h.open else {
            return Err(Errno::EISDIR);
        };
        // Untrusted numbers: no offset the host cannot take, and no
        // buffer larger than any read the kernel can send.
        i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
        let mut buf = vec![0; size.min(MAX_READ) as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match f.read_at(&mut buf[filled..], offset.saturating_add(filled as u64)) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        buf.truncate(filled);
        Ok(buf)
    }

    fn do_write(
        &self,
        req: &Request,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
    ) -> Result<u32, Errno> {
        let h = self.file(fh)?;
        let Open::File(f) = &h.open else {
            return Err(Errno::EISDIR);
        };
        // The caller's credentials: a write clears setuid bits as the
        // caller would.
        let _as = self.as_caller(req)?;
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        i64::try_from(end).map_err(|_| Errno::EFBIG)?;
        f.write_all_at(data, offset)?;
        u32::try_from(data.len()).map_err(|_| Errno::EINVAL)
    }

    fn do_create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        flags: i32,
    ) -> Result<(FileAttr, FileHandle), Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        let flags = OFlag::from_bits_truncate(flags) & !(OFlag::O_NOCTTY | OFlag::O_NOFOLLOW);
        let fd = nix::fcntl::openat(
            &parent.fd,
            name,
            flags | OFlag::O_CREAT | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
            Mode::from_bits_truncate(mode & 0o7777),
        )
        .map_err(errno)?;
        let attr = self.lookup_child(&parent, name)?;
        // The kernel holds the lookup just counted until our reply: the
        // handle's own reference cannot miss.
        let inode = self.table.get(attr.ino.0).ok_or(Errno::EIO)?;
        Ok((attr, self.add_handle(inode, Open::File(File::from(fd)))))
    }

    fn do_opendir(&self, req: &Request, ino: INodeNo) -> Result<FileHandle, Errno> {
        let inode = self.inode(ino)?;
        let _as = self.as_caller(req)?;
        let entries = read_dir_entries(&inode.fd)?;
        Ok(self.add_handle(inode, Open::Dir(entries)))
    }

    fn dir_entries(&self, fh: FileHandle) -> Result<Arc<Handle<T::Ref>>, Errno> {
        let h = self.handle(fh)?;
        match h.open {
            Open::Dir(_) => Ok(h),
            Open::File(_) => Err(Errno::ENOTDIR),
        }
    }

    fn do_readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: &mut ReplyDirectoryPlus,
    ) -> Result<(), Errno> {
        let dir = self.inode(ino)?;
        let h = self.dir_entries(fh)?;
        let Open::Dir(entries) = &h.open else {
            return Err(Errno::ENOTDIR);
        };
        let _as = self.as_caller(req)?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (i, (name, _, _)) in entries.iter().enumerate().skip(start) {
            let name = OsStr::from_bytes(name);
            let next = i as u64 + 1;
            if name == "." || name == ".." {
                // The kernel counts no lookup for these: none is taken.
                let st = nix::sys::stat::fstatat(&dir.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW)
                    .map_err(errno)?;
                let attr = host::attr(&st, ROOT_ID);
                if reply.add(INodeNo(ROOT_ID), next, name, &self.ttl, &attr, GENERATION) {
                    break;
                }
                continue;
            }
            let attr = match self.lookup_child(&dir, name) {
                Ok(attr) => attr,
                // Gone since OPENDIR: skipped, as the host would now.
                Err(Errno::ENOENT) => continue,
                Err(e) => return Err(e),
            };
            if reply.add(attr.ino, next, name, &self.ttl, &attr, GENERATION) {
                // The buffer is full: this entry was not sent, so neither
                // was its lookup.
                let _ = self.table.forget(attr.ino.0, 1);
                break;
            }
        }
        Ok(())
    }

    fn do_access(&self, req: &Request, ino: INodeNo, mask: AccessFlags) -> Result<(), Errno> {
        let inode = self.inode(ino)?;
        let st = stat_fd(inode.fd.as_fd())?;
        let groups = creds::groups_of(req.pid());
        if host::may_access(&st, mask.bits(), req.uid(), req.gid(), &groups) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    fn forget_one(&self, id: u64, n: u64) {
        if let Err(e) = self.table.forget(id, n) {
            self.refused_forgets.fetch_add(1, Ordering::Relaxed);
            eprintln!("lockref-fuse: {e}");
        }
    }
}

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

impl<T: InodeTable> Filesystem for Server<T> {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // READDIRPLUS, adaptively: `ls -l` and `find` get entries with
        // attributes (and lookups) in one request.
        let _ = config.add_capabilities(
            fuser::InitFlags::FUSE_DO_READDIRPLUS | fuser::InitFlags::FUSE_READDIRPLUS_AUTO,
        );
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        reply_with!(reply, self.0.do_lookup(req, parent, name), |a| reply.entry(
            &self.0.ttl,
            &a,
            GENERATION
        ));
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
        _ctime: Option<SystemTime>,
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
        };
        let r = self.0.do_setattr(req, ino, change);
        reply_with!(reply, r, |a| reply.attr(&self.0.ttl, &a));
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        let r = self.0.inode(ino).and_then(|i| {
            let _as = self.0.as_caller(req)?;
            nix::fcntl::readlinkat(&i.fd, "").map_err(errno)
        });
        reply_with!(reply, r, |t| reply.data(t.as_bytes()));
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let r = self.0.make_child(req, parent, name, |dir, name| {
            let kind = SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits());
            let perm = Mode::from_bits_truncate(mode & 0o7777);
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
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.0.make_child(req, parent, name, |dir, name| {
            nix::sys::stat::mkdirat(dir, name, Mode::from_bits_truncate(mode & 0o7777))
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
            nix::fcntl::renameat2(&from.fd, name, &to.fd, newname, flags).map_err(errno)
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
            let path = host::proc_path(inode.fd.as_fd());
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
        reply_with!(reply, self.0.do_write(req, fh, offset, data), |n| reply
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
        reply_with!(reply, self.0.file(fh), |_| reply.ok());
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
        reply_with!(reply, self.0.remove_handle(fh), |()| reply.ok());
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.0.file(fh).and_then(|h| match &h.open {
            Open::File(f) => if datasync {
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
        reply_with!(reply, self.0.do_opendir(req, ino), |fh| reply
            .opened(fh, FopenFlags::empty()));
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let h = match self.0.dir_entries(fh) {
            Ok(h) => h,
            Err(e) => return reply.error(e),
        };
        if let Open::Dir(entries) = &h.open {
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            for (i, (name, ino, kind)) in entries.iter().enumerate().skip(start) {
                let kind = kind.unwrap_or(fuser::FileType::RegularFile);
                if reply.add(INodeNo(*ino), i as u64 + 1, kind, OsStr::from_bytes(name)) {
                    break;
                }
            }
        }
        reply.ok();
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
        reply_with!(reply, self.0.remove_handle(fh), |()| reply.ok());
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
                &i.fd,
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
            .and_then(|i| nix::sys::statvfs::fstatvfs(&i.fd).map_err(errno));
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
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self.0.do_create(req, parent, name, mode, flags);
        reply_with!(reply, r, |(a, fh)| reply.created(
            &self.0.ttl,
            &a,
            GENERATION,
            fh,
            FopenFlags::empty()
        ));
    }
}
