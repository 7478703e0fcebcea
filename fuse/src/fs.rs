//! [`Passthrough`]: the filesystem, mirroring a host directory through an
//! [`InodeTable`].
//!
//! Every request names inodes by node id; each is looked up in the table
//! (a reference held for the request) and acted on through an `O_PATH`
//! descriptor of its host inode (held, or reopened from its file handle
//! into the bounded cache: [`Live`]) with `*at` system calls on checked
//! single names, so nothing
//! outside the mirrored directory is reachable. Requests run with the
//! caller's filesystem credentials (`creds.rs`). The fuser glue is in
//! `server.rs`.

use std::ffi::OsStr;
use std::fs::File;
use std::ops::ControlFlow;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, Generation, INodeNo, OpenFlags, ReplyDirectoryPlus,
    Request, TimeOrNow,
};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;
use nix::sys::time::TimeSpec;

use crate::creds::{self, AsCaller, CredCounts};
use crate::descriptors::{DescriptorStats, Descriptors};
use crate::handles::{DirStream, Handles, Open, Opener};
use crate::host::{self, check_name, errno, stat_fd};
use crate::host_inode::HostInode;
use crate::live::Live;
use crate::options::{default_budget, HostInodes, Options};
use crate::table::{InodeTable, ROOT_ID};

/// How long the kernel may trust an entry or attributes without asking,
/// unless [`Passthrough::with_ttl`] says otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);

/// The largest read served: FUSE's own bound (256 pages of 4 KiB), for a
/// request whose size field says more.
const MAX_READ: u32 = 1 << 20;

/// A node id names one host inode for the server's life ([`NodeIds`]), so
/// one generation serves (the pair is unique but for a host inode number
/// the host itself reuses).
///
/// [`NodeIds`]: crate::node_id::NodeIds
pub(crate) const GENERATION: Generation = Generation(0);

/// The filesystem's state, shared by every serving thread (and kept by
/// tests, to look at the table after an unmount).
pub struct Passthrough<T: InodeTable> {
    /// Dropped before the table: handles hold table references.
    pub(crate) handles: Handles<T::Ref>,
    table: T,
    /// A descriptor of the share's root, through which file handles are
    /// reopened, and its mount's id; `None` when inodes are named by
    /// descriptor.
    pub(crate) by_handle: Option<(OwnedFd, i32)>,
    pub(crate) descriptors: Descriptors,
    server_is_root: bool,
    cred_counts: CredCounts,
    refused_forgets: AtomicU64,
    /// `LOOKUP` requests served, found or not.
    lookups: AtomicU64,
    /// `READDIR` and `READDIRPLUS` requests served.
    pub(crate) listings: AtomicU64,
    pub(crate) ttl: Duration,
    #[cfg(feature = "testing")]
    fault: crate::fault::LookupFault,
}

/// What a `SETATTR` changes (`None`: left as it is).
pub(crate) struct SetAttr {
    pub(crate) mode: Option<u32>,
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
    pub(crate) size: Option<u64>,
    pub(crate) atime: Option<TimeOrNow>,
    pub(crate) mtime: Option<TimeOrNow>,
    /// The open file a truncate goes through, if the caller had one.
    pub(crate) fh: Option<FileHandle>,
    /// A ctime change (`chown(f, -1, -1)` sends only this).
    pub(crate) ctime: bool,
}

/// Who a file is opened for.
fn opener_of(req: &Request) -> Opener {
    Opener {
        uid: req.uid(),
        gid: req.gid(),
        pid: req.pid(),
    }
}

