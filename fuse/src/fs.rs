//! [`Passthrough`]: the filesystem, mirroring a host directory through an
//! [`InodeTable`].
//!
//! Every request names inodes by node id; each is looked up in the table
//! (a reference held for the request) and acted on through an `O_PATH`
//! descriptor of its host inode (held, or reopened from its file handle
//! into the bounded cache: [`Live`]) with `*at` system calls on checked
//! single names, so nothing
//! outside the mirrored directory is reachable. Requests run with the
//! caller's filesystem credentials (`creds.rs`). Requests reach these
//! operations through the one dispatcher (`dispatch.rs`), from either
//! transport (`dev/`, `uring/`).

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fuser::{Errno, FileAttr, Generation, INodeNo};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::backing::Backings;
use crate::creds::{self, AsCaller, Caller, CredCounts};
use crate::descriptors::Descriptors;
use crate::file_handle;
use crate::handles::Handles;
use crate::host;
use crate::host_inode::{DescriptorSlot, HostInode};
use crate::inode_numbers::InodeNumbers;
use crate::live::Live;
use crate::mounts::{Mounts, Reopens};
use crate::options::{HostInodes, Options, DEFAULT_THREADS, DEFAULT_TTL};
use crate::root_alias;
use crate::shares::Shares;
use crate::table::InodeTable;
use crate::trim;

/// The generation of every entry: a node id the table gives again names a
/// new inode only after the kernel forgot the old one (`table.rs`), so
/// the pair is unique while the kernel may hold it without one. (An NFS
/// export of the mount would need generations: not supported.)
pub(crate) const GENERATION: Generation = Generation(0);

pub(crate) use crate::wire::Entry;

/// The filesystem's state, shared by every serving thread (and kept by
/// tests, to look at the table after an unmount).
pub struct Passthrough<T: InodeTable> {
    /// Dropped before the table: handles hold table references.
    pub(crate) handles: Handles<T::Ref>,
    pub(crate) table: T,
    /// The inode numbers reported (`st_ino`).
    pub(crate) numbers: InodeNumbers,
    /// The mounts inodes are named by handle on, each with the
    /// descriptor its handles are reopened through (the share's root's
    /// first); `None` when inodes are named by descriptor.
    pub(crate) by_handle: Option<Mounts>,
    /// Shared with the mount's sweeper (`sweep.rs`).
    pub(crate) descriptors: Arc<Descriptors>,
    pub(crate) server_is_root: bool,
    /// Whether the mount shows the share through the root's alias
    /// (`root_alias.rs`): only then is its name looked up in the root.
    pub(crate) root_alias: std::sync::atomic::AtomicBool,
    /// Whether to ask for FUSE over io_uring at `INIT` (`uring/`), set
    /// before the mount.
    pub(crate) rings_asked: std::sync::atomic::AtomicBool,
    /// Whether the kernel took it at `INIT`.
    pub(crate) rings_offered: std::sync::atomic::AtomicBool,
    /// The FUSE device, where the server mounted it itself (for the
    /// rings): backings are registered on it, whichever transport the
    /// open came by (`backing::Backing::Device`).
    pub(crate) device: std::sync::OnceLock<Arc<OwnedFd>>,
    pub(crate) cred_counts: CredCounts,
    /// Kernel passthrough of open files, if asked for and offered.
    pub(crate) backings: Backings,
    /// Whether to offer passthrough at `INIT` ([`Options::passthrough`]).
    pub(crate) passthrough: bool,
    /// `READ` requests served.
    pub(crate) reads: AtomicU64,
    /// `WRITE` requests served.
    pub(crate) writes: AtomicU64,
    /// `FLUSH` requests served.
    pub(crate) flushes: AtomicU64,
    pub(crate) refused_forgets: AtomicU64,
    /// Times the C allocator's free pages were given back (`trim.rs`).
    pub(crate) memory_trims: AtomicU64,
    /// `LOOKUP` requests served, found or not.
    pub(crate) lookups: AtomicU64,
    /// `READDIR` and `READDIRPLUS` requests served.
    pub(crate) listings: AtomicU64,
    /// `LOOKUP`s and `READDIRPLUS` entries answered from the table,
    /// nothing opened.
    pub(crate) found_known: AtomicU64,
    /// `GETXATTR` requests for a POSIX ACL.
    pub(crate) acl_reads: AtomicU64,
    pub(crate) ttl: Duration,
    /// Each user's share of the serving threads, and the requests waiting
    /// their turn.
    pub(crate) shares: Shares<Waiting<T>>,
    #[cfg(feature = "testing")]
    pub(crate) fault: crate::fault::LookupFault,
    #[cfg(feature = "testing")]
    pub(crate) stall: crate::fault::Stall,
}

/// A request waiting its user's turn: what serves it, with its reply.
pub(crate) type Waiting<T> = Box<dyn FnOnce(&Passthrough<T>) + Send>;

