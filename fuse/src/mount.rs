//! Mounting: the one set of mount options the binary, the tests and the
//! benchmark share.

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::fs::Passthrough;
use crate::server::Server;
use crate::table::InodeTable;

/// How to mount.
#[derive(Clone, Debug)]
pub struct MountConfig {
    /// The source name in `/proc/mounts`.
    pub fsname: String,
    /// Serving threads: the most requests served at once for one user.
    /// The server reads on one thread more (each thread on its own
    /// `/dev/fuse` clone), left for the requests of other users within
    /// their share of the serving threads (`shares.rs`), so that one
    /// user's requests, however slow, never hold them all.
    pub threads: usize,
    /// Let users other than the mounter in (`allow_other`).
    pub allow_other: bool,
}

impl Default for MountConfig {
    fn default() -> Self {
        MountConfig {
            fsname: "lockref-fuse".into(),
            threads: 4,
            allow_other: false,
        }
    }
}

impl MountConfig {
    /// fuser's configuration: `default_permissions` always (the kernel
    /// checks permissions from the attributes), `allow_other` if asked.
    pub fn fuser(&self) -> fuser::Config {
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName(self.fsname.clone()),
            fuser::MountOption::DefaultPermissions,
        ];
        if self.allow_other {
            config.acl = fuser::SessionACL::All;
        }
        config.n_threads = Some(self.threads.max(1) + 1);
        config.clone_fd = true;
        config
    }
}

/// Raises this process's soft limit on open descriptors to its hard limit
/// and returns the limit now in force. The server holds a descriptor per
/// inode the kernel remembers and per open handle, so the default soft
/// limit (often 1,024) is the first thing a user with many files exhausts,
/// failing every other user's requests with `EMFILE`; the hard limit is
/// what the administrator allows. Called by [`spawn`] and [`serve`].
///
/// # Errors
///
/// The host's refusal to read or set the limit.
pub fn raise_descriptor_limit() -> io::Result<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(io::Error::from)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(io::Error::from)?;
    }
    Ok(hard)
}

/// Mounts `fs` at `mountpoint` and serves it on background threads until
/// the returned session is unmounted (`umount_and_join`) or dropped. The
/// descriptor limit is raised first ([`raise_descriptor_limit`]).
///
/// # Errors
///
/// The mount's failure (no `/dev/fuse`, no permission, a bad mount point).
pub fn spawn<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    mountpoint: &Path,
    config: &MountConfig,
) -> io::Result<fuser::BackgroundSession> {
    raise_descriptor_limit()?;
    fs.shares.set_threads(config.threads);
    fuser::spawn_mount(Server(fs), mountpoint, &config.fuser())
}

/// Mounts `fs` at `mountpoint` and serves it on this thread until it is
/// unmounted. The descriptor limit is raised first
/// ([`raise_descriptor_limit`]).
///
/// # Errors
///
/// As [`spawn`].
pub fn serve<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    mountpoint: &Path,
    config: &MountConfig,
) -> io::Result<()> {
    raise_descriptor_limit()?;
    fs.shares.set_threads(config.threads);
    fuser::mount(Server(fs), mountpoint, &config.fuser())
}
