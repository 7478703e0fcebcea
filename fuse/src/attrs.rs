//! The operations on attributes: `GETATTR`, `SETATTR`, `ACCESS` and
//! `STATFS`.

use std::time::UNIX_EPOCH;

use fuser::{AccessFlags, Errno, FileAttr, FileHandle, INodeNo, TimeOrNow};
use nix::fcntl::AtFlags;
use nix::sys::stat::Mode;
use nix::sys::statvfs::Statvfs;
use nix::sys::time::TimeSpec;

use crate::creds::{self, Caller};
use crate::fs::Passthrough;
use crate::handles::Open;
use crate::host::{self, errno, stat_fd};
use crate::live::Live;
use crate::table::InodeTable;

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
    /// The attributes of `GETATTR` and `SETATTR`, with the host's inode
    /// number (`inode_numbers.rs`).
    pub(crate) fn attr_of(&self, inode: &Live<T::Ref>) -> Result<FileAttr, Errno> {
        Ok(self.attr(&stat_fd(inode.fd())?))
    }

    pub(crate) fn do_setattr(
        &self,
        caller: &Caller,
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
        let _as = self.as_caller(caller)?;
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

    pub(crate) fn do_access(
        &self,
        caller: &Caller,
        ino: INodeNo,
        mask: AccessFlags,
    ) -> Result<(), Errno> {
        let inode = self.inode(ino)?;
        let st = stat_fd(inode.fd())?;
        let groups = creds::groups_of(caller.pid);
        if host::may_access(&st, mask.bits(), caller.uid, caller.gid, &groups) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    pub(crate) fn do_statfs(&self, ino: INodeNo) -> Result<Statvfs, Errno> {
        let inode = self.inode(ino)?;
        nix::sys::statvfs::fstatvfs(inode.fd()).map_err(errno)
    }
}
