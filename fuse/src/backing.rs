//! [`Backings`]: kernel FUSE passthrough (`FUSE_PASSTHROUGH`, Linux 6.9+,
//! `Options::passthrough`, on by default): the kernel reads and writes an open file's
//! host file itself, with no `READ` or `WRITE` request, through a backing
//! the server registers once per inode.
//!
//! The kernel's rules, and how they are met:
//! - While an inode has a backing, every open of it must be passthrough
//!   with that backing (`EINVAL` otherwise), and a passthrough open is
//!   refused beside an open through the page cache (`ETXTBSY`). So once
//!   passthrough is on, every open of a regular file is passthrough: the
//!   first registers the inode's backing, the others share it, the last
//!   `RELEASE` drops it (the kernel keeps its own reference for files
//!   still using it).
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fuser::BackingId;

/// An inode's backing and the opens using it.
struct InodeBacking {
    backing: Arc<BackingId>,
    opens: usize,
}

/// The backings of open inodes, by node id.
pub(crate) struct Backings {
    /// Whether new inodes get a backing: asked for, taken by the kernel at
    /// `INIT`, and no registration refused since.
    enabled: AtomicBool,
    inodes: Mutex<HashMap<u64, InodeBacking>>,
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

    /// The backing of an open of inode `id`, counted until
    /// [`release`](Self::release): the inode's, or one `register` makes;
    /// `None` (an open through the page cache) while passthrough is off.
    /// A refused registration turns passthrough off for inodes not yet
    /// open, and is logged.
    pub(crate) fn open(
        &self,
        id: u64,
        register: impl FnOnce() -> std::io::Result<BackingId>,
    ) -> Option<Arc<BackingId>> {
        let mut inodes = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(inode) = inodes.get_mut(&id) {
            inode.opens += 1;
            return Some(inode.backing.clone());
        }
        if !self.enabled() {
            return None;
        }
        match register() {
            Ok(backing) => {
                let backing = Arc::new(backing);
                inodes.insert(
                    id,
                    InodeBacking {
                        backing: backing.clone(),
                        opens: 1,
                    },
                );
                Some(backing)
            }
            Err(e) => {
                // Relaxed: as in `enable`.
                self.enabled.store(false, Ordering::Relaxed);
                eprintln!("lockref-fuse: passthrough off: a backing was refused: {e}");
                None
            }
        }
    }

    /// A passthrough open of inode `id` ends; the inode's backing goes with
    /// its last.
    pub(crate) fn release(&self, id: u64) {
        let mut inodes = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(inode) = inodes.get_mut(&id) {
            inode.opens -= 1;
            if inode.opens == 0 {
                inodes.remove(&id);
            }
        }
    }
}
