//! What a `LOOKUP` learns of a host inode in one `statx`, and the key the
//! inode tables know it by: device, inode number and birth (or what
//! stands for a birth where the host keeps none).

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;

use fuser::Errno;
use nix::sys::stat::FileStat;

use super::stat_fd;
use crate::table::Key;

/// What a `LOOKUP` needs of a host inode, from one `statx`.
#[derive(Clone, Copy)]
pub struct Found {
    /// Its attributes, as [`stat_fd`] gives them.
    pub st: FileStat,
    /// Its birth, as [`birth_of`] gives it.
    pub birth: u64,
    /// The id of the host mount it is on (`STATX_MNT_ID`, the id
    /// `name_to_handle_at` gives), where the kernel tells it (Linux 5.8
    /// and later).
    pub mount_id: Option<u64>,
}

/// `fd`'s attributes, birth and mount in one `statx` (a `LOOKUP`'s
/// `fstatat`, `statx` of the birth and `name_to_handle_at` of the mount
/// made one: a cold `git status` of 2,000 files makes 6,000 fewer system
/// calls).
///
/// # Errors
///
/// The host's, as [`stat_fd`]'s.
pub fn stat_for_lookup(fd: BorrowedFd<'_>) -> Result<Found, Errno> {
    use rustix::fs::{statx, AtFlags};
    let flags = AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW;
    match statx(fd, c"", flags, LOOKUP_STATX)
        .ok()
        .and_then(|x| found(&x))
    {
        Some(mut found) => {
            if found.birth == 0 {
                found.birth = identity_by_handle(fd, c"");
            }
            Ok(found)
        }
        // A kernel without `statx`, or a filesystem that leaves out some
        // of the basic attributes: the two calls.
        None => Ok(Found {
            st: stat_fd(fd)?,
            birth: birth_of(fd),
            mount_id: None,
        }),
    }
}

/// `name` in `dir` as [`stat_for_lookup`] finds a descriptor of it, with
/// no descriptor opened: one `statx` by name (symlinks not followed).
/// `None` where `statx` leaves out a basic attribute (the caller opens the
/// name and asks [`stat_for_lookup`]).
///
/// # Errors
///
/// The host's (`ENOENT` for a name gone).
pub fn stat_name_for_lookup(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Option<Found>, Errno> {
    use rustix::fs::{statx, AtFlags};
    let x = statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, LOOKUP_STATX)
        .map_err(|e| Errno::from_i32(e.raw_os_error()))?;
    let Some(mut found) = found(&x) else {
        return Ok(None);
    };
    if found.birth == 0 {
        let Ok(name) = CString::new(name.as_bytes()) else {
            return Ok(None);
        };
        found.birth = identity_by_handle(dir, &name);
    }
    Ok(Some(found))
}

