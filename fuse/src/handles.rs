//! Open file and directory handles: what `OPEN`, `CREATE` and `OPENDIR`
//! return and `RELEASE`/`RELEASEDIR` end. Each holds a reference on its
//! inode; the kernel's handle numbers are checked (`EBADF` for one never
//! given or already released).
//!
//! Each handle holds a host descriptor, so handles are limited
//! ([`HandleLimits`]): a user at their share gets `EMFILE`, and everyone
//! gets `ENFILE` once all handles are taken; one user's opens cannot use
//! the descriptors every other user needs.

use std::collections::HashMap;
use std::fs::File;
use std::mem::MaybeUninit;
use std::ops::ControlFlow;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use fuser::{Errno, FileHandle};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::creds::Caller;
use crate::host::errno;
use crate::table::ServerHasher;

pub(crate) enum Open {
    /// A file, with who opened it: its writes run as them.
    File(File, Caller),
    /// A directory, listed from the host at each `READDIR` (offsets are the
    /// host's own seek cookies, as getdents and telldir use them).
    Dir(DirStream),
}

/// How many handles may be open: in all, and per user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HandleLimits {
    /// Handles open at once, all users together (then `ENFILE`).
    pub(crate) total: usize,
    /// Handles one uid may hold (then `EMFILE`).
    pub(crate) per_user: usize,
}

/// An open file or directory: holds a reference on its inode.
pub(crate) struct Handle<R> {
    _inode: R,
    pub(crate) open: Open,
    /// The uid whose share it counts in.
    owner: u32,
    /// The inode's node id, if the open counts in its inode's I/O mode
    /// (`backing.rs`; given back at the `RELEASE`).
    io: Option<u64>,
}

/// The handles, by number.
pub(crate) struct Handles<R> {
    map: RwLock<Table<R>>,
    next: AtomicU64,
    limits: HandleLimits,
}

/// The handles by number, and how many each uid holds (changed together
/// under the lock).
struct Table<R> {
    by_number: HashMap<u64, Arc<Handle<R>>, ServerHasher>,
    per_user: HashMap<u32, usize, ServerHasher>,
}

impl<R> Handles<R> {
    pub(crate) fn new(limits: HandleLimits) -> Self {
        Handles {
            map: RwLock::new(Table {
                by_number: HashMap::default(),
                per_user: HashMap::default(),
            }),
            next: AtomicU64::new(1),
            limits,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_number
            .len()
    }

    /// Whether `owner` may open one more handle now (checked again by
    /// [`add`](Self::add), which a race may still refuse).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub(crate) fn may_add(&self, owner: u32) -> Result<(), Errno> {
        let table = self.map.read().unwrap_or_else(|e| e.into_inner());
        self.check(&table, owner)
    }

    fn check(&self, table: &Table<R>, owner: u32) -> Result<(), Errno> {
        if table.by_number.len() >= self.limits.total {
            return Err(Errno::ENFILE);
        }
        if table.per_user.get(&owner).copied().unwrap_or(0) >= self.limits.per_user {
            return Err(Errno::EMFILE);
        }
        Ok(())
    }

    /// A new handle on `inode` (whose reference it keeps) for `owner`.
    ///
    /// # Errors
    ///
    /// `EMFILE` when `owner` holds their share, `ENFILE` when every handle
    /// is taken; `inode` and `open` are dropped then.
    pub(crate) fn add(
        &self,
        inode: R,
        open: Open,
        owner: u32,
        io: Option<u64>,
    ) -> Result<FileHandle, Errno> {
        let mut table = self.map.write().unwrap_or_else(|e| e.into_inner());
        self.check(&table, owner)?;
        *table.per_user.entry(owner).or_insert(0) += 1;
        // Relaxed: a unique number is all that is needed.
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        let h = Arc::new(Handle {
            _inode: inode,
            open,
            owner,
            io,
        });
        table.by_number.insert(fh, h);
        Ok(FileHandle(fh))
    }

    fn get(&self, fh: FileHandle) -> Result<Arc<Handle<R>>, Errno> {
        let table = self.map.read().unwrap_or_else(|e| e.into_inner());
        table.by_number.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// An open file's handle (`EISDIR` for a directory's).
    pub(crate) fn file(&self, fh: FileHandle) -> Result<Arc<Handle<R>>, Errno> {
        let h = self.get(fh)?;
        match h.open {
            Open::File(..) => Ok(h),
            Open::Dir(_) => Err(Errno::EISDIR),
        }
    }

    /// An open directory's handle (`ENOTDIR` for a file's).
    pub(crate) fn dir(&self, fh: FileHandle) -> Result<Arc<Handle<R>>, Errno> {
        let h = self.get(fh)?;
        match h.open {
            Open::Dir(_) => Ok(h),
            Open::File(..) => Err(Errno::ENOTDIR),
        }
    }

    /// Ends a handle (`RELEASE`); its inode reference goes with it once no
    /// request in flight uses it. Returns the node id of a counted open's
    /// inode (`backing.rs`).
    pub(crate) fn remove(&self, fh: FileHandle) -> Result<Option<u64>, Errno> {
        let removed = {
            let mut table = self.map.write().unwrap_or_else(|e| e.into_inner());
            let removed = table.by_number.remove(&fh.0).ok_or(Errno::EBADF)?;
            if let Some(held) = table.per_user.get_mut(&removed.owner) {
                *held -= 1;
                if *held == 0 {
                    table.per_user.remove(&removed.owner);
                }
            }
            removed
        };
        // The inode reference and the descriptor go after the lock.
        Ok(removed.io)
    }
}

/// One entry of a listing: its name, host inode number, type (if the host
/// filesystem reports it), and the cookie of the entry after it.
pub(crate) struct DirEntry<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) ino: u64,
    pub(crate) kind: Option<fuser::FileType>,
    pub(crate) next: u64,
}

