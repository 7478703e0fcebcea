//! The host side: names checked before they reach a system call, stat
//! results turned into FUSE attributes, and the `/proc/self/fd` path of an
//! `O_PATH` descriptor; what a lookup learns of a host inode and the key
//! it is known by (`identity.rs`).

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo};
use nix::fcntl::AtFlags;
use nix::sys::stat::{FileStat, SFlag};

mod identity;

pub use identity::{birth_of, key_of, stat_for_lookup, stat_name_for_lookup, Found};

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