fn timespec(t: Option<TimeOrNow>) -> TimeSpec {
    match t {
        None => TimeSpec::UTIME_OMIT,
        Some(TimeOrNow::Now) => TimeSpec::UTIME_NOW,
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(after) => TimeSpec::from_duration(after),
            // Before 1970 (it was clamped to 1970). fuser 0.18 reads the
            // kernel's time (-S seconds, N nanoseconds, meaning -S + N ns)
            // as the epoch minus (S s + N ns) (`system_time_from_time`,
            // its TODO), so the kernel's own pair is the distance back,
            // read as is: exact, as `times_before_1970_are_exact` checks.
            Err(e) => {
                let before = e.duration();
                TimeSpec::new(-(before.as_secs() as i64), i64::from(before.subsec_nanos()))
            }
        },
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
        Self::with_options(
            source,
            Options {
                ttl,
                ..Options::default()
            },
        )
    }

    /// Mirrors `source` as `options` say.
    ///
    /// # Errors
    ///
    /// The host's error opening or statting `source`; with
    /// [`HostInodes::ByFileHandle`], `Unsupported` with what to do instead
    /// where `source`'s filesystem gives no file handles or the server
    /// cannot reopen them (it is not root).
    pub fn with_options(source: &Path, options: Options) -> std::io::Result<Self> {
        let fd = nix::fcntl::open(
            source,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let st = nix::sys::stat::fstat(&fd)?;
        let by_handle = match options.host_inodes {
            HostInodes::ByDescriptor => None,
            HostInodes::ByFileHandle => Some(Self::check_file_handles(source, &fd)?),
        };
        // The kernel applied the caller's umask already; the host must not
        // apply ours on top (virtiofsd does the same).
        nix::sys::stat::umask(Mode::empty());
        Ok(Passthrough {
            handles: Handles::new(),
            table: T::new(HostInode::Descriptor(fd), host::key_of(&st)),
            by_handle,
            descriptors: Descriptors::new(options.descriptor_budget.unwrap_or_else(default_budget)),
            server_is_root: creds::can_switch(),
            cred_counts: CredCounts::default(),
            refused_forgets: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            listings: AtomicU64::new(0),
            ttl: options.ttl,
            #[cfg(feature = "testing")]
            fault: crate::fault::LookupFault::new(),
        })
    }

    /// The descriptor cache's budget and what it has done.
    pub fn descriptor_stats(&self) -> DescriptorStats {
        self.descriptors.stats()
    }

    /// Test builds (feature `testing`): after `allowed` more lookups, every
    /// lookup fails with `errno` until [`heal`](Self::heal).
    #[cfg(feature = "testing")]
    pub fn fail_lookups_after(&self, allowed: u32, errno: i32) {
        self.fault.arm(allowed, errno);
    }

    /// Test builds: lookups succeed again.
    #[cfg(feature = "testing")]
    pub fn heal(&self) {
        self.fault.disarm();
    }

    /// The inode table.
    pub fn table(&self) -> &T {
        &self.table
    }

    /// Open file and directory handles.
    pub fn open_handles(&self) -> usize {
        self.handles.len()
    }

    /// `FORGET`s refused (unknown inode, more than the kernel held).
    pub fn refused_forgets(&self) -> u64 {
        self.refused_forgets.load(Ordering::Relaxed)
    }

    /// `LOOKUP` requests served, whether the name was found or not (a
    /// lookup the kernel answered from its cache never comes here).
    pub fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    /// `READDIR` and `READDIRPLUS` requests served (a listing the kernel
    /// answered from its cache of the directory never comes here).
    pub fn listings(&self) -> u64 {
        self.listings.load(Ordering::Relaxed)
    }

    pub(crate) fn as_caller(&self, req: &Request) -> Result<AsCaller<'_>, Errno> {
        AsCaller::enter(
            req.uid(),
            req.gid(),
            req.pid(),
            self.server_is_root,
            &self.cred_counts,
        )
        .map_err(Errno::from)
    }

    /// `setfsuid`, `setfsgid` and `setgroups` calls made for callers.
    pub fn credential_switches(&self) -> u64 {
        self.cred_counts.switches.load(Ordering::Relaxed)
    }

    /// Reads of a caller's groups from `/proc`.
    pub fn group_reads(&self) -> u64 {
        self.cred_counts.group_reads.load(Ordering::Relaxed)
    }

    /// Looks `name` up in the directory `parent` on the host and counts one
    /// kernel lookup on it: the attributes to reply with.
    fn lookup_child(&self, parent: &Live<T::Ref>, name: &OsStr) -> Result<FileAttr, Errno> {
        #[cfg(feature = "testing")]
        self.fault.check()?;
        let fd = nix::fcntl::openat(
            parent.fd(),
            name,
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let st = stat_fd(fd.as_fd())?;
        let mut fresh = None;
        let id = self
            .table
            .lookup(host::key_of(&st), || self.host_inode(fd, &mut fresh));
        if let Some(slot) = fresh {
            self.descriptors.register(&slot);
        }
        Ok(host::attr(&st, id))
    }

    /// The attributes of `GETATTR` and `SETATTR`: the root's inode number
    /// is the host's (its node id is fixed), every other one is its node
    /// id, the host's on the root's device.
    pub(crate) fn attr_of(&self, inode: &Live<T::Ref>) -> Result<FileAttr, Errno> {
        let st = stat_fd(inode.fd())?;
        let ino = if inode.id == ROOT_ID {
            st.st_ino
        } else {
            inode.id
        };
        Ok(host::attr(&st, ino))
    }

    pub(crate) fn do_lookup(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
    ) -> Result<FileAttr, Errno> {
        // Relaxed: a counter for tests and reports.
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        self.lookup_child(&parent, name)
    }

    pub(crate) fn do_setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        change: SetAttr,
    ) -> Result<FileAttr, Errno> {
        let SetAttr {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            fh,
            ctime,
        } = change;
        let inode = self.inode(ino)?;
        let _as = self.as_caller(req)?;
        let st = stat_fd(inode.fd())?;
        let is_symlink = host::file_type(st.st_mode) == fuser::FileType::Symlink;
        let path = host::proc_path(inode.fd());
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
                inode.fd(),
                "",
                uid.map(nix::unistd::Uid::from_raw),
                gid.map(nix::unistd::Gid::from_raw),
                AtFlags::AT_EMPTY_PATH,
            )
            .map_err(errno)?;
        }
        // A SETATTR that names nothing is either `chown(f, -1, -1)` (only
        // the ctime changes: the kernel sends the ctime only with a
        // writeback cache) or the kernel's request to clear the set-id bits
        // before a write or truncate (its kill flag is not passed on by
        // fuser). The same `chown(-1, -1)` made as the caller updates the
        // host's ctime; for the second, the host refuses it to a non-owner
        // (a chown would clear the bits), and the write that follows, made
        // as the caller, clears them on the host. So it is best effort: a
        // refusal is not the caller's error.
        let names_nothing = mode.is_none()
            && uid.is_none()
            && gid.is_none()
            && size.is_none()
            && atime.is_none()
            && mtime.is_none();
        if ctime || names_nothing {
            let _ = nix::unistd::fchownat(inode.fd(), "", None, None, AtFlags::AT_EMPTY_PATH);
        }
        if let Some(size) = size {
            let len = i64::try_from(size).map_err(|_| Errno::EFBIG)?;
            match fh.map(|fh| self.handles.file(fh)).transpose()? {
                Some(h) => match &h.open {
                    Open::File(f, _) => nix::unistd::ftruncate(f, len).map_err(errno)?,
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
    pub(crate) fn make_child(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        make: impl FnOnce(BorrowedFd<'_>, &OsStr) -> nix::Result<()>,
    ) -> Result<FileAttr, Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        make(parent.fd(), name).map_err(errno)?;
        self.lookup_child(&parent, name)
    }

    /// `UNLINK` or `RMDIR`.
    pub(crate) fn remove(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        how: nix::unistd::UnlinkatFlags,
    ) -> Result<(), Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        nix::unistd::unlinkat(parent.fd(), name, how).map_err(errno)
    }

    pub(crate) fn do_open(
        &self,
        req: &Request,
        ino: INodeNo,
        flags: OpenFlags,
    ) -> Result<FileHandle, Errno> {
        let inode = self.inode(ino)?;
        let _as = self.as_caller(req)?;
        let st = stat_fd(inode.fd())?;
        match host::file_type(st.st_mode) {
            fuser::FileType::Symlink => return Err(Errno::ELOOP),
            fuser::FileType::Directory => return Err(Errno::EISDIR),
            _ => {}
        }
        // The kernel handles these; a reopen must not create or follow.
        let flags = OFlag::from_bits_truncate(flags.0)
            & !(OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW);
        let fd = nix::fcntl::open(
            host::proc_path(inode.fd()).as_c_str(),
            flags | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let opener = opener_of(req);
        Ok(self
            .handles
            .add(inode.inode, Open::File(File::from(fd), opener)))
    }

    pub(crate) fn do_read(&self, fh: FileHandle, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        let h = self.handles.file(fh)?;
        let Open::File(f, _) = &h.open else {
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

    pub(crate) fn do_write(&self, fh: FileHandle, offset: u64, data: &[u8]) -> Result<u32, Errno> {
        let h = self.handles.file(fh)?;
        let Open::File(f, opener) = &h.open else {
            return Err(Errno::EISDIR);
        };
        // The opener's credentials, whoever sent the write (the kernel
        // writes a mapped file's pages back as uid 0): the write clears
        // set-id bits as the opener would, and meets the opener's limits,
        // not root's (the blocks a filesystem keeps for root).
        let _as = AsCaller::enter(
            opener.uid,
            opener.gid,
            opener.pid,
            self.server_is_root,
            &self.cred_counts,
        )?;
        let end = offset.checked_add(data.len() as u64).ok_or(Errno::EFBIG)?;
        i64::try_from(end).map_err(|_| Errno::EFBIG)?;
        f.write_all_at(data, offset)?;
        u32::try_from(data.len()).map_err(|_| Errno::EINVAL)
    }

    pub(crate) fn do_create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
    ) -> Result<(FileAttr, FileHandle), Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        let _as = self.as_caller(req)?;
        let mode = self.creation_mode(parent.fd(), mode & 0o7777, umask);
        let fd = host::create_file(
            parent.fd(),
            name,
            OFlag::from_bits_truncate(flags),
            Mode::from_bits_truncate(mode),
        )?;
        let attr = self.lookup_child(&parent, name)?;
        // The kernel holds the lookup just counted until our reply: the
        // handle's own reference cannot miss.
        let inode = self.table.get(attr.ino.0).ok_or(Errno::EIO)?;
        let opener = opener_of(req);
        Ok((
            attr,
            self.handles.add(inode, Open::File(File::from(fd), opener)),
        ))
    }

    pub(crate) fn do_opendir(&self, req: &Request, ino: INodeNo) -> Result<FileHandle, Errno> {
        let inode = self.inode(ino)?;
        let _as = self.as_caller(req)?;
        let stream = DirStream::open(inode.fd())?;
        Ok(self.handles.add(inode.inode, Open::Dir(stream)))
    }

    pub(crate) fn do_readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: &mut ReplyDirectoryPlus,
    ) -> Result<(), Errno> {
        // Relaxed: a counter for tests and reports.
        self.listings.fetch_add(1, Ordering::Relaxed);
        let dir = self.inode(ino)?;
        let h = self.handles.dir(fh)?;
        let Open::Dir(stream) = &h.open else {
            return Err(Errno::ENOTDIR);
        };
        let _as = self.as_caller(req)?;
        // A lookup is counted for every entry added: once one is, an error
        // must not turn the reply into an error reply, which would carry
        // none of them to the kernel (and so none would ever be forgotten).
        // Then what was gathered is sent, as the kernel itself returns a
        // partial listing, and the error comes with the next call.
        let mut added = false;
        let mut failed = None;
        let listed = stream.list_from(offset, |entry| {
            let name = OsStr::from_bytes(entry.name);
            if name == "." || name == ".." {
                // The kernel counts no lookup for these: none is taken.
                let st = match nix::sys::stat::fstatat(dir.fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW)
                {
                    Ok(st) => st,
                    Err(e) => {
                        failed = Some(errno(e));
                        return ControlFlow::Break(());
                    }
                };
                let attr = host::attr(&st, ROOT_ID);
                if reply.add(
                    INodeNo(ROOT_ID),
                    entry.next,
                    name,
                    &self.ttl,
                    &attr,
                    GENERATION,
                ) {
                    return ControlFlow::Break(());
                }
                added = true;
                return ControlFlow::Continue(());
            }
            let attr = match self.lookup_child(&dir, name) {
                Ok(attr) => attr,
                // Gone since the host listed it: skipped, as the host would
                // now.
                Err(Errno::ENOENT) => return ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
            };
            if reply.add(attr.ino, entry.next, name, &self.ttl, &attr, GENERATION) {
                // The buffer is full: this entry was not sent, so neither
                // was its lookup.
                let _ = self.table.forget(attr.ino.0, 1);
                return ControlFlow::Break(());
            }
            added = true;
            ControlFlow::Continue(())
        });
        match failed.map_or(listed, Err) {
            Err(e) if !added => Err(e),
            _ => Ok(()),
        }
    }

    pub(crate) fn do_access(
        &self,
        req: &Request,
        ino: INodeNo,
        mask: AccessFlags,
    ) -> Result<(), Errno> {
        let inode = self.inode(ino)?;
        let st = stat_fd(inode.fd())?;
        let groups = creds::groups_of(req.pid());
        if host::may_access(&st, mask.bits(), req.uid(), req.gid(), &groups) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    pub(crate) fn forget_one(&self, id: u64, n: u64) {
        if let Err(e) = self.table.forget(id, n) {
            self.refused_forgets.fetch_add(1, Ordering::Relaxed);
            eprintln!("lockref-fuse: {e}");
        }
    }
}
