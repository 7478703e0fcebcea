//! How the table names a host inode: by a descriptor held for the inode's
//! whole life, or by a file handle with a slot for a descriptor that the
//! server's bounded cache fills and empties (`descriptors.rs`).

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

pub use crate::handle_bytes::FileHandleBytes;

/// An inode the table names by file handle: where the descriptor cache
/// keeps its reopened descriptor while it is cached, and its handle.
///
/// A new inode's slot holds the descriptor its lookup opened, and no
/// handle: the cache makes the handle from that descriptor when it first
/// evicts it (`name_to_handle_at`), so an inode never evicted costs no
/// call for it. Requests clone the descriptor's `Arc`: an eviction
/// empties the slot, and the descriptor closes when the last request
/// using it ends. An empty slot always has its handle (made before the
/// slot was emptied, under its lock).
#[derive(Default)]
pub struct DescriptorSlot {
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fd: RwLock<Option<Arc<OwnedFd>>>,
    /// Used since the cache's clock hand last passed (its second chance).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) used: AtomicBool,
    /// The inode's file handle, once made.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) handle: OnceLock<FileHandleBytes>,
    /// Its last name was removed through the mount (`UNLINK`, `RMDIR`, a
    /// `RENAME` over it): not kept once the kernel forgets it.
    gone: AtomicBool,
    /// The mount inside the share its handle reopens on (it keeps the
    /// mount's reopening descriptor open); `None`: the share's.
    #[cfg(feature = "server")]
    pub(crate) mount: Option<Arc<crate::mounts::OtherMount>>,
    /// Set once its descriptor can never be evicted (no handle, or no
    /// descriptor of its mount to reopen it through): the count of such
    /// slots the cache keeps against its budget, which this slot's drop
    /// takes one from.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) unevictable: PinnedPlace,
}

/// A pinned descriptor's place in the cache's count: set once, and given
/// back (one taken off the count) when its slot is dropped.
#[derive(Default)]
pub(crate) struct PinnedPlace(OnceLock<Arc<AtomicUsize>>);

impl PinnedPlace {
    /// Takes a place in `pinned`, once: whether this call took it.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn take(&self, pinned: &Arc<AtomicUsize>) -> bool {
        let took = self.0.set(pinned.clone()).is_ok();
        if took {
            // Relaxed: a count the cache reads to bound what it holds.
            pinned.fetch_add(1, Ordering::Relaxed);
        }
        took
    }

    pub(crate) fn is_taken(&self) -> bool {
        self.0.get().is_some()
    }
}

impl Drop for PinnedPlace {
    fn drop(&mut self) {
        if let Some(pinned) = self.0.get() {
            // Relaxed: as in `take`.
            pinned.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl DescriptorSlot {
    /// A slot holding `fd`, the descriptor of a new inode on the share's
    /// own mount.
    pub fn holding(fd: OwnedFd) -> Self {
        DescriptorSlot {
            fd: RwLock::new(Some(Arc::new(fd))),
            ..Self::default()
        }
    }

    /// A slot holding `fd`, the descriptor of a new inode on `mount`, a
    /// mount inside the share.
    #[cfg(feature = "server")]
    pub(crate) fn holding_on(fd: OwnedFd, mount: Arc<crate::mounts::OtherMount>) -> Self {
        DescriptorSlot {
            fd: RwLock::new(Some(Arc::new(fd))),
            mount: Some(mount),
            ..Self::default()
        }
    }

    /// Whether it is on the share's own mount (not one inside it).
    pub(crate) fn on_the_share(&self) -> bool {
        #[cfg(feature = "server")]
        return self.mount.is_none();
        #[cfg(not(feature = "server"))]
        return true;
    }

    /// Whether its descriptor is held for its life (never evicted).
    pub(crate) fn is_unevictable(&self) -> bool {
        self.unevictable.is_taken()
    }

    /// A slot of the inode `handle` names, holding no descriptor.
    pub fn of_handle(handle: FileHandleBytes) -> Self {
        DescriptorSlot {
            handle: OnceLock::from(handle),
            ..Self::default()
        }
    }

    /// Marks the inode's file as gone: its last name was removed through
    /// the mount. Once the kernel forgets it, it dies and its descriptor
    /// closes, so the host frees the file, rather than being kept with
    /// its descriptor open.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    pub(crate) fn mark_gone(&self) {
        // Relaxed: the marker holds a reference on the inode and puts it
        // after this store; the keep decision reads it at the last put,
        // which follows every other put in the count's order and acquires
        // them, as any counted object's last put does. (Missed, the inode
        // would be kept with its descriptor: the host file freed only when
        // the cache or the table's bound lets it go.)
        self.gone.store(true, Ordering::Relaxed);
    }

    /// Whether the inode may be kept once forgotten: not
    /// [gone](Self::mark_gone).
    pub(crate) fn may_keep(&self) -> bool {
        !self.gone.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for DescriptorSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cached = self.fd.read().map(|fd| fd.is_some()).unwrap_or(false);
        f.debug_struct("DescriptorSlot")
            .field("cached", &cached)
            .field("handle", &self.handle.get())
            .finish()
    }
}

/// A host inode as the inode table keeps it.
#[derive(Debug)]
pub enum HostInode {
    /// An `O_PATH` descriptor, held as long as the inode is in the table:
    /// the root, and every inode when the server runs without file
    /// handles (`HostInodes::ByDescriptor`).
    Descriptor(OwnedFd),
    /// A file handle, and the slot of its descriptor while the cache
    /// keeps one.
    Handle(Arc<DescriptorSlot>),
}

impl From<OwnedFd> for HostInode {
    fn from(fd: OwnedFd) -> Self {
        HostInode::Descriptor(fd)
    }
}
