//! Acting with the caller's credentials: for the length of a request, the
//! serving thread's filesystem uid and gid and its supplementary groups
//! become the caller's (as virtiofsd switches them), so the host checks
//! the caller's permissions and new files belong to the caller.
//!
//! All three are per-thread here: `setfsuid`/`setfsgid` are per-thread
//! system calls, and `setgroups` is issued as a raw system call, because
//! glibc's wrapper changes the groups of every thread of the process.
//!
//! Each is switched only when it changes: a thread keeps the last
//! caller's identity after the request ([`AsCaller`] ends the region in
//! which host calls act for the caller, not the identity), so a run of
//! requests from one user costs no system call at all. Measured on the
//! 2-CPU VM, the switch to the caller and back on every request cost an
//! ordinary user's open+close 15-20 us of its 35-55 us, far more than the
//! two system calls themselves take in a loop (1.5 us). Where the rest
//! goes was not pinned down (each switch makes the thread new credentials,
//! which the kernel frees after an RCU grace period, on vCPUs that are
//! mostly idle); that it goes with the switches was measured.
//!
//! What a thread's identity is outside a caller's region, and why that is
//! safe:
//! - the server's own work that needs root's rights calls [`as_server`]
//!   first, which switches the filesystem uid back to 0 if it is not:
//!   reopening a file handle (`open_by_handle_at` takes
//!   `CAP_DAC_READ_SEARCH`, which a filesystem uid other than 0 drops);
//!   a passthrough backing is registered under its own identity
//!   ([`as_backing_owner`]);
//! - every other host call outside a region checks no credentials: reads,
//!   writes' syncs, `getdents`, `fstat`, `fstatvfs`, `close`,
//!   `name_to_handle_at`, the reads of `system.*` attributes (ACLs), and
//!   reads of `/proc/PID/status` (world-readable; with `hidepid` the
//!   thread keeps `CAP_SYS_PTRACE`, which no filesystem uid drops);
//! - a thread at another user's filesystem uid never has more rights than
//!   at 0: the kernel drops the filesystem capabilities with it, and
//!   `CAP_SYS_RESOURCE` is gone for good (below). So a call left out of
//!   the list above could fail, never pass where it should not, and the
//!   server makes nothing on its own account, so nothing is made with a
//!   stale owner.
//!
//! [`as_server`] inside a caller's region is refused (`EPERM`, as the
//! reopen itself would be refused as the caller): it would give the rest
//! of the region root's rights. So a request reopens its inodes before it
//! enters its caller's region ([`crate::fs::Passthrough::inode`]).
//!
//! The groups are read from `/proc/PID/status` once per process and
//! thread for [`GROUPS_TTL`], not per request.
//!
//! A serving thread also gives up `CAP_SYS_RESOURCE` before its first
//! request (effective and permitted, so for good): with it, every write
//! made as any caller could use the blocks a filesystem keeps for root
//! (ext4's reserved blocks) and pass quota limits. The server needs it
//! for nothing: its descriptor limit is raised to the hard limit, which
//! takes no capability. A write is made as its file's opener (see
//! `handles::Caller`), so a mapped file's pages, which the kernel writes
//! back in requests of uid 0, meet the opener's limits too.
//!
//! Why a cached list of groups is safe: the mount always has
//! `default_permissions`, so the kernel checks every request against the
//! caller's groups of the moment before the server sees it; the host's
//! check under the caller's credentials is the second one, for what the
//! kernel's cached attributes do not show, which they may also miss for
//! the attribute timeout. A process that leaves a group, or a new process
//! with a reused pid, is checked with the old list by the host for at most
//! [`GROUPS_TTL`], and by the kernel with its own list at once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use caps::{CapSet, Capability};
use nix::unistd::{Gid, Uid};

/// How long a serving thread trusts the groups it read for a process.
pub(crate) const GROUPS_TTL: Duration = Duration::from_secs(1);

/// Processes whose groups a thread remembers; past this, it forgets all.
const GROUPS_CACHED: usize = 256;

/// What the credential switches cost a server: counted so tests can hold
/// the per-request cost to its bound.
#[derive(Debug, Default)]
pub(crate) struct CredCounts {
    /// `setfsuid`, `setfsgid` and `setgroups` calls.
    pub(crate) switches: AtomicU64,
    /// Reads of a process's groups from `/proc`.
    pub(crate) group_reads: AtomicU64,
}

