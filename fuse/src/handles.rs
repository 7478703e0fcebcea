//! Open file and directory handles: what `OPEN`, `CREATE` and `OPENDIR`
//! return and `RELEASE`/`RELEASEDIR` end. Each holds a reference on its
//! inode; the kernel's handle numbers are checked (`EBADF` for one never
//! given or already released).

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use fuser::{Errno, FileHandle};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::host::errno;

/// A directory entry as `OPENDIR` read it: name, host inode number, type
/// (if the host filesystem reports it).
pub(crate) type DirEntry = (Vec<u8>, u64, Option<fuser::FileType>);

pub(crate) enum Open {
    File(File),
    /// A directory's entries, read at `OPENDIR` (offsets index them).
    Dir(Vec<DirEntry>),
}

/// An open file or directory: holds a reference on its inode.
pub(crate) struct Handle<R> {
    _inode: R,
    pub(crate) open: Open,
}

/// The handles, by number.
pub(crate) struct Handles<R> {
    map: RwLock<HashMap<u64, Arc<Handle<R>>>>,
    next: AtomicU64,
}

impl<R> Handles<R> {
    pub(crate) fn new() -> Self {
        Handles {
            map: RwLock::new(HashMap::new()),
            next: AtomicU64::new(1),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// A new handle on `inode` (whose reference it keeps).
    pub(crate) fn add(&self, inode: R, open: Open) -> FileHandle {
        // Relaxed: a unique number is all that is needed.
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        let h = Arc::new(Handle {
            _inode: inode,
            open,
        });
        self.map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fh, h);
        FileHandle(fh)
    }

    fn get(&self, fh: FileHandle) -> Result<Arc<Handle<R>>, Errno> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        map.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// An open file's handle (`EISDIR` for a directory's).
    pub(crate) fn file(&self, fh: FileHandle) -> Result<Arc<Handle<R>>, Errno> {
        let h = self.get(fh)?;
        match h.open {
            Open::File(_) => Ok(h),
            Open::Dir(_) => Err(Errno::EISDIR),
        }
    }

    /// An open directory's handle (`ENOTDIR` for a file's).
    pub(crate) fn dir(&self, fh: FileHandle) -> Result<Arc<Handle<R>>, Errno> {
        let h = self.get(fh)?;
        match h.open {
            Open::Dir(_) => Ok(h),
            Open::File(_) => Err(Errno::ENOTDIR),
        }
    }

    /// Ends a handle (`RELEASE`); its inode reference goes with it once no
    /// request in flight uses it.
    pub(crate) fn remove(&self, fh: FileHandle) -> Result<(), Errno> {
        let removed = self
            .map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        removed.map(drop).ok_or(Errno::EBADF)
    }
}

/// What `readdir` and `readdirplus` list: `.`, `..` and the entries.
pub(crate) fn read_dir_entries(fd: &OwnedFd) -> Result<Vec<DirEntry>, Errno> {
    // Through /proc, as a file is reopened: open(2) of a directory needs
    // read permission only, where `openat(fd, ".")` would need search
    // permission on it too.
    let dir_fd = nix::fcntl::open(
        crate::host::proc_path(std::os::fd::AsFd::as_fd(fd)).as_c_str(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno)?;
    let mut dir = nix::dir::Dir::from_fd(dir_fd).map_err(errno)?;
    let mut out = Vec::new();
    for entry in dir.iter() {
        let entry = entry.map_err(errno)?;
        let kind = entry.file_type().map(|t| {
            use nix::dir::Type;
            match t {
                Type::Directory => fuser::FileType::Directory,
                Type::Symlink => fuser::FileType::Symlink,
                Type::Fifo => fuser::FileType::NamedPipe,
                Type::Socket => fuser::FileType::Socket,
                Type::CharacterDevice => fuser::FileType::CharDevice,
                Type::BlockDevice => fuser::FileType::BlockDevice,
                Type::File => fuser::FileType::RegularFile,
            }
        });
        out.push((entry.file_name().to_bytes().to_vec(), entry.ino(), kind));
    }
    Ok(out)
}
