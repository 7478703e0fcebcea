//! Mounting: the one set of mount options the binary, the tests and the
//! benchmark share.

use std::io;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nix::mount::{umount, umount2, MntFlags};

use crate::dev::{self, Serving};
use crate::fs::Passthrough;
use crate::root_alias;
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
    /// 0). Opens answered on a ring get kernel passthrough as any other.
    pub io_uring: bool,
}

impl Default for MountConfig {
    fn default() -> Self {
        MountConfig {
            fsname: "lockref-fuse".into(),
            threads: crate::options::DEFAULT_THREADS,
            allow_other: false,
            root_alias: true,
            io_uring: false,
        }
    }
}

impl MountConfig {
    /// The mount's options for `fusermount3` (an ordinary user's mount):
    /// the source name, `default_permissions` always (the kernel checks
    /// permissions from the attributes), `allow_other` if asked.
    fn helper_options(&self) -> String {
        let mut options = format!("fsname={},default_permissions", self.fsname);
        if self.allow_other {
            options.push_str(",allow_other");
        }
        options
    }

    /// The serving threads: [`threads`](Self::threads) and the one more
    /// that reads.
    fn device_threads(&self) -> usize {
        self.threads.max(1) + 1
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
    /// The serving threads and rings, until they are joined.
    connection: Option<Connection>,
    mountpoint: PathBuf,
    /// Where the server was mounted before it was shown through the root's
    /// alias: an empty directory, removed once the connection ends.
    private: Option<PathBuf>,
    /// Closes cached descriptors of files deleted on the host; stopped
    /// and joined when this is dropped (after the connection ends).
    _sweeper: Sweeper,
}

/// A mounted connection's serving threads and rings.
struct Connection {
    serving: Serving,
    /// The io_uring rings serving beside the `/dev/fuse` threads, if any.
    rings: Option<Rings>,
    /// Mounted by `fusermount3` (an ordinary user's server), which
    /// unmounts it too.
    by_helper: bool,
}

impl Connection {
    fn join(self) -> io::Result<()> {
        let joined = self.serving.join();
        if let Some(rings) = self.rings {
            rings.join();
        }
        joined
    }
}

impl Mounted {
    /// Unmounts the share and waits for the serving threads.
    ///
    /// # Errors
    ///
    /// The unmount's (the share is busy: then it is detached when this
    /// is dropped), or the serving threads'.
    pub fn umount_and_join(mut self) -> io::Result<()> {
        let by_helper = self.connection.as_ref().is_some_and(|c| c.by_helper);
        if by_helper {
            dev::fusermount_unmount(&self.mountpoint)?;
        } else {
            umount(&self.mountpoint)?;
        }
        self.join_connection()
    }

    /// Waits until the share is unmounted (by anyone) and the serving
    /// threads are done.
    ///
    /// # Errors
    ///
    /// The serving threads'.
    pub fn join(mut self) -> io::Result<()> {
        self.join_connection()
    }

    fn join_connection(&mut self) -> io::Result<()> {
        let joined = self
            .connection
            .take()
            .expect("a connection until it ends")
            .join();
        self.remove_private();
        joined
    }

    /// Requests answered through the io_uring rings so far (0 without
    /// them, [`MountConfig::io_uring`]).
    pub fn ring_requests(&self) -> u64 {
        self.rings().map_or(0, Rings::served)
    }

    /// The io_uring entries registered with the kernel (or being
    /// answered), and the entries made: equal while every registration went
    /// through ((0, 0) without rings).
    pub fn ring_entries(&self) -> (usize, usize) {
        self.rings().map_or((0, 0), Rings::entries)
    }

    fn rings(&self) -> Option<&Rings> {
        self.connection.as_ref()?.rings.as_ref()
    }

