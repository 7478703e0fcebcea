//! The host side: names checked before they reach a system call, stat
//! results turned into FUSE attributes, and the `/proc/self/fd` path of an
//! `O_PATH` descriptor.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo};
use nix::fcntl::AtFlags;
use nix::sys::stat::{FileStat, SFlag};

use crate::table::Key;

/// The longest name a directory entry may have (Linux's `NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// A name from the kernel, checked: one path component, never `.` or
/// `..` (which would leave the directory the request names), at most
/// [`NAME_MAX`] bytes.
///
/// # Errors
///
/// `EINVAL` for an empty name, one with `/` or a NUL, `.` or `..`;
/// `ENAMETOOLONG` past [`NAME_MAX`].
pub fn check_name(name: &OsStr) -> Result<&OsStr, Errno> {
    let bytes = name.as_bytes();
    if bytes.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if bytes.is_empty()
        || bytes == b"."
        || bytes == b".."
        || bytes.contains(&b'/')
        || bytes.contains(&0)
    {
        return Err(Errno::EINVAL);
    }
    Ok(name)
}

/// A `nix` error as the errno FUSE replies with.
pub fn errno(e: nix::Error) -> Errno {
    Errno::from_i32(e as i32)
}

/// `fstat` of an `O_PATH` descriptor (which `fstat` itself refuses on
/// some kernels): `fstatat(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)`.
pub fn stat_fd(fd: BorrowedFd<'_>) -> Result<FileStat, Errno> {
    nix::sys::stat::fstatat(
        fd,
        "",
        AtFlags::AT_EMPTY_PATH | AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .map_err(errno)
}

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

/// The path that reopens an `O_PATH` descriptor's inode.
pub fn proc_path(fd: BorrowedFd<'_>) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
}

/// `CREATE`'s open: makes `name` in `dir` as a regular file, exclusively,
/// or, if something appeared at the name since the kernel's `LOOKUP`
/// (without `O_EXCL` from the caller), opens it if it is a regular file.
/// Nothing here can block: a FIFO or a device made at the name in between
/// (by another user of a shared mount) is refused with `EEXIST`, never
/// opened (an open of a FIFO waits for its other end, which would hang the
/// serving thread for good).
pub fn create_file(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: nix::fcntl::OFlag,
    mode: nix::sys::stat::Mode,
) -> Result<std::os::fd::OwnedFd, Errno> {
    use nix::fcntl::OFlag;
    let base = flags & !(OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW);
    let exclusive = base | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match nix::fcntl::openat(dir, name, exclusive, mode) {
        Ok(fd) => return Ok(fd),
        Err(nix::Error::EEXIST) if !flags.contains(OFlag::O_EXCL) => {}
        Err(e) => return Err(errno(e)),
    }
    // There now: open what is there only if it is a regular file, without
    // blocking (O_NONBLOCK, then the caller's blocking mode back). A FIFO
    // opened for writing without a reader fails at once (ENXIO): swapped
    // in after the check below, it is refused as well.
    let there = nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(errno)?;
    if file_type(there.st_mode) != FileType::RegularFile {
        return Err(Errno::EEXIST);
    }
    let fd = match nix::fcntl::openat(
        dir,
        name,
        base | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        mode,
    ) {
        Ok(fd) => fd,
        Err(nix::Error::ENXIO) => return Err(Errno::EEXIST),
        Err(e) => return Err(errno(e)),
    };
    let st = nix::sys::stat::fstat(&fd).map_err(errno)?;
    if file_type(st.st_mode) != FileType::RegularFile {
        return Err(Errno::EEXIST);
    }
    if !base.contains(OFlag::O_NONBLOCK) {
        let now = OFlag::from_bits_truncate(
            nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFL).map_err(errno)?,
        );
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFL(now & !OFlag::O_NONBLOCK))
            .map_err(errno)?;
    }
    Ok(fd)
}

/// The file type of a `st_mode`.
pub fn file_type(mode: u32) -> FileType {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFDIR => FileType::Directory,
        SFlag::S_IFLNK => FileType::Symlink,
        SFlag::S_IFIFO => FileType::NamedPipe,
        SFlag::S_IFSOCK => FileType::Socket,
        SFlag::S_IFCHR => FileType::CharDevice,
        SFlag::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    let nsecs = u32::try_from(nsecs).unwrap_or(0);
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs.unsigned_abs(), nsecs)
    } else {
        UNIX_EPOCH - Duration::new(secs.unsigned_abs(), 0) + Duration::new(0, nsecs)
    }
}