impl CredCounts {
    fn count(counter: &AtomicU64, n: u64) {
        // Relaxed: a counter for tests and reports.
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// A serving thread's credentials, and the groups it read.
struct ThreadCreds {
    /// The thread's filesystem uid.
    fsuid: u32,
    /// Whether the thread is inside a caller's region (an [`AsCaller`]
    /// lives).
    in_region: bool,
    /// The thread's filesystem gid.
    fsgid: u32,
    /// The thread's supplementary groups.
    groups: Vec<libc::gid_t>,
    /// Groups read per process, with when.
    read: HashMap<u32, (Instant, Vec<libc::gid_t>)>,
    /// Whether the thread gave up `CAP_SYS_RESOURCE`.
    without_resource_cap: bool,
}

thread_local! {
    static THREAD: RefCell<ThreadCreds> = RefCell::new(ThreadCreds {
        fsuid: 0,
        in_region: false,
        fsgid: 0,
        groups: Vec::new(),
        read: HashMap::new(),
        without_resource_cap: false,
    });
}

/// Who a request is for: its uid, gid and pid, as the kernel sent them;
/// owned, so that a request waiting its user's turn
/// ([`crate::shares`]) keeps it. A handle keeps its opener's: the kernel
/// sends the writes of a mapped file's dirty pages in requests of its own
/// (uid 0 then), so a write is made as the opener, whose limits (the
/// blocks a filesystem keeps for root) it must meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caller {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) pid: u32,
}

/// A caller's region: the host calls made while it lives act for the
/// caller. Its drop ends the region, not the identity: the thread keeps
/// the caller's until another is needed (see the module's text). Nothing
/// is switched when the server is not root (it cannot switch); a caller
/// of uid 0 gets filesystem uid 0 and its gid (new files are the caller's
/// group), and capabilities pass every check.
pub(crate) struct AsCaller {
    /// The region is this thread's: the guard stays on it.
    _not_send: std::marker::PhantomData<*const ()>,
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

impl ThreadCreds {
    /// Gives up `CAP_SYS_RESOURCE` for this thread, once.
    fn drop_resource_cap(&mut self) -> io::Result<()> {
        if self.without_resource_cap {
            return Ok(());
        }
        for set in [CapSet::Effective, CapSet::Permitted] {
            caps::drop(None, set, Capability::CAP_SYS_RESOURCE).map_err(io::Error::other)?;
        }
        self.without_resource_cap = true;
        Ok(())
    }

    /// Switches to the groups of `pid` if the thread's differ: read again
    /// if this thread's copy is older than [`GROUPS_TTL`], compared in
    /// place (no copy unless they differ).
    fn switch_to_groups_of(&mut self, pid: u32, counts: &CredCounts) -> io::Result<()> {
        let now = Instant::now();
        let fresh =
            matches!(self.read.get(&pid), Some((at, _)) if now.duration_since(*at) < GROUPS_TTL);
        if !fresh {
            if self.read.len() >= GROUPS_CACHED {
                self.read.clear();
            }
            CredCounts::count(&counts.group_reads, 1);
            self.read.insert(pid, (now, groups_of(pid)));
        }
        let (_, groups) = &self.read[&pid];
        if *groups != self.groups {
            CredCounts::count(&counts.switches, 1);
            set_thread_groups(groups)?;
            self.groups.clone_from(groups);
        }
        Ok(())
    }

    /// Switches to no supplementary groups if the thread has some.
    fn switch_to_no_groups(&mut self, counts: &CredCounts) -> io::Result<()> {
        if !self.groups.is_empty() {
            CredCounts::count(&counts.switches, 1);
            set_thread_groups(&[])?;
            self.groups.clear();
        }
        Ok(())
    }

    /// Switches the filesystem uid to `uid` if the thread's differs.
    fn switch_fsuid(&mut self, uid: u32, counts: &CredCounts) {
        if uid != self.fsuid {
            CredCounts::count(&counts.switches, 1);
            nix::unistd::setfsuid(Uid::from_raw(uid));
            self.fsuid = uid;
        }
    }

