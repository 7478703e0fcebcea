//! Byte ranges of open files beyond read and write: `FALLOCATE` (the
//! modes the host supports: reserve, `FALLOC_FL_KEEP_SIZE`,
//! `FALLOC_FL_PUNCH_HOLE`, `FALLOC_FL_ZERO_RANGE`), `LSEEK` with
//! `SEEK_DATA`/`SEEK_HOLE` (so that sparse files keep their holes through
//! `cp --sparse`), and `COPY_FILE_RANGE` (the host copies, reflinking
//! where it can). Each runs on the handle's host descriptor, as the caller
//! where it writes.
//!
//! Locks are not here: the server does not negotiate `FUSE_POSIX_LOCKS`
//! or `FUSE_FLOCK_LOCKS`, so the kernel keeps `fcntl` and `flock` locks
//! itself, and they exclude each other between every process using the
//! mount (not against processes using the host directory directly).

use std::fs::File;

use fuser::{Errno, FileHandle};
use nix::fcntl::FallocateFlags;
use nix::unistd::Whence;

use crate::creds::Caller;
use crate::fs::Passthrough;
use crate::handles::{Handle, Open};
use crate::host::errno;
use crate::table::InodeTable;

/// The most one `COPY_FILE_RANGE` reply can say was copied (its count is
/// 32 bits), rounded down to whole pages as the kernel's own clamp.
const MAX_COPY: u64 = (u32::MAX as u64) & !0xfff;

/// The file a handle has open, or `EISDIR` for a directory handle.
fn file_of<R>(h: &Handle<R>) -> Result<&File, Errno> {
    match &h.open {
        Open::File(f, _) => Ok(f),
        Open::Dir(_) => Err(Errno::EISDIR),
    }
}

/// A file offset or length from the kernel as the host's `off_t`.
fn off_t(n: u64) -> Result<i64, Errno> {
    i64::try_from(n).map_err(|_| Errno::EINVAL)
}

impl<T: InodeTable> Passthrough<T> {
    pub(crate) fn do_fallocate(
        &self,
        caller: &Caller,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
    ) -> Result<(), Errno> {
        let h = self.handles.file(fh)?;
        let f = file_of(&h)?;
        let mode = FallocateFlags::from_bits(mode).ok_or(Errno::EOPNOTSUPP)?;
        let (offset, length) = (off_t(offset)?, off_t(length)?);
        offset.checked_add(length).ok_or(Errno::EFBIG)?;
        let _as = self.as_caller(caller)?;
        nix::fcntl::fallocate(f, mode, offset, length).map_err(errno)
    }

    pub(crate) fn do_lseek(&self, fh: FileHandle, offset: i64, whence: i32) -> Result<i64, Errno> {
        let h = self.handles.file(fh)?;
        let f = file_of(&h)?;
        // The kernel answers SEEK_SET, SEEK_CUR and SEEK_END itself. The
        // host descriptor's own position is never used (reads and writes
        // give their offsets), so moving it here disturbs nothing.
        let whence = match whence {
            libc::SEEK_DATA => Whence::SeekData,
            libc::SEEK_HOLE => Whence::SeekHole,
            _ => return Err(Errno::EINVAL),
        };
        nix::unistd::lseek(f, offset, whence).map_err(errno)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn do_copy_file_range(
        &self,
        caller: &Caller,
        fh_in: FileHandle,
        offset_in: u64,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        flags: u64,
    ) -> Result<u32, Errno> {
        if flags != 0 {
            return Err(Errno::EINVAL);
        }
        let from = self.handles.file(fh_in)?;
        let to = self.handles.file(fh_out)?;
        let (mut off_in, mut off_out) = (off_t(offset_in)?, off_t(offset_out)?);
        let len = usize::try_from(len.min(MAX_COPY)).map_err(|_| Errno::EINVAL)?;
        let _as = self.as_caller(caller)?;
        let copied = nix::fcntl::copy_file_range(
            file_of(&from)?,
            Some(&mut off_in),
            file_of(&to)?,
            Some(&mut off_out),
            len,
        )
        .map_err(errno)?;
        u32::try_from(copied).map_err(|_| Errno::EIO)
    }
}
