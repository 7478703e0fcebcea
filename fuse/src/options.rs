//! How the server is configured ([`Options`]) and how its inode table
//! names host inodes ([`HostInodes`]): by file handle into a bounded
//! descriptor cache, or by a descriptor held per inode.

use std::time::Duration;

use crate::handles::HandleLimits;

/// Serving threads unless asked otherwise
/// ([`MountConfig::threads`](crate::MountConfig::threads)): the peers'
/// count (libfuse's `passthrough_hp` and fuse-backend-rs serve on four).
pub const DEFAULT_THREADS: usize = 4;

/// How long the kernel may trust an entry or attributes without asking,
/// unless [`Options::ttl`] says otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);

/// How the inode table names host inodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HostInodes {
    /// By file handle (`name_to_handle_at`), reopened into a bounded cache
    /// of descriptors when a request needs one: no descriptor per inode
    /// the kernel remembers. Needs a filesystem that gives handles and a
    /// server with `CAP_DAC_READ_SEARCH` (root).
    #[default]
    ByFileHandle,
    /// By an `O_PATH` descriptor held while the kernel remembers the inode:
    /// for a filesystem without file handles, or a server that is not
    /// root. A user with many files can exhaust the server's descriptors.
    ByDescriptor,
}

/// How to serve: [`Passthrough::with_options`](crate::Passthrough::with_options).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// How long the kernel may trust entries and attributes.
    pub ttl: Duration,
    /// How host inodes are named.
    pub host_inodes: HostInodes,
    /// The most reopened descriptors kept ([`HostInodes::ByFileHandle`]),
    /// held to three quarters of the hard limit on open descriptors less
    /// 64 (logged when it is); `None`: half the hard limit (which the
    /// mount raises the soft limit to), at most 65,536.
    pub descriptor_budget: Option<usize>,
    /// The most open files and directories one uid may hold (each holds a
    /// host descriptor; past it, `EMFILE`); `None`: an eighth of the
    /// handles, which are what the hard limit on descriptors leaves beside
    /// the descriptor budget and 64 spare (past them, `ENFILE`), at least 16.
    pub handles_per_user: Option<usize>,
    /// Whether open files are read and written by the kernel from the host
    /// file itself (FUSE passthrough, Linux 6.9+), where the kernel offers
    /// it (the server serves `READ` and `WRITE` where it does not, or when
    /// the server is not root). On by default. The kernel reads and writes
    /// with the credentials the backing was registered with, an ordinary
    /// user's (uid and gid 65534, no capability over files), so writes meet an
    /// ordinary user's limits (none of the blocks ext4 keeps for root, a
    /// set-id bit cleared), root's writes included.
    pub passthrough: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ttl: DEFAULT_TTL,
            host_inodes: HostInodes::default(),
            descriptor_budget: None,
            handles_per_user: None,
            passthrough: true,
        }
    }
}

/// The hard limit on open descriptors (which the mount raises the soft
/// one to).
fn descriptor_limit() -> usize {
    let hard = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(1024, |(_, hard)| hard);
    usize::try_from(hard).unwrap_or(usize::MAX)
}

/// The largest descriptor budget under a hard limit of `limit`
/// descriptors: what a quarter of it (for open handles) and 64 spare
/// leave, at least 16. A larger one would let the cache of reopened
/// descriptors take every descriptor, and everyone's next open get
/// `EMFILE` for as long as the cache keeps them.
pub(crate) fn largest_budget(limit: usize) -> usize {
    (limit - limit / 4).saturating_sub(64).max(16)
}

impl Options {
    /// The descriptor budget: as given, held to what the hard limit
    /// leaves beside a quarter of it and 64 spare ([`largest_budget`]);
    /// or half the hard limit, at most 65,536.
    pub(crate) fn descriptor_budget(&self) -> usize {
        let limit = descriptor_limit();
        match self.descriptor_budget {
            Some(given) => given.min(largest_budget(limit)),
            None => (limit / 2).clamp(16, 1 << 16),
        }
    }

    /// The line to log where the budget given was held down: it would
    /// have let the cache take every descriptor the process may open.
    pub(crate) fn budget_clamped(&self) -> Option<String> {
        let given = self.descriptor_budget?;
        let used = self.descriptor_budget();
        (used < given).then(|| {
            format!(
                "lockref-fuse: a descriptor budget of {given} leaves too few of the {} \
                 descriptors this process may open (the hard limit) for open files and \
                 the server's own; using {used}",
                descriptor_limit()
            )
        })
    }

    /// What handles may hold: the hard limit less the descriptor budget
    /// and 64 spare (at least 64), and a share per uid.
    pub(crate) fn handle_limits(&self) -> HandleLimits {
        let total = descriptor_limit()
            .saturating_sub(self.descriptor_budget())
            .saturating_sub(64)
            .max(64);
        HandleLimits {
            total,
            per_user: self.handles_per_user.unwrap_or((total / 8).max(16)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_past_the_limit_is_held_below_it_and_said() {
        let limit = descriptor_limit();
        let options = Options {
            descriptor_budget: Some(limit * 2),
            ..Options::default()
        };
        let used = options.descriptor_budget();
        assert_eq!(used, largest_budget(limit));
        assert!(used + 64 <= limit, "{used} of {limit}");
        assert!(options.handle_limits().total >= limit / 4 - 64);
        let line = options.budget_clamped().expect("said");
        assert!(line.contains(&format!("using {used}")), "{line}");
        let fitting = Options {
            descriptor_budget: Some(16),
            ..Options::default()
        };
        assert_eq!(fitting.descriptor_budget(), 16);
        assert_eq!(fitting.budget_clamped(), None);
        assert_eq!(largest_budget(1024), 704);
        assert_eq!(largest_budget(20), 16, "at least 16");
    }
}
