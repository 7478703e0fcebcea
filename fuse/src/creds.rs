//! Acting with the caller's credentials: for the length of a request, the
//! serving thread's filesystem uid and gid and its supplementary groups
//! become the caller's (as virtiofsd switches them), so the host checks
//! the caller's permissions and new files belong to the caller.
//!
//! All three are per-thread here: `setfsuid`/`setfsgid` are per-thread
//! system calls, and `setgroups` is issued as a raw system call, because
//! glibc's wrapper changes the groups of every thread of the process.

use std::fs;
use std::io;

use nix::unistd::{Gid, Uid};

/// The caller's credentials, in effect until dropped (then the server's
/// are restored). A no-op when the server is not root (it cannot switch)
/// or the caller is root.
pub(crate) struct AsCaller {
    switched: bool,
}

/// Whether this process may switch (it runs as root).
pub(crate) fn can_switch() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The supplementary groups of process `pid`, from `/proc/PID/status`.
pub(crate) fn groups_of(pid: u32) -> Vec<libc::gid_t> {
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// This thread's supplementary groups, by raw system call.
fn set_thread_groups(groups: &[libc::gid_t]) -> io::Result<()> {
    // SAFETY: `setgroups(size, list)` reads `size` gids from `list`, which
    // is a valid slice of that length (or empty with a dangling but
    // unread pointer).
    let r = unsafe { libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl AsCaller {
    /// Switches this thread to `uid`, `gid` and the groups of `pid`.
    ///
    /// # Errors
    ///
    /// The `setgroups` failure, if any (nothing switched then).
    pub(crate) fn enter(uid: u32, gid: u32, pid: u32, server_is_root: bool) -> io::Result<Self> {
        if !server_is_root || (uid == 0 && gid == 0) {
            return Ok(AsCaller { switched: false });
        }
        // Groups and gid first: switching the fsuid away from 0 drops the
        // filesystem capabilities (not CAP_SETGID, but the order keeps it
        // obvious).
        set_thread_groups(&groups_of(pid))?;
        nix::unistd::setfsgid(Gid::from_raw(gid));
        nix::unistd::setfsuid(Uid::from_raw(uid));
        Ok(AsCaller { switched: true })
    }
}

impl Drop for AsCaller {
    fn drop(&mut self) {
        if self.switched {
            nix::unistd::setfsuid(Uid::from_raw(0));
            nix::unistd::setfsgid(Gid::from_raw(0));
            // Root serves with no supplementary groups.
            let _ = set_thread_groups(&[]);
        }
    }
}