impl<T: InodeTable> Passthrough<T> {
    /// Mirrors the host directory `source`.
    ///
    /// # Errors
    ///
    /// The host's error opening or statting `source`.
    pub fn new(source: &Path) -> std::io::Result<Self> {
        Self::with_ttl(source, DEFAULT_TTL)
    }

    /// Mirrors `source`, letting the kernel cache entries and attributes
    /// for `ttl` (zero: every path walk and `stat` reaches the server, as
    /// for a filesystem others change underneath).
    ///
    /// # Errors
    ///
    /// The host's error opening or statting `source`.
    pub fn with_ttl(source: &Path, ttl: Duration) -> std::io::Result<Self> {
        Self::with_options(
            source,
            Options {
                ttl,
                ..Options::default()
            },
        )
    }

    /// Mirrors `source` as `options` say.
    ///
    /// # Errors
    ///
    /// The host's error opening or statting `source`; with
    /// [`HostInodes::ByFileHandle`], `Unsupported` with what to do instead
    /// where `source`'s filesystem gives no file handles or the server
    /// cannot reopen them (it is not root).
    pub fn with_options(source: &Path, options: Options) -> std::io::Result<Self> {
        let fd = nix::fcntl::open(
            source,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let st = nix::sys::stat::fstat(&fd)?;
        let root = host::key_of(&st, host::birth_of(fd.as_fd()));
        if let Some(line) = options.budget_clamped() {
            eprintln!("{line}");
        }
        let by_handle = match options.host_inodes {
            HostInodes::ByDescriptor => None,
            HostInodes::ByFileHandle => Some(Self::check_file_handles(source, &fd)?),
        };
        // The kernel applied the caller's umask already; the host must not
        // apply ours on top (virtiofsd does the same).
        nix::sys::stat::umask(Mode::empty());
        Ok(Passthrough {
            handles: Handles::new(options.handle_limits()),
            table: T::new(HostInode::Descriptor(fd), root),
            numbers: InodeNumbers::new(root.dev),
            by_handle,
            descriptors: Arc::new(Descriptors::new(options.descriptor_budget())),
            server_is_root: creds::can_switch(),
            root_alias: std::sync::atomic::AtomicBool::new(false),
            rings_asked: std::sync::atomic::AtomicBool::new(false),
            rings_offered: std::sync::atomic::AtomicBool::new(false),
            device: std::sync::OnceLock::new(),
            cred_counts: CredCounts::default(),
            backings: Backings::new(),
            passthrough: options.passthrough,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            refused_forgets: AtomicU64::new(0),
            memory_trims: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            listings: AtomicU64::new(0),
            found_known: AtomicU64::new(0),
            acl_reads: AtomicU64::new(0),
            ttl: options.ttl,
            shares: Shares::new(DEFAULT_THREADS),
            #[cfg(feature = "testing")]
            fault: crate::fault::LookupFault::new(),
            #[cfg(feature = "testing")]
            stall: crate::fault::Stall::default(),
        })
    }

    /// The attributes of a host inode as the kernel is told them: its
    /// inode number told apart across devices ([`InodeNumbers`]).
    pub(crate) fn attr(&self, st: &nix::sys::stat::FileStat) -> FileAttr {
        host::attr(st, self.numbers.number_of(st.st_dev, st.st_ino))
    }

    pub(crate) fn as_caller(&self, caller: &Caller) -> Result<AsCaller, Errno> {
        AsCaller::enter(
            caller.uid,
            caller.gid,
            caller.pid,
            self.server_is_root,
            &self.cred_counts,
        )
        .map_err(Errno::from)
    }

    pub(crate) fn forget_one(&self, id: u64, n: u64) {
        if let Err(e) = self.table.forget(root_alias::table_id(id), n) {
            self.refused_forgets.fetch_add(1, Ordering::Relaxed);
            eprintln!("lockref-fuse: {e}");
        }
        trim::forgotten(&self.memory_trims);
    }

    /// That the share's root gives a file handle and that this process can
    /// reopen it; returns a descriptor of the root to reopen handles
    /// through, and its mount's id.
    pub(crate) fn check_file_handles(source: &Path, root: &OwnedFd) -> std::io::Result<Mounts> {
        let advice = "serve it with --inode-descriptors (HostInodes::ByDescriptor), which \
                      keeps a descriptor per inode the kernel remembers";
        let refuse = |why: String| std::io::Error::new(std::io::ErrorKind::Unsupported, why);
        let (handle, mount_id) = file_handle::handle_of(root.as_fd()).map_err(|e| {
            refuse(format!(
                "{}: its filesystem gives no file handles (name_to_handle_at: {e}); {advice}",
                source.display()
            ))
        })?;
        // The handle is reopened through a descriptor that is not O_PATH:
        // open_by_handle_at refuses those (EBADF) on some kernels.
        let mount = nix::fcntl::open(
            source,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        file_handle::open_handle(mount.as_fd(), &handle).map_err(|e| {
            refuse(format!(
                "{}: cannot reopen a file handle (open_by_handle_at: {e}; it needs \
                 CAP_DAC_READ_SEARCH: run as root); {advice}",
                source.display()
            ))
        })?;
        let mount_id = u64::try_from(mount_id).map_err(|_| {
            refuse(format!(
                "{}: a negative mount id ({mount_id})",
                source.display()
            ))
        })?;
        Ok(Mounts::new(mount, mount_id))
    }

    /// The inode of node id `id`, referenced for a request, with its host
    /// descriptor. Called before the request enters its caller's region:
    /// reopening a file handle needs the server's own rights
    /// ([`creds::as_server`]).
    pub(crate) fn inode(&self, id: INodeNo) -> Result<Live<T::Ref>, Errno> {
        let inode = self
            .table()
            .get(root_alias::table_id(id.0))
            .ok_or(Errno::ESTALE)?;
        self.live(inode)
    }

    /// `inode` with its host descriptor: a file handle is reopened unless
    /// the cache holds its descriptor.
    pub(crate) fn live(&self, inode: T::Ref) -> Result<Live<T::Ref>, Errno> {
        let reopened = match (&inode.host, &self.by_handle) {
            (HostInode::Descriptor(_), _) => None,
            (HostInode::Handle(slot), Some(mounts)) => Some(match Descriptors::cached(slot) {
                Some(fd) => fd,
                None => {
                    // An empty slot was evicted, which made its handle
                    // first (`Descriptors::register`), and only a slot on
                    // a mount with a descriptor to reopen through is.
                    let handle = slot.handle.get().ok_or(Errno::EIO)?;
                    let mount = match &slot.mount {
                        Some(mount) => mount.reopening_fd(),
                        None => mounts.share_fd(),
                    };
                    creds::as_server(self.server_is_root, &self.cred_counts)?;
                    let fd = file_handle::open_handle(mount, handle)?;
                    self.descriptors.install(slot, fd)
                }
            }),
            // Handles are made only when inodes are named by handle.
            (HostInode::Handle(_), None) => return Err(Errno::EIO),
        };
        Ok(Live { inode, reopened })
    }

    /// The host inode for the table to keep for `fd`, just opened on a
    /// new inode on the host mount `mount_id` (`None`: not known), a
    /// directory if `is_dir`: `fd` in a new slot of the descriptor cache,
    /// counted against its budget whatever mount it is on. On a mount
    /// whose handles reopen (the share's, or one met inside it:
    /// [`Mounts::meet`], here for a directory), `fresh` receives the slot,
    /// to enter it in the cache's clock once the table has taken it, and
    /// its handle is made when the cache first evicts it. On any other,
    /// the slot is pinned: held for the inode's life, within the budget
    /// ([`Descriptors::pin`]; the lookup asked [`Self::may_hold`] first).
    /// Where the mount is not known, the handle is made now, and tells it.
    /// `fd` itself when inodes are named by descriptor.
    pub(crate) fn host_inode(
        &self,
        fd: OwnedFd,
        mount_id: Option<u64>,
        is_dir: bool,
        fresh: &mut Option<Arc<DescriptorSlot>>,
    ) -> HostInode {
        let Some(mounts) = &self.by_handle else {
            return HostInode::Descriptor(fd);
        };
        let (mount_id, handle) = match mount_id {
            Some(id) => (Some(id), None),
            None => match file_handle::handle_of(fd.as_fd()) {
                Ok((handle, id)) => (u64::try_from(id).ok(), Some(handle)),
                Err(_) => (None, None),
            },
        };
        let reopens = match mount_id {
            Some(id) if is_dir => mounts.meet(id, fd.as_fd()),
            Some(id) => mounts.reopening(id),
            None => Reopens::Nowhere,
        };
        let slot = match reopens {
            Reopens::OnTheShare => DescriptorSlot::holding(fd),
            Reopens::On(mount) => DescriptorSlot::holding_on(fd, mount),
            Reopens::Nowhere => {
                let slot = Arc::new(DescriptorSlot::holding(fd));
                self.descriptors.pin(&slot);
                return HostInode::Handle(slot);
            }
        };
        if let Some(handle) = handle {
            let _ = slot.handle.set(handle);
        }
        let slot = Arc::new(slot);
        *fresh = Some(slot.clone());
        HostInode::Handle(slot)
    }

    /// Whether a lookup may make a new inode on the host mount `mount_id`:
    /// not if its descriptor would be pinned (its mount has no descriptor
    /// to reopen by) and the pinned ones already take their half of the
    /// budget ([`Descriptors::may_pin`]).
    pub(crate) fn may_hold(&self, mount_id: Option<u64>) -> bool {
        let Some(mounts) = &self.by_handle else {
            return true;
        };
        let reopens = mount_id.is_some_and(|id| !matches!(mounts.reopening(id), Reopens::Nowhere));
        reopens || self.descriptors.may_pin()
    }
}
