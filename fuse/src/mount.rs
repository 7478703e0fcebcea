//! Mounting: the one set of mount options the binary, the tests and the
//! benchmark share.

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nix::mount::{umount, umount2, MntFlags};

use crate::fs::Passthrough;
use crate::root_alias;
use crate::server::Server;
use crate::sweep::Sweeper;
use crate::table::InodeTable;
use crate::uring::Rings;

/// How to mount.
#[derive(Clone, Debug)]
pub struct MountConfig {
    /// The source name in `/proc/mounts`.
    pub fsname: String,
    /// Serving threads: the most requests served at once for one user.
    /// The server reads on one thread more (each thread on its own
    /// `/dev/fuse` clone), left for the requests of other users within
    /// their share of the serving threads (`shares/`), so that one
    /// user's requests, however slow, never hold them all.
    pub threads: usize,
    /// Let users other than the mounter in (`allow_other`).
    pub allow_other: bool,
    /// Show the share through an alias of the FUSE root, whose ACL the
    /// kernel caches (`root_alias.rs`), where the server may (it is
    /// root); otherwise, or if false, the mount point is the FUSE root,
    /// whose ACL the kernel reads from the server on every path walk
    /// through it by a caller other than its owner.
    pub root_alias: bool,
    /// Serve requests through FUSE over io_uring (`uring/`, Linux 6.14+
    /// with `fuse.enable_uring=1`): a ring per CPU, each request answered
    /// on the CPU that made it. Takes a server that is root (it mounts
    /// the device itself); where the kernel offers no io_uring,
    /// `/dev/fuse` serves as without it ([`Mounted::ring_requests`] stays
    /// 0). Kernel passthrough is not registered for opens answered on a
    /// ring.
    pub io_uring: bool,
}

impl Default for MountConfig {
    fn default() -> Self {
        MountConfig {
            fsname: "lockref-fuse".into(),
            threads: 4,
            allow_other: false,
            root_alias: true,
            io_uring: false,
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

/// Grows this process's descriptor table, once, to hold descriptor
/// number `highest` (at most the soft limit less one), and returns the
/// number it holds now.
///
/// The kernel doubles a process's descriptor table when an open needs a
/// number past its end, and in a process of several threads it waits for
/// an RCU grace period before freeing the old table
/// (`expand_fdtable`'s `synchronize_rcu`): 10-15 ms here, in which the
/// serving thread that opened (on io_uring, its CPU's whole ring) answers
/// nothing. A server whose remembered inodes keep their descriptors
/// crosses each power of two once, in the middle of some listing or
/// lookup storm; [`spawn`] calls this before the first request instead,
/// for the descriptor budget and 1,024 more (open handles). The cost is
/// the table's: 8 bytes a descriptor number (128 KiB for the 10,000 of a
/// budget under a hard limit of 20,000; 1 MiB at the largest budget).
///
/// # Errors
///
/// The host's refusal to read the limit or to duplicate a descriptor.
pub fn reserve_descriptor_table(highest: usize) -> io::Result<usize> {
    use nix::sys::resource::{getrlimit, Resource};
    let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).map_err(io::Error::from)?;
    let soft = usize::try_from(soft).unwrap_or(usize::MAX);
    let highest = highest.min(soft.saturating_sub(1));
    let anchor = std::fs::File::open("/")?;
    // `F_DUPFD_CLOEXEC` takes the lowest free number at or past `highest`,
    // growing the table to hold it; the duplicate is closed at once (the
    // table is never shrunk).
    let duplicate =
        rustix::io::fcntl_dupfd_cloexec(&anchor, i32::try_from(highest).unwrap_or(i32::MAX))?;
    drop(duplicate);
    Ok(highest)
}

/// A mounted share, served on background threads until it is unmounted
/// ([`Mounted::umount_and_join`], or by anyone: [`Mounted::join`]) or
/// dropped (then detached).
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    /// The io_uring rings serving beside fuser's threads, if any.
    rings: Option<Rings>,
    /// Whether the device was mounted here (for the rings), not by fuser:
    /// then fuser's session does not unmount it.
    own_mount: bool,
    mountpoint: PathBuf,
    /// Where the server was mounted before it was shown through the root's
    /// alias: an empty directory, removed once the session ends.
    private: Option<PathBuf>,
    /// fuser's threads: the serving threads and the one more that reads.
    fuser_threads: usize,
    /// Closes cached descriptors of files deleted on the host; stopped
    /// and joined when this is dropped (after the session ends).
    _sweeper: Sweeper,
}

impl Mounted {
    /// Unmounts the share and waits for the serving threads.
    ///
    /// # Errors
    ///
    /// The unmount's (the share is busy: then it is detached when this
    /// is dropped), or the serving threads'.
    pub fn umount_and_join(mut self) -> io::Result<()> {
        if self.private.is_none() && !self.own_mount {
            let session = self.session.take().expect("a session until it ends");
            return session.umount_and_join();
        }
        umount(&self.mountpoint)?;
        self.join_session()
    }

