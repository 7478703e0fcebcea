//! Mounting a connection: by `mount(2)` where the server is root, else
//! through `fusermount3` (set-user-ID root), which mounts it and hands its
//! `/dev/fuse` descriptor back over a socket named in `_FUSE_COMMFD`, as
//! libfuse's `fuse_mount_fusermount` takes it.

use std::io;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;

use nix::cmsg_space;
use nix::sys::socket::{
    recvmsg, socketpair, AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType,
};

/// The helper: fuse3's, or fuse2's where only that is installed.
fn helper() -> &'static str {
    let found = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    if !found("fusermount3") && found("fusermount") {
        "fusermount"
    } else {
        "fusermount3"
    }
}

/// Mounts a new FUSE connection at `mountpoint` with `options` (the
/// comma-separated `-o` list) through `fusermount3`, and returns its
/// device.
///
/// # Errors
///
/// No helper, its refusal (its message goes to standard error), or no
/// descriptor handed back.
pub(crate) fn fusermount(mountpoint: &Path, options: &str) -> io::Result<OwnedFd> {
    // The helper's end is inherited (no `SOCK_CLOEXEC`); ours is closed on
    // exec by hand below.
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::empty(),
    )?;
    nix::fcntl::fcntl(
        &ours,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )?;
    let mut child = Command::new(helper())
        .arg("-o")
        .arg(options)
        .arg("--")
        .arg(mountpoint)
        .env("_FUSE_COMMFD", theirs.as_raw_fd().to_string())
        .spawn()?;
    drop(theirs);
    let received = receive_fd(&ours);
    let status = child.wait()?;
    match received? {
        Some(fd) => Ok(fd),
        None => Err(io::Error::other(format!(
            "{} handed back no /dev/fuse descriptor ({status})",
            helper()
        ))),
    }
}

/// The descriptor sent over `socket` with one byte, if any (none once the
/// helper exits without sending one).
fn receive_fd(socket: &OwnedFd) -> io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = cmsg_space!(std::os::fd::RawFd);
    let msg = loop {
        match recvmsg::<()>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => break msg,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    };
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            let mut fds = fds.into_iter();
            let Some(first) = fds.next() else { continue };
            for extra in fds {
                // SAFETY: received with this message, owned by no one else.
                drop(unsafe { OwnedFd::from_raw_fd(extra) });
            }
            // SAFETY: as above: a descriptor this process just received,
            // owned by nothing else.
            return Ok(Some(unsafe { OwnedFd::from_raw_fd(first) }));
        }
    }
    Ok(None)
}

/// Unmounts, lazily, a mount `fusermount3` made.
///
/// # Errors
///
/// No helper, or its refusal.
pub(crate) fn fusermount_unmount(mountpoint: &Path) -> io::Result<()> {
    let status = Command::new(helper())
        .args(["-u", "-z", "--"])
        .arg(mountpoint)
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{} -u: {status}", helper())))
    }
}

/// Mounts a new connection at `at` with `mount(2)` (the server is root):
/// `default_permissions` always (the kernel checks permissions from the
/// attributes), `allow_other` if asked; returns its device.
///
/// # Errors
///
/// Opening `/dev/fuse`, or the mount's refusal.
pub(crate) fn mount_device(at: &Path, fsname: &str, allow_other: bool) -> io::Result<OwnedFd> {
    let dev = nix::fcntl::open(
        "/dev/fuse",
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    let mut data = format!(
        "fd={},rootmode=40000,user_id={},group_id={},default_permissions",
        dev.as_raw_fd(),
        nix::unistd::geteuid(),
        nix::unistd::getegid(),
    );
    if allow_other {
        data.push_str(",allow_other");
    }
    nix::mount::mount(
        Some(fsname),
        at,
        Some("fuse"),
        nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
        Some(data.as_str()),
    )?;
    Ok(dev)
}
