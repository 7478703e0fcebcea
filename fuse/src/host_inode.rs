//! How the table names a host inode: by a descriptor held for the inode's
//! whole life, or by a file handle with a slot for a descriptor that the
//! server's bounded cache fills and empties (`descriptors.rs`).

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock, RwLock};

/// A file handle's bytes and type, as the host's filesystem gave them.
#[derive(Clone, PartialEq, Eq)]
pub struct FileHandleBytes {
    kind: i32,
    bytes: Box<[u8]>,
}

impl FileHandleBytes {
    /// The largest handle kept (the kernel's `MAX_HANDLE_SZ`).
    pub const MAX_LEN: usize = 128;

    /// A handle of type `kind`; bytes past [`MAX_LEN`](Self::MAX_LEN) are
    /// never given by the kernel and are not kept.
    pub fn new(kind: i32, bytes: &[u8]) -> Self {
        let len = bytes.len().min(Self::MAX_LEN);
        FileHandleBytes {
            kind,
            bytes: bytes[..len].into(),
        }
    }

    /// The handle's type (`handle_type`).
    pub fn kind(&self) -> i32 {
        self.kind
    }

    /// The handle's bytes (`f_handle`), at most
    /// [`MAX_LEN`](Self::MAX_LEN).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for FileHandleBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileHandle({}, {} bytes)", self.kind, self.bytes.len())
    }
}

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
}

impl DescriptorSlot {
    /// A slot holding `fd`, the descriptor of a new inode.
    pub fn holding(fd: OwnedFd) -> Self {
        DescriptorSlot {
            fd: RwLock::new(Some(Arc::new(fd))),
            ..Self::default()
        }
    }

    /// A slot of the inode `handle` names, holding no descriptor.
    pub fn of_handle(handle: FileHandleBytes) -> Self {
        DescriptorSlot {
            handle: OnceLock::from(handle),
            ..Self::default()
        }
    }

    /// Readies the slot's inode to be kept after the kernel forgot it:
    /// its handle made now if it had none (`name_to_handle_at`), then its
    /// descriptor given up. Whether it may be kept: `false` where no handle
    /// could be made (the inode then dies, its descriptor closed).
    ///
    /// A kept inode holds no descriptor: one on a file unlinked through
    /// the mount (whose inode the kernel forgets at once) would keep the
    /// host file's blocks allocated until evicted; and the budget of
    /// descriptors stays the live inodes'. A request on the inode once the
    /// kernel finds it again reopens it by the handle, as after an
    /// eviction. Under the slot's write lock, which an eviction takes too,
    /// so an empty slot still always has its handle.
    pub(crate) fn release_to_keep(&self) -> bool {
        let mut fd = self.fd.write().unwrap_or_else(|e| e.into_inner());
        if self.handle.get().is_none() {
            let Some(held) = fd.as_ref() else {
                // Emptied with no handle: never (only an eviction empties
                // a slot, after making its handle).
                return false;
            };
            match Self::handle_of(held) {
                Some(handle) => {
                    let _ = self.handle.set(handle);
                }
                None => return false,
            }
        }
        // Closed here unless a request still holds it (then when it ends).
        drop(fd.take());
        true
    }

    #[cfg(feature = "server")]
    fn handle_of(fd: &OwnedFd) -> Option<FileHandleBytes> {
        use std::os::fd::AsFd;
        crate::file_handle::handle_of(fd.as_fd())
            .ok()
            .map(|(handle, _)| handle)
    }

    /// Without the server, nothing makes handles.
    #[cfg(not(feature = "server"))]
    fn handle_of(_: &OwnedFd) -> Option<FileHandleBytes> {
        None
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
    /// the root, an inode on another mount than the share's, and every
    /// inode when the server runs without file handles.
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
