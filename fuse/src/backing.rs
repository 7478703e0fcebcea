//! [`Backings`]: kernel FUSE passthrough (`FUSE_PASSTHROUGH`, Linux 6.9+,
//! `Options::passthrough`, on by default): the kernel reads and writes an open file's
//! host file itself, with no `READ` or `WRITE` request, through a backing
//! the server registers once per inode.
//!
//! The kernel's rules, and how they are met:
//! - While an inode has a backing, every open of it must be passthrough
//!   with that backing (`EINVAL` otherwise), and a passthrough open is
//!   refused beside an open through the page cache (`ETXTBSY`); the opener
//!   gets `EIO`. So the server keeps each open inode's mode ([`InodeIo`]):
//!   the first open of an inode decides, the others follow, the last
//!   `RELEASE` ends it (the kernel keeps its own reference on a backing
//!   for files still using it). The first open decides by what it is
//!   ([`wants_passthrough`]): one that may write, or a read of a file
//!   larger than [`PAGE_CACHE_MAX`], is passthrough; a read-only open of a
//!   small file goes through the page cache, where an open+close costs no
//!   `ioctl` and the file is one `READ`. There, as with passthrough off, a
//!   change made to the host file behind the server's back is seen from
//!   the next open (which drops the cached pages; a new size once the
//!   attributes expire), where a passthrough open reads the host file's
//!   own pages.
//! - The kernel opens each file's host file with the credentials of
//!   whoever registered the backing, and reads and writes with them. One
//!   backing serves every caller of an inode, so it is registered after
//!   the open as the caller has checked the caller's rights, under
//!   credentials of its own: an ordinary user's (`creds::as_backing_owner`:
//!   uid and gid 65534, no groups, no capability over files). Its writes
//!   therefore meet an ordinary user's limits whoever writes: none of the
//!   blocks ext4 keeps for root (registered as root, as libfuse's
//!   `passthrough_hp` does, they were open to every user of the mount:
//!   the test `users_cannot_fill_the_blocks_kept_for_root`), and a set-id
//!   bit is cleared by a write as by a user's. For root's own writes that
//!   is stricter than the host: the price of one backing for all callers.
//!   Reading and writing take no permission check there (the open as the
//!   caller did), so the owner's lack of rights costs nothing.
//! - Why not keep a backing from one open to the next (saving the two
//!   `ioctl`s of each open+close): a kept backing holds its host inode, so
//!   a file deleted on the host keeps its blocks and its inode number
//!   while the kernel remembers it (the test
//!   `a_reused_inode_number_is_a_new_inode` fails that way), which is what
//!   the descriptor budget exists to avoid.
//! - Passthrough is on by default (`Options::passthrough`); where the
//!   server is not root (it does not ask for it), the kernel does not
//!   offer it at `INIT`, or the kernel refuses a registration (a share on
//!   a stacked filesystem), the server serves `READ` and `WRITE`.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fuser::BackingId;

// `FUSE_DEV_IOC_BACKING_CLOSE`: `_IOW(229, 2, uint32_t)`.
nix::ioctl_write_ptr!(fuse_dev_ioc_backing_close, 229, 2, u32);

/// A backing registered with the kernel on the connection's device,
/// whichever transport the open came by; closed when dropped (when the
/// inode's last open ends).
pub(crate) struct Backing {
    /// The connection's device, open while the backing is.
    device: Arc<OwnedFd>,
    /// The kernel's `backing_id`.
    id: u32,
}

impl Backing {
    /// Registers `fd` as a backing on `device`.
    ///
    /// # Errors
    ///
    /// The kernel's refusal (`EPERM` without `CAP_SYS_ADMIN`, `EINVAL` for a
    /// file on a stacked filesystem too deep).
    pub(crate) fn register(device: &Arc<OwnedFd>, fd: BorrowedFd<'_>) -> io::Result<Self> {
        Ok(Backing {
            device: device.clone(),
            id: BackingId::create_raw(&**device, fd)?,
        })
    }

    /// The kernel's `backing_id`, which an open's reply names.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }
}

impl Drop for Backing {
    fn drop(&mut self) {
        // SAFETY: the ioctl reads one `u32` through the pointer, which is
        // valid for the call; `id` was registered on `device` and is
        // closed once, here.
        let closed =
            unsafe { fuse_dev_ioc_backing_close(self.device.as_raw_fd(), &raw const self.id) };
        if let Err(e) = closed {
            eprintln!("lockref-fuse: a backing was not closed: {e}");
        }
    }
}