    /// Waits until the share is unmounted (by anyone) and the serving
    /// threads are done.
    ///
    /// # Errors
    ///
    /// The serving threads'.
    pub fn join(mut self) -> io::Result<()> {
        self.join_session()
    }

    fn join_session(&mut self) -> io::Result<()> {
        let session = self.session.take().expect("a session until it ends");
        // With the alias, fuser's own unmount of the private directory at
        // its end finds nothing mounted there (`EINVAL`, logged).
        let joined = session.join();
        if let Some(rings) = self.rings.take() {
            rings.join();
        }
        self.remove_private();
        joined
    }

    /// Requests answered through the io_uring rings so far (0 without
    /// them, [`MountConfig::io_uring`]).
    pub fn ring_requests(&self) -> u64 {
        self.rings.as_ref().map_or(0, Rings::served)
    }

    /// The io_uring entries registered with the kernel (or being
    /// answered), and the entries made: equal while every registration went
    /// through ((0, 0) without rings).
    pub fn ring_entries(&self) -> (usize, usize) {
        self.rings.as_ref().map_or((0, 0), Rings::entries)
    }

    /// The most threads that may ever serve this mount's requests: fuser's
    /// and, with rings, every queue's at their most. Each keeps the last
    /// caller's identity (`creds.rs`), so this bounds the switches back
    /// that callers left behind.
    pub fn most_serving_threads(&self) -> usize {
        self.fuser_threads + self.rings.as_ref().map_or(0, Rings::most_threads)
    }

