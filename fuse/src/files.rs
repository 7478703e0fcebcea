//! The operations on open files: `OPEN`, `CREATE`, `READ`, `WRITE`,
//! `FLUSH`, `FSYNC` and `RELEASE`.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use fuser::{Errno, FileHandle, INodeNo, OpenFlags};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::backing::{self, Backing};
use crate::creds::{self, AsCaller, Caller};
use crate::fs::{Entry, Passthrough};
use crate::handles::Open;
use crate::host::{self, check_name, errno, stat_fd};
use crate::table::InodeTable;

impl<T: InodeTable> Passthrough<T> {
    /// `OPEN`: the handle, and the inode's passthrough backing if the
    /// kernel is to read and write the host file itself (`backing.rs`
    /// decides); `register` makes one from the host file (the reply's
    /// `open_backing`).
    pub(crate) fn do_open(
        &self,
        caller: &Caller,
        ino: INodeNo,
        flags: OpenFlags,
        register: impl FnOnce(BorrowedFd<'_>) -> std::io::Result<Backing>,
    ) -> Result<(FileHandle, Option<Arc<Backing>>), Errno> {
        let inode = self.inode(ino)?;
        self.handles.may_add(caller.uid)?;
        let as_caller = self.as_caller(caller)?;
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
        // The caller's rights are checked: the backing, shared by every
        // caller of the inode, is the server's own (`backing.rs`).
        drop(as_caller);
        let size = st.st_size.max(0) as u64;
        self.add_file_handle(
            inode.id,
            inode.inode,
            File::from(fd),
            caller,
            flags,
            size,
            register,
        )
    }

    /// An open regular file's handle: the open joins its inode's I/O mode
    /// (`backing.rs`; `size` and the access mode in `flags` decide an
    /// inode's first), then gets its handle, and leaves the mode again if
    /// the handle is refused.
    #[allow(clippy::too_many_arguments)]
    fn add_file_handle(
        &self,
        id: u64,
        inode: T::Ref,
        file: File,
        caller: &Caller,
        flags: OFlag,
        size: u64,
        register: impl FnOnce(BorrowedFd<'_>) -> std::io::Result<Backing>,
    ) -> Result<(FileHandle, Option<Arc<Backing>>), Errno> {
        let writes = (flags & OFlag::O_ACCMODE) != OFlag::O_RDONLY;
        let io = self
            .backings
            .open(id, backing::wants_passthrough(writes, size), || {
                creds::as_backing_owner(&self.cred_counts, || register(file.as_fd()))
            });
        self.handles
            .add(inode, Open::File(file, *caller), caller.uid, io.counted)
            .map(|fh| (fh, io.backing))
            .inspect_err(|_| {
                if let Some(id) = io.counted {
                    self.backings.release(id);
                }
            })
    }

    /// `READ`: one host read at `offset` into `buf` (the reply's payload,
    /// not zeroed first; the caller bounds it by the request's size and
    /// the reply's room), returning the bytes read. A short read is the
    /// end of the file, as the host says it: the handle is a regular
    /// file's (the kernel keeps FIFOs and devices to itself), whose host
    /// read returns less only there.
    pub(crate) fn do_read_into(
        &self,
        fh: FileHandle,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        // Relaxed: a counter for tests and reports.
        self.reads.fetch_add(1, Ordering::Relaxed);
        let h = self.handles.file(fh)?;
        let Open::File(f, _) = &h.open else {
            return Err(Errno::EISDIR);
        };
        // Untrusted numbers: no offset the host cannot take.
        i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
        loop {
            match f.read_at(buf, offset) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub(crate) fn do_write(&self, fh: FileHandle, offset: u64, data: &[u8]) -> Result<u32, Errno> {
        // Relaxed: a counter for tests and reports.
        self.writes.fetch_add(1, Ordering::Relaxed);
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

    // The request's own fields, as fuser's `create` has them, and the
    // backing's maker.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn do_create(
        &self,
        caller: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        register: impl FnOnce(BorrowedFd<'_>) -> std::io::Result<Backing>,
    ) -> Result<(Entry, FileHandle, Option<Arc<Backing>>), Errno> {
        let name = check_name(name)?;
        let parent = self.inode(parent)?;
        self.handles.may_add(caller.uid)?;
        let as_caller = self.as_caller(caller)?;
        let mode = self.creation_mode(parent.fd(), mode & 0o7777, umask);
        let fd = host::create_file(
            parent.fd(),
            name,
            OFlag::from_bits_truncate(flags),
            Mode::from_bits_truncate(mode),
        )?;
        let entry = self.lookup_made_child(&parent, name)?;
        // The kernel holds the lookup just counted until our reply: the
        // handle's own reference cannot miss.
        let inode = self.table.get(entry.node).ok_or(Errno::EIO)?;
        drop(as_caller);
        match self.add_file_handle(
            entry.node,
            inode,
            File::from(fd),
            caller,
            OFlag::from_bits_truncate(flags),
            entry.attr.size,
            register,
        ) {
            Ok((fh, backing)) => Ok((entry, fh, backing)),
            Err(e) => {
                // No reply carries the lookup: it is given back here (a
                // race past `may_add` above; the file stays made).
                let _ = self.table.forget(entry.node, 1);
                Err(e)
            }
        }
    }

    /// Nothing is buffered here (every write went to the host): a check of
    /// the handle.
    pub(crate) fn do_flush(&self, fh: FileHandle) -> Result<(), Errno> {
        // Relaxed: a counter for tests and reports.
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.handles.file(fh).map(drop)
    }

    pub(crate) fn do_fsync(&self, fh: FileHandle, datasync: bool) -> Result<(), Errno> {
        let h = self.handles.file(fh)?;
        match &h.open {
            Open::File(f, _) => if datasync {
                f.sync_data()
            } else {
                f.sync_all()
            }
            .map_err(Errno::from),
            Open::Dir(_) => Err(Errno::EISDIR),
        }
    }

    /// `RELEASE` and `RELEASEDIR`: the handle and its inode reference go,
    /// and the open leaves its inode's I/O mode.
    pub(crate) fn do_release(&self, fh: FileHandle) -> Result<(), Errno> {
        if let Some(id) = self.handles.remove(fh)? {
            self.backings.release(id);
        }
        Ok(())
    }
}
