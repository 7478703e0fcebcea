//! File handles: a host inode named by the bytes its filesystem gives
//! (`name_to_handle_at`), reopened as an `O_PATH` descriptor when a
//! request needs one (`open_by_handle_at`, which needs
//! `CAP_DAC_READ_SEARCH`). An inode the kernel remembers then costs the
//! server no descriptor, only a few bytes, as virtiofsd's
//! `--inode-file-handles` does.
//!
//! The two system calls have no wrapper in libc, nix or rustix; they are
//! issued raw here, on a `struct file_handle` laid out as the kernel's.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::handle_bytes::FileHandleBytes;

/// The largest handle the kernel hands out (`MAX_HANDLE_SZ`).
const MAX_HANDLE_SZ: usize = 128;

/// The kernel's `struct file_handle` with room for the largest handle.
#[repr(C)]
struct RawFileHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; MAX_HANDLE_SZ],
}

/// The file handle of the inode `fd` refers to and the id of the mount it
/// was found on.
///
/// # Errors
///
/// `EOPNOTSUPP` where the filesystem gives no handles, `EOVERFLOW` for a
/// handle larger than [`MAX_HANDLE_SZ`], or another errno of the call.
pub(crate) fn handle_of(fd: BorrowedFd<'_>) -> io::Result<(FileHandleBytes, i32)> {
    handle_at(fd, c"")
}

/// The file handle of `name` in the directory `dir` (a symlink's own, not
/// its target's), or of `dir` itself for an empty name, and the id of
/// its mount.
///
/// # Errors
///
/// As [`handle_of`]'s; `ENOENT` for a name gone.
pub(crate) fn handle_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<(FileHandleBytes, i32)> {
    let mut raw = RawFileHandle {
        handle_bytes: MAX_HANDLE_SZ as u32,
        handle_type: 0,
        f_handle: [0; MAX_HANDLE_SZ],
    };
    let mut mount_id: libc::c_int = 0;
    // SAFETY: `name_to_handle_at(dirfd, path, handle, mount_id, flags)`
    // reads `path` (a NUL-terminated string; empty, with AT_EMPTY_PATH, the
    // inode of `dirfd` itself; without AT_SYMLINK_FOLLOW a final symlink
    // is not followed), reads `handle->handle_bytes` and writes at most
    // that many bytes to `handle->f_handle` (the array's size) and the two
    // ints; every pointer is valid for the call's length.
    let r = unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut raw as *mut RawFileHandle,
            &mut mount_id as *mut libc::c_int,
            libc::AT_EMPTY_PATH,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let len = (raw.handle_bytes as usize).min(MAX_HANDLE_SZ);
    let handle = FileHandleBytes::new(raw.handle_type, &raw.f_handle[..len]);
    Ok((handle, mount_id))
}

/// Opens the inode `handle` names as an `O_PATH` descriptor, through
/// `mount` (any descriptor on the same mount).
///
/// # Errors
///
/// `ESTALE` for an inode that no longer exists, `EPERM` without
/// `CAP_DAC_READ_SEARCH` (a thread acting as a caller has dropped it: call
/// this before switching), or another errno of the call.
pub(crate) fn open_handle(mount: BorrowedFd<'_>, handle: &FileHandleBytes) -> io::Result<OwnedFd> {
    let bytes = handle.bytes();
    let mut raw = RawFileHandle {
        handle_bytes: bytes.len() as u32,
        handle_type: handle.kind(),
        f_handle: [0; MAX_HANDLE_SZ],
    };
    raw.f_handle[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: `open_by_handle_at(mount_fd, handle, flags)` reads
    // `handle_bytes` bytes of `f_handle` (at most the array's size: a
    // handle is never longer, `FileHandleBytes::new` keeps it so) and
    // returns a new descriptor or -1; the pointer is valid for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            mount.as_raw_fd(),
            &raw const raw,
            libc::O_PATH | libc::O_CLOEXEC,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(r).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the call returned a new descriptor, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_handle_reopens_its_inode_and_goes_stale_when_it_is_gone() {
        assert!(
            nix::unistd::geteuid().is_root(),
            "open_by_handle_at needs CAP_DAC_READ_SEARCH: run as root, as the server does"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let root = std::fs::File::open(dir.path()).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let (handle, _mount) = match handle_of(file.as_fd()) {
            Ok(h) => h,
            Err(e) => panic!(
                "{}: no file handle for a file in the temporary directory ({e}); \
                 point TMPDIR at a filesystem that gives them (ext4, xfs, btrfs, tmpfs)",
                dir.path().display()
            ),
        };
        let again = open_handle(root.as_fd(), &handle).unwrap();
        let (a, b) = (
            nix::sys::stat::fstat(&file).unwrap(),
            crate::host::stat_fd(again.as_fd()).unwrap(),
        );
        assert_eq!((a.st_dev, a.st_ino), (b.st_dev, b.st_ino));
        drop((file, again));
        std::fs::remove_file(&path).unwrap();
        // Evicted from the host's caches, the inode is gone for good.
        let _ = std::fs::write("/proc/sys/vm/drop_caches", "2\n");
        let stale = open_handle(root.as_fd(), &handle).unwrap_err();
        assert_eq!(stale.raw_os_error(), Some(libc::ESTALE));
    }
}