    /// The most threads that may ever serve this mount's requests: the
    /// `/dev/fuse` threads and, with rings, every queue's at their most.
    /// Each keeps the last caller's identity (`creds.rs`), so this bounds
    /// the switches back that callers left behind.
    pub fn most_serving_threads(&self) -> usize {
        self.connection.as_ref().map_or(0, |c| {
            c.serving.threads() + c.rings.as_ref().map_or(0, Rings::most_threads)
        })
    }

    fn remove_private(&mut self) {
        if let Some(private) = self.private.take() {
            let _ = std::fs::remove_dir(private);
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            // The mount (or the alias's bind) is the connection's last:
            // detached, it ends the connection once no one uses it, and
            // the serving threads and rings with it (not waited for here).
            if connection.by_helper {
                let _ = dev::fusermount_unmount(&self.mountpoint);
            } else {
                let _ = umount2(&self.mountpoint, MntFlags::MNT_DETACH);
            }
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
        let connection = start(fs, mountpoint, config)?;
        return Ok(Mounted {
            connection: Some(connection),
            mountpoint: mountpoint.to_owned(),
            private: None,
            _sweeper: sweeper,
        });
    }
    let private = root_alias::private_mountpoint()?;
    // Relaxed: set before the mount, whose requests come after.
    fs.root_alias.store(true, Ordering::Relaxed);
    // `INIT` is answered before `start` returns: the alias's inode, made
    // after, has its ACL cached.
    let connection = match start(fs, &private, config) {
        Ok(started) => started,
        Err(e) => {
            let _ = std::fs::remove_dir(&private);
            return Err(e);
        }
    };
    if let Err(e) = root_alias::show(&private, mountpoint) {
        // Nothing mounted is left; the serving threads end with the
        // connection.
        let _ = umount2(&private, MntFlags::MNT_DETACH);
        drop(connection);
        let _ = std::fs::remove_dir(&private);
        return Err(e);
    }
    Ok(Mounted {
        connection: Some(connection),
        mountpoint: mountpoint.to_owned(),
        private: Some(private),
        _sweeper: sweeper,
    })
}

/// Mounts `fs` at `at` and starts serving it, `INIT` answered: by a mount
/// of our own where the server is root, else by `fusermount3`; served by
/// the `/dev/fuse` threads and, with [`MountConfig::io_uring`], the rings
/// the kernel took at `INIT`.
fn start<T: InodeTable>(
    fs: Arc<Passthrough<T>>,
    at: &Path,
    config: &MountConfig,
) -> io::Result<Connection> {
    let by_helper = !fs.server_is_root;
    let dev = if by_helper {
        dev::fusermount(at, &config.helper_options())?
    } else {
        dev::mount_device(at, &config.fsname, config.allow_other)?
    };
    let unmount = || {
        if by_helper {
            let _ = dev::fusermount_unmount(at);
        } else {
            let _ = umount2(at, MntFlags::MNT_DETACH);
        }
    };
    // Relaxed: read by `INIT`, answered below on this thread.
    fs.rings_asked.store(config.io_uring, Ordering::Relaxed);
    let dev = Arc::new(dev);
    // Backings are registered on it, whichever transport an open takes.
    let _ = fs.device.set(dev.clone());
    dev::answer_init(&fs, &dev).inspect_err(|_| unmount())?;
    // Relaxed: stored while `INIT` was answered, on this thread.
    let rings = if !config.io_uring {
        None
    } else if fs.rings_offered.load(Ordering::Relaxed) {
        Rings::start(fs.clone(), &dev, config.threads.max(1))
            .inspect_err(|e| eprintln!("lockref-fuse: no io_uring rings ({e}): /dev/fuse serves"))
            .ok()
    } else {
        eprintln!("lockref-fuse: the kernel offers no FUSE over io_uring: /dev/fuse serves");
        None
    };
    let serving = Serving::start(&fs, &dev, config.device_threads()).inspect_err(|_| unmount())?;
    Ok(Connection {
        serving,
        rings,
        by_helper,
    })
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