    /// Switches the filesystem gid to `gid` if the thread's differs.
    fn switch_fsgid(&mut self, gid: u32, counts: &CredCounts) {
        if gid != self.fsgid {
            CredCounts::count(&counts.switches, 1);
            nix::unistd::setfsgid(Gid::from_raw(gid));
            self.fsgid = gid;
        }
    }
}

/// The filesystem uid and gid a passthrough backing is registered under
/// (`backing.rs`): the overflow id, "nobody", which no filesystem keeps
/// blocks for.
pub(crate) const BACKING_OWNER: u32 = 65534;

/// Switches this thread's filesystem uid back to 0, if it is not, for the
/// server's own work that needs root's rights (reopening a file handle).
/// The gid and groups stay: with filesystem uid 0 the server's checks
/// pass by capability whatever they are. A no-op when the server is not
/// root (it never switched).
///
/// # Errors
///
/// `EPERM` inside a caller's region, where root's rights would serve the
/// rest of the region: the request must do this work before it enters.
pub(crate) fn as_server(server_is_root: bool, counts: &CredCounts) -> io::Result<()> {
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        if t.in_region {
            debug_assert!(
                false,
                "the server's own rights asked for in a caller's region"
            );
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        if server_is_root {
            t.switch_fsuid(0, counts);
        }
        Ok(())
    })
}

/// Runs `register`, the registration of a passthrough backing, as its
/// owner: filesystem uid and gid [`BACKING_OWNER`], no supplementary
/// groups, and so none of the capabilities over files (the kernel drops
/// them from a thread whose filesystem uid leaves 0; `CAP_SYS_ADMIN`,
/// which the registration takes, stays, and `CAP_SYS_RESOURCE` is gone
/// already). The kernel keeps these credentials with the backing and
/// reads and writes the host file with them, for every caller of the
/// inode: so a write through the backing meets an ordinary user's limits
/// (no blocks kept for root: ext4 gives them to its `resuid`, 0 by
/// default, to its `resgid` and to `CAP_SYS_RESOURCE`) and clears a
/// set-id bit as a user's write does (no `CAP_FSETID`). The thread keeps
/// this identity until the next caller's differs, as after a caller's
/// region. Only a server that is root registers backings: one that is not
/// does not ask for passthrough (`server.rs`).
///
/// # Errors
///
/// The registration's, or the `setgroups` failure (then nothing is
/// registered: registered as the server, its writes would have root's
/// limits).
pub(crate) fn as_backing_owner<B>(
    counts: &CredCounts,
    register: impl FnOnce() -> io::Result<B>,
) -> io::Result<B> {
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        debug_assert!(!t.in_region, "a backing is the server's, not a caller's");
        t.drop_resource_cap()?;
        t.switch_to_no_groups(counts)?;
        t.switch_fsgid(BACKING_OWNER, counts);
        t.switch_fsuid(BACKING_OWNER, counts);
        Ok::<_, io::Error>(())
    })?;
    register()
}

impl AsCaller {
    /// Enters a region for `uid`, `gid` and the groups of `pid`, switching
    /// what of them this thread does not have yet.
    ///
    /// # Errors
    ///
    /// The `setgroups` failure, if any (the filesystem uid not switched
    /// then, and no region entered).
    pub(crate) fn enter(
        uid: u32,
        gid: u32,
        pid: u32,
        server_is_root: bool,
        counts: &CredCounts,
    ) -> io::Result<Self> {
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            debug_assert!(!t.in_region, "caller's regions do not nest");
            if server_is_root {
                t.drop_resource_cap()?;
                // Groups and gid first: a switch of the filesystem uid
                // away from 0 drops the capabilities over files, none of
                // which these need (`setgroups` and `setfsgid` take
                // `CAP_SETGID`). Root's requests keep the thread's
                // groups: with
                // filesystem uid 0 the host's checks pass by capability
                // whatever they are.
                if uid != 0 {
                    t.switch_to_groups_of(pid, counts)?;
                }
                t.switch_fsgid(gid, counts);
                t.switch_fsuid(uid, counts);
            }
            t.in_region = true;
            Ok::<_, io::Error>(())
        })?;
        // Made only once the region is entered: its drop ends it.
        Ok(AsCaller {
            _not_send: std::marker::PhantomData,
        })
    }
}

impl Drop for AsCaller {
    fn drop(&mut self) {
        // The region ends; the identity stays until another is needed.
        THREAD.with(|t| t.borrow_mut().in_region = false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outside a caller's region the server's own rights are there to
    /// take (a server that is not root has nothing to switch).
    #[test]
    fn the_servers_rights_are_taken_outside_a_callers_region() {
        let counts = CredCounts::default();
        let region = AsCaller::enter(1000, 1000, std::process::id(), false, &counts).unwrap();
        drop(region);
        assert!(as_server(false, &counts).is_ok());
        assert_eq!(counts.switches.load(Ordering::Relaxed), 0);
    }

    /// Inside one they are refused: the rest of the region would act with
    /// them. A debug build stops at once; a release build answers `EPERM`.
    #[test]
    #[cfg_attr(debug_assertions, should_panic(expected = "in a caller's region"))]
    fn the_servers_rights_are_refused_inside_a_callers_region() {
        let counts = CredCounts::default();
        let _region = AsCaller::enter(1000, 1000, std::process::id(), false, &counts).unwrap();
        let refused = as_server(false, &counts).unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(libc::EPERM));
    }
}