/// The largest regular file a read-only open reads through the page cache
/// rather than by passthrough: one `READ` of the kernel's default size (32
/// pages) brings it in whole. Passthrough's own price is per open: the
/// backing's two `ioctl`s and the kernel's second open of the host file
/// (16 µs per open+close on the dev VM, more than that `READ`).
pub(crate) const PAGE_CACHE_MAX: u64 = 128 << 10;

/// Whether an open is best served by passthrough: one that may write
/// (where the backing's owner meets an ordinary user's limits, see
/// above), or a read of a file larger than [`PAGE_CACHE_MAX`].
pub(crate) fn wants_passthrough(writes: bool, size: u64) -> bool {
    writes || size > PAGE_CACHE_MAX
}

/// How an open inode's files are read and written. The kernel holds an
/// inode to one mode while it has open files (`EIO` for an open in the
/// other), so the first open decides for the others until the last
/// `RELEASE`. The kernel leaves the mode before it sends that `RELEASE`,
/// so the server never sees an inode free that the kernel still holds.
enum InodeIo {
    /// By the kernel, from the host file: every open shares the backing.
    Passthrough { backing: Arc<Backing>, opens: usize },
    /// Through the page cache, with `READ` and `WRITE` served here.
    PageCache { opens: usize },
}

impl InodeIo {
    fn opens(&mut self) -> &mut usize {
        match self {
            InodeIo::Passthrough { opens, .. } | InodeIo::PageCache { opens } => opens,
        }
    }
}

/// How one open is served: [`Backings::open`]'s answer.
pub(crate) struct OpenIo {
    /// The backing for the reply's `open_backing`, if passthrough.
    pub(crate) backing: Option<Arc<Backing>>,
    /// The node id to give back to [`Backings::release`] at the
    /// `RELEASE`, if the open was counted.
    pub(crate) counted: Option<u64>,
}

/// The I/O mode of each open inode, by node id.
pub(crate) struct Backings {
    /// Whether new inodes get a backing: asked for, taken by the kernel at
    /// `INIT`, and no registration refused since.
    enabled: AtomicBool,
    inodes: Mutex<HashMap<u64, InodeIo>>,
}

impl Backings {
    pub(crate) fn new() -> Self {
        Backings {
            enabled: AtomicBool::new(false),
            inodes: Mutex::new(HashMap::new()),
        }
    }

    /// Passthrough from now on (the kernel took it at `INIT`).
    pub(crate) fn enable(&self) {
        // Relaxed: read by later requests, which the kernel sends after
        // INIT's reply.
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// Whether new inodes get a backing.
    pub(crate) fn enabled(&self) -> bool {
        // Relaxed: see `enable`.
        self.enabled.load(Ordering::Relaxed)
    }

    /// How an open of inode `id` is served, counted until
    /// [`release`](Self::release): in the mode the inode's open files are
    /// in; for an inode with none, by passthrough if `wants_passthrough`
    /// (with the backing `register` makes), else through the page cache.
    /// While passthrough is off nothing is counted. A refused registration
    /// turns passthrough off for inodes not yet open, and is logged.
    pub(crate) fn open(
        &self,
        id: u64,
        wants_passthrough: bool,
        register: impl FnOnce() -> std::io::Result<Backing>,
    ) -> OpenIo {
        let page_cache = |counted| OpenIo {
            backing: None,
            counted,
        };
        let mut inodes = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(inode) = inodes.get_mut(&id) {
            *inode.opens() += 1;
            return match inode {
                InodeIo::Passthrough { backing, .. } => OpenIo {
                    backing: Some(backing.clone()),
                    counted: Some(id),
                },
                InodeIo::PageCache { .. } => page_cache(Some(id)),
            };
        }
        if !self.enabled() {
            return page_cache(None);
        }
        if !wants_passthrough {
            inodes.insert(id, InodeIo::PageCache { opens: 1 });
            return page_cache(Some(id));
        }
        match register() {
            Ok(backing) => {
                let backing = Arc::new(backing);
                inodes.insert(
                    id,
                    InodeIo::Passthrough {
                        backing: backing.clone(),
                        opens: 1,
                    },
                );
                OpenIo {
                    backing: Some(backing),
                    counted: Some(id),
                }
            }
            Err(e) => {
                // Relaxed: as in `enable`.
                self.enabled.store(false, Ordering::Relaxed);
                eprintln!("lockref-fuse: passthrough off: a backing was refused: {e}");
                page_cache(None)
            }
        }
    }

    /// A counted open of inode `id` ends; the inode leaves its mode (and
    /// its backing goes) with its last.
    pub(crate) fn release(&self, id: u64) {
        let mut inodes = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(inode) = inodes.get_mut(&id) {
            *inode.opens() -= 1;
            if *inode.opens() == 0 {
                inodes.remove(&id);
            }
        }
    }
}