/// The most bytes of host entries read per `getdents` call.
const LISTING_CHUNK: usize = 32 << 10;
/// The least: room for the longest entry (a 255-byte name) several times.
const LISTING_CHUNK_MIN: usize = 2 << 10;

/// An open directory, streamed: a descriptor of its own (so its position
/// is this handle's), read from the requested offset at each request.
/// Nothing of the listing is kept between requests, so a handle costs one
/// descriptor whatever the directory's size (the whole listing copied into
/// every handle let 100 handles on a 100,000-entry directory take
/// gigabytes).
pub(crate) struct DirStream {
    /// Seek and read happen together: two requests on one handle must not
    /// interleave them.
    fd: Mutex<OwnedFd>,
}

impl DirStream {
    /// Opens `fd`'s directory for listing. Through /proc, as a file is
    /// reopened: open(2) of a directory needs read permission only, where
    /// `openat(fd, ".")` would need search permission on it too.
    pub(crate) fn open(fd: BorrowedFd<'_>) -> Result<Self, Errno> {
        let dir_fd = nix::fcntl::open(
            crate::host::proc_path(fd).as_c_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        Ok(DirStream {
            fd: Mutex::new(dir_fd),
        })
    }

    /// Syncs the directory (`FSYNCDIR`) through this stream's descriptor.
    ///
    /// # Errors
    ///
    /// The host's.
    pub(crate) fn sync(&self) -> Result<(), Errno> {
        let fd = self.fd.lock().unwrap_or_else(|e| e.into_inner());
        nix::unistd::fsync(&*fd).map_err(errno)
    }

    /// Calls `each` with the entries from `offset` (0: the start; else a
    /// cookie an entry's `next` gave), `.` and `..` included, until it
    /// breaks or the listing ends.
    ///
    /// # Errors
    ///
    /// The host's error from the seek or a read; the entries before it
    /// were passed to `each`.
    ///
    /// Each `getdents` reads about `wanted` bytes of host entries (within
    /// bounds): the room the reply has, in host entries. A host entry is
    /// never larger than the FUSE entry of the same name, so one call
    /// fills a `READDIR` page and the host lists no entry the page has
    /// no room for (32 KiB each time, for a 4 KiB page, made the host list
    /// every entry eight times over).
    pub(crate) fn list_from(
        &self,
        offset: u64,
        wanted: usize,
        mut each: impl FnMut(DirEntry<'_>) -> ControlFlow<()>,
    ) -> Result<(), Errno> {
        let fd = self.fd.lock().unwrap_or_else(|e| e.into_inner());
        rustix::fs::seek(&*fd, rustix::fs::SeekFrom::Start(offset))
            .map_err(|e| Errno::from_i32(e.raw_os_error()))?;
        let chunk = wanted.clamp(LISTING_CHUNK_MIN, LISTING_CHUNK);
        let mut buf = Vec::<MaybeUninit<u8>>::with_capacity(chunk);
        buf.resize(chunk, MaybeUninit::uninit());
        let mut dir = rustix::fs::RawDir::new(&*fd, &mut buf);
        while let Some(entry) = dir.next() {
            let entry = entry.map_err(|e| Errno::from_i32(e.raw_os_error()))?;
            let kind = {
                use rustix::fs::FileType as T;
                match entry.file_type() {
                    T::Directory => Some(fuser::FileType::Directory),
                    T::Symlink => Some(fuser::FileType::Symlink),
                    T::Fifo => Some(fuser::FileType::NamedPipe),
                    T::Socket => Some(fuser::FileType::Socket),
                    T::CharacterDevice => Some(fuser::FileType::CharDevice),
                    T::BlockDevice => Some(fuser::FileType::BlockDevice),
                    T::RegularFile => Some(fuser::FileType::RegularFile),
                    _ => None,
                }
            };
            let flow = each(DirEntry {
                name: entry.file_name().to_bytes(),
                ino: entry.ino(),
                kind,
                next: entry.next_entry_cookie(),
            });
            if flow.is_break() {
                break;
            }
        }
        Ok(())
    }
}