/// Where the host keeps no birth time (ext2, ext3, ext4 made with 128-byte
/// inodes, and any filesystem whose `statx` gives none), what stands for
/// it in an inode's key: its file handle's bytes, which carry the inode's
/// generation (ext4's, XFS's, btrfs'), so a number the host gives again
/// to a new file comes with another handle, and another key (N2 without
/// birth times). A 64-bit hash of the bytes with the top bit set, so that
/// it is never a birth time (nanoseconds since 1970 stay below 2^63 until
/// 2262). 0, as no birth, where the filesystem gives no handle either:
/// such an inode is never named by handle, so the server holds its
/// descriptor while the table has it, and the host cannot give its number
/// again meanwhile (`mounts.rs`). One `name_to_handle_at` (of `name` in
/// `dir`, or of `dir` itself for an empty name), only on such hosts.
fn identity_by_handle(dir: BorrowedFd<'_>, name: &CStr) -> u64 {
    match crate::file_handle::handle_at(dir, name) {
        Ok((handle, _)) => {
            // FNV-1a over the type and the bytes: stable across runs (the
            // key lives only in this process, but a fixed function keeps
            // tests exact).
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in handle.kind().to_le_bytes().iter().chain(handle.bytes()) {
                hash ^= u64::from(*byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            hash | 1 << 63
        }
        Err(_) => 0,
    }
}

/// What a lookup asks of `statx`: the basic attributes, the birth (N2)
/// and the mount.
const LOOKUP_STATX: rustix::fs::StatxFlags = rustix::fs::StatxFlags::BASIC_STATS
    .union(rustix::fs::StatxFlags::BTIME)
    .union(rustix::fs::StatxFlags::MNT_ID);

/// A lookup's [`Found`] from `statx`'s answer, if it has every basic
/// attribute.
fn found(x: &rustix::fs::Statx) -> Option<Found> {
    use rustix::fs::StatxFlags;
    if x.stx_mask & StatxFlags::BASIC_STATS.bits() != StatxFlags::BASIC_STATS.bits() {
        return None;
    }
    // SAFETY: `stat` is a C struct of integers (and padding): all zero is
    // a valid value of it; every field `fstatat` fills is set below.
    let mut st: FileStat = unsafe { std::mem::zeroed() };
    st.st_dev = libc::makedev(x.stx_dev_major, x.stx_dev_minor);
    st.st_ino = x.stx_ino;
    // The `as` casts: `stat`'s field types vary by architecture (`nlink_t`,
    // `blksize_t`); the kernel's own `cp_new_stat` narrows the same way.
    st.st_nlink = x.stx_nlink as _;
    st.st_mode = libc::mode_t::from(x.stx_mode);
    st.st_uid = x.stx_uid;
    st.st_gid = x.stx_gid;
    st.st_rdev = libc::makedev(x.stx_rdev_major, x.stx_rdev_minor);
    st.st_size = x.stx_size as _;
    st.st_blksize = x.stx_blksize as _;
    st.st_blocks = x.stx_blocks as _;
    st.st_atime = x.stx_atime.tv_sec;
    st.st_atime_nsec = i64::from(x.stx_atime.tv_nsec);
    st.st_mtime = x.stx_mtime.tv_sec;
    st.st_mtime_nsec = i64::from(x.stx_mtime.tv_nsec);
    st.st_ctime = x.stx_ctime.tv_sec;
    st.st_ctime_nsec = i64::from(x.stx_ctime.tv_nsec);
    let birth = if x.stx_mask & StatxFlags::BTIME.bits() != 0 {
        let secs = u64::try_from(x.stx_btime.tv_sec).unwrap_or(0);
        secs.saturating_mul(1_000_000_000) + u64::from(x.stx_btime.tv_nsec)
    } else {
        0
    };
    let mount_id = (x.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(x.stx_mnt_id);
    Some(Found {
        st,
        birth,
        mount_id,
    })
}

/// The host inode a stat describes, born at `birth` ([`birth_of`]).
pub fn key_of(st: &FileStat, birth: u64) -> Key {
    Key {
        dev: st.st_dev,
        ino: st.st_ino,
        birth,
    }
}

/// When the inode of `fd` was made, in nanoseconds since the epoch; where
/// the host filesystem keeps no birth time (or it is before 1970), what
/// stands for it (a hash of its file handle: 0 without a file handle either).
pub fn birth_of(fd: BorrowedFd<'_>) -> u64 {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    match statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::BTIME) {
        Ok(st) if st.stx_mask & StatxFlags::BTIME.bits() != 0 => {
            let secs = u64::try_from(st.stx_btime.tv_sec).unwrap_or(0);
            secs.saturating_mul(1_000_000_000) + u64::from(st.stx_btime.tv_nsec)
        }
        _ => identity_by_handle(fd, c""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    use std::os::fd::AsFd;
    use std::path::Path;

    /// One `statx` gives what `fstatat` and the birth's `statx` gave, for
    /// every kind of inode an `O_PATH` descriptor names.
    #[test]
    fn one_statx_gives_the_stat_the_birth_and_the_mount() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("file"), "some bytes").unwrap();
        std::os::unix::fs::symlink("file", root.join("link")).unwrap();
        std::fs::create_dir(root.join("dir")).unwrap();
        nix::unistd::mkfifo(&root.join("fifo"), Mode::from_bits_truncate(0o640)).unwrap();
        let paths = ["file", "link", "dir", "fifo"].map(|n| root.join(n));
        for path in paths
            .iter()
            .map(|p| p.as_path())
            .chain([Path::new("/dev/null")])
        {
            let fd = nix::fcntl::open(
                path,
                OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .unwrap();
            let Found {
                st,
                birth,
                mount_id,
            } = stat_for_lookup(fd.as_fd()).unwrap();
            let old = stat_fd(fd.as_fd()).unwrap();
            let fields = |s: &FileStat| {
                (
                    (
                        s.st_dev, s.st_ino, s.st_nlink, s.st_mode, s.st_uid, s.st_gid,
                    ),
                    (s.st_rdev, s.st_size, s.st_blksize, s.st_blocks),
                    (s.st_atime, s.st_atime_nsec, s.st_mtime, s.st_mtime_nsec),
                    (s.st_ctime, s.st_ctime_nsec),
                )
            };
            assert_eq!(fields(&st), fields(&old), "{}", path.display());
            assert_eq!(birth, birth_of(fd.as_fd()), "{}", path.display());
            // The mount `name_to_handle_at` names (a device node's handle
            // may be refused: its mount is the one of `/dev`'s entries).
            if let Ok((_, handle_mount)) = crate::file_handle::handle_of(fd.as_fd()) {
                assert_eq!(
                    mount_id,
                    u64::try_from(handle_mount).ok(),
                    "{}",
                    path.display()
                );
            }
        }
    }
}
