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
    /// Serving threads, each on its own `/dev/fuse` clone.
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
        config.n_threads = Some(self.threads.max(1));
        config.clone_fd = true;
        config
    }
}

/// Mounts `fs` at `mountpoint` and serves it on background threads until
/// the returned session is unmounted (`umount_and_join`) or dropped.
///
/// # Errors
///
/// The mount's failure (no `/dev/fuse`, no permission, a bad mount point).
pub fn spawn<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    mountpoint: &Path,
    config: &MountConfig,
) -> io::Result<fuser::BackgroundSession> {
    fuser::spawn_mount(Server(fs), mountpoint, &config.fuser())
}

/// Mounts `fs` at `mountpoint` and serves it on this thread until it is
/// unmounted.
///
/// # Errors
///
/// As [`spawn`].
pub fn serve<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    mountpoint: &Path,
    config: &MountConfig,
) -> io::Result<()> {
    fuser::mount(Server(fs), mountpoint, &config.fuser())
}
