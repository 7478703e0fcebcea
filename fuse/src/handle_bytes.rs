//! [`FileHandleBytes`]: a file handle as the host gave it, kept by an
//! inode named by handle (`host_inode.rs`) and reopened by
//! `file_handle.rs`.

use std::fmt;

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