    fn remove_private(&mut self) {
        if let Some(private) = self.private.take() {
            let _ = std::fs::remove_dir(private);
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            if self.private.is_some() || self.own_mount {
                // The bind (or our own mount) is the connection's last
                // mount: detached, it ends the connection once no one uses
                // it.
                let _ = umount2(&self.mountpoint, MntFlags::MNT_DETACH);
            }
            // Otherwise fuser's session unmounts on drop.
            drop(session);
            // The rings end with the connection; not waited for here.
            drop(self.rings.take());
        }
        self.remove_private();
    }
}

/// Mounts `fs` at `mountpoint` and serves it on background threads until
/// it is unmounted. The descriptor limit is raised first
/// ([`raise_descriptor_limit`]) and the descriptor table grown to the
/// budget ([`reserve_descriptor_table`]). With [`MountConfig::root_alias`] and a
/// server that is root, the mount point shows the share through the
/// root's alias (`root_alias.rs`).
///
/// # Errors
///
/// The mount's failure (no `/dev/fuse`, no permission, a bad mount point).
pub fn spawn<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    mountpoint: &Path,
    config: &MountConfig,
) -> io::Result<Mounted> {
    raise_descriptor_limit()?;
    reserve_descriptor_table(fs.descriptors.budget().saturating_add(1024))?;
    let sweeper = Sweeper::start(Arc::downgrade(&fs.descriptors))?;
    fs.shares.set_threads(config.threads);
    if config.io_uring && !fs.server_is_root {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "io_uring: the server mounts the device itself, which takes root",
        ));
    }
    if !(config.root_alias && fs.server_is_root) {
        let (session, rings) = start(fs, mountpoint, config)?;
        return Ok(Mounted {
            session: Some(session),
            rings,
            own_mount: config.io_uring,
            mountpoint: mountpoint.to_owned(),
            private: None,
            fuser_threads: config.threads.max(1) + 1,
            _sweeper: sweeper,
        });
    }
    let private = root_alias::private_mountpoint()?;
    // Relaxed: set before the mount, whose requests come after.
    fs.root_alias.store(true, Ordering::Relaxed);
    // fuser's mount answers `INIT` before it returns: the alias's inode,
    // made after, has its ACL cached.
    let (session, rings) = match start(fs, &private, config) {
        Ok(started) => started,
        Err(e) => {
            let _ = std::fs::remove_dir(&private);
            return Err(e);
        }
    };
    if let Err(e) = root_alias::show(&private, mountpoint) {
        // Nothing mounted is left; the serving threads end with the
        // connection.
        if config.io_uring {
            let _ = umount2(&private, MntFlags::MNT_DETACH);
        }
        drop(session);
        drop(rings);
        let _ = std::fs::remove_dir(&private);
        return Err(e);
    }
    Ok(Mounted {
        session: Some(session),
        rings,
        own_mount: config.io_uring,
        mountpoint: mountpoint.to_owned(),
        private: Some(private),
        fuser_threads: config.threads.max(1) + 1,
        _sweeper: sweeper,
    })
}

/// Mounts `fs` at `at` and starts serving it, `INIT` answered: by fuser's
/// mount, or with [`MountConfig::io_uring`] by a mount of our own device
/// (whose descriptor the rings need), served by fuser's threads and the
/// rings the kernel took at `INIT`.
fn start<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    at: &Path,
    config: &MountConfig,
) -> io::Result<(fuser::BackgroundSession, Option<Rings>)> {
    if !config.io_uring {
        return Ok((fuser::spawn_mount(Server(fs), at, &config.fuser())?, None));
    }
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
    if config.allow_other {
        data.push_str(",allow_other");
    }
    nix::mount::mount(
        Some(config.fsname.as_str()),
        at,
        Some("fuse"),
        nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
        Some(data.as_str()),
    )?;
    // Relaxed: set before `INIT`, which fuser answers on this thread.
    fs.rings_asked.store(true, Ordering::Relaxed);
    let dev = Arc::new(dev);
    // Backings are registered on it, whichever transport an open takes.
    let _ = fs.device.set(dev.clone());
    let fuser_config = config.fuser();
    let acl = fuser_config.acl;
    let session = fuser::Session::from_fd(Server(fs.clone()), dev.try_clone()?, acl, fuser_config)
        .inspect_err(|_| {
            let _ = umount2(at, MntFlags::MNT_DETACH);
        })?;
    // Relaxed: stored while `INIT` was answered, on this thread.
    let rings = if fs.rings_offered.load(Ordering::Relaxed) {
        Rings::start(fs, &dev, config.threads.max(1))
            .inspect_err(|e| eprintln!("lockref-fuse: no io_uring rings ({e}): /dev/fuse serves"))
            .ok()
    } else {
        eprintln!("lockref-fuse: the kernel offers no FUSE over io_uring: /dev/fuse serves");
        None
    };
    match session.spawn() {
        Ok(session) => Ok((session, rings)),
        Err(e) => {
            let _ = umount2(at, MntFlags::MNT_DETACH);
            Err(e)
        }
    }
}

/// Mounts `fs` at `mountpoint` as [`spawn`] does and serves it until it
/// is unmounted.
///
/// # Errors
///
/// As [`spawn`], and the serving threads'.
pub fn serve<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    mountpoint: &Path,
    config: &MountConfig,
) -> io::Result<()> {
    spawn(fs, mountpoint, config)?.join()
}