/// FUSE attributes of a host stat, for node id `id`.
pub fn attr(st: &FileStat, id: u64) -> FileAttr {
    FileAttr {
        ino: INodeNo(id),
        size: u64::try_from(st.st_size).unwrap_or(0),
        blocks: u64::try_from(st.st_blocks).unwrap_or(0),
        atime: time(st.st_atime, st.st_atime_nsec),
        mtime: time(st.st_mtime, st.st_mtime_nsec),
        ctime: time(st.st_ctime, st.st_ctime_nsec),
        crtime: UNIX_EPOCH,
        kind: file_type(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: u32::try_from(st.st_nlink).unwrap_or(u32::MAX),
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: u32::try_from(st.st_rdev).unwrap_or(0),
        blksize: u32::try_from(st.st_blksize).unwrap_or(4096),
        flags: 0,
    }
}

/// The POSIX permission check of `mask` (`R_OK`, `W_OK`, `X_OK` bits) for
/// `uid`/`gid`/`groups` against a host stat (`ACCESS`).
pub fn may_access(st: &FileStat, mask: i32, uid: u32, gid: u32, groups: &[u32]) -> bool {
    let want = (mask & 0o7) as u32;
    if want == 0 {
        return true;
    }
    if uid == 0 {
        // Root may do anything but execute a file nobody may execute.
        let is_dir = st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits();
        return want & 0o1 == 0 || is_dir || st.st_mode & 0o111 != 0;
    }
    let bits = if st.st_uid == uid {
        st.st_mode >> 6
    } else if st.st_gid == gid || groups.contains(&st.st_gid) {
        st.st_mode >> 3
    } else {
        st.st_mode
    } & 0o7;
    bits & want == want
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    use std::os::fd::AsFd;
    use std::path::Path;
    use std::time::Duration;

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

    /// A FIFO made at the name between `LOOKUP` and `CREATE` is refused at
    /// once, never opened: before, the server's `open(O_CREAT)` of it
    /// waited for a reader, and the serving thread hung for good.
    #[test]
    fn create_never_opens_a_fifo_that_appeared_at_the_name() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join("fifo"), Mode::from_bits_truncate(0o666)).unwrap();
        let dir_fd: std::os::fd::OwnedFd = std::fs::File::open(dir.path()).unwrap().into();
        let (done, wait) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = create_file(
                std::os::fd::AsFd::as_fd(&dir_fd),
                OsStr::new("fifo"),
                OFlag::O_WRONLY,
                Mode::from_bits_truncate(0o644),
            );
            let _ = done.send(r.err());
        });
        let refused = wait
            .recv_timeout(Duration::from_secs(10))
            .expect("the create did not block");
        assert_eq!(refused, Some(Errno::EEXIST));
    }

    #[test]
    fn create_makes_or_reopens_a_regular_file_and_honours_o_excl() {
        let dir = tempfile::tempdir().unwrap();
        let dir_fd: std::os::fd::OwnedFd = std::fs::File::open(dir.path()).unwrap().into();
        let mode = Mode::from_bits_truncate(0o644);
        let made = create_file(
            std::os::fd::AsFd::as_fd(&dir_fd),
            OsStr::new("f"),
            OFlag::O_RDWR,
            mode,
        )
        .unwrap();
        let flags = nix::fcntl::fcntl(&made, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(
            OFlag::from_bits_truncate(flags) & OFlag::O_NONBLOCK,
            OFlag::empty()
        );
        let again = create_file(
            std::os::fd::AsFd::as_fd(&dir_fd),
            OsStr::new("f"),
            OFlag::O_WRONLY,
            mode,
        )
        .unwrap();
        let flags = nix::fcntl::fcntl(&again, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(
            OFlag::from_bits_truncate(flags) & OFlag::O_NONBLOCK,
            OFlag::empty(),
            "blocking again"
        );
        let excl = create_file(
            std::os::fd::AsFd::as_fd(&dir_fd),
            OsStr::new("f"),
            OFlag::O_WRONLY | OFlag::O_EXCL,
            mode,
        );
        assert_eq!(excl.err(), Some(Errno::EEXIST));
    }
}
