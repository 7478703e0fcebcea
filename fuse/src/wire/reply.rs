//! A reply being written: the output arguments into a payload buffer,
//! then the `fuse_out_header` for them. A `/dev/fuse` reply is the header
//! and the payload in one write (the payload buffer starts
//! [`OUT_HEADER_LEN`] bytes into the request's buffer); a ring entry's
//! header goes into its header buffer, with the payload's length.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, FopenFlags, Generation, INodeNo};

use super::{HEADER_LEN, OUT_HEADER_LEN, PAYLOAD_SZ};

/// An entry reply's inode: the node id the kernel names it by from now
/// on, and its attributes (whose `ino` is the number `stat` reports).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) node: u64,
    pub(crate) attr: FileAttr,
}

/// A reply being written into a payload buffer, with the length written
/// so far.
pub(crate) struct Reply<'a> {
    payload: &'a mut [u8],
    pub(super) len: usize,
}

/// A reply that does not fit the payload buffer (the kernel sizes
/// requests so that none does: a bug, answered `EIO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overflow;

impl<'a> Reply<'a> {
    /// An empty reply into `payload`.
    pub(crate) fn new(payload: &'a mut [u8]) -> Self {
        Reply { payload, len: 0 }
    }

    /// The payload's length so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The room left in the payload buffer.
    pub(crate) fn room(&self) -> usize {
        self.payload.len() - self.len
    }

    /// Appends `bytes` to the payload.
    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<(), Overflow> {
        let end = self.len.checked_add(bytes.len()).ok_or(Overflow)?;
        self.payload
            .get_mut(self.len..end)
            .ok_or(Overflow)?
            .copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// Appends what `read` writes into the next `max` bytes of the payload
    /// (fewer if there is less room), as it was left (not zeroed first):
    /// `read` returns the bytes written.
    pub(crate) fn fill<E>(
        &mut self,
        max: usize,
        read: impl FnOnce(&mut [u8]) -> Result<usize, E>,
    ) -> Result<(), E> {
        let end = self.len + max.min(self.room());
        let filled = read(&mut self.payload[self.len..end])?;
        self.len += filled.min(end - self.len);
        Ok(())
    }

    pub(crate) fn put_u32(&mut self, v: u32) -> Result<(), Overflow> {
        self.put(&v.to_ne_bytes())
    }

    pub(crate) fn put_u64(&mut self, v: u64) -> Result<(), Overflow> {
        self.put(&v.to_ne_bytes())
    }

    /// Appends a `fuse_attr` (88 bytes).
    pub(crate) fn put_attr(&mut self, a: &FileAttr) -> Result<(), Overflow> {
        let (atime, atime_ns) = seconds(a.atime);
        let (mtime, mtime_ns) = seconds(a.mtime);
        let (ctime, ctime_ns) = seconds(a.ctime);
        for v in [a.ino.0, a.size, a.blocks, atime, mtime, ctime] {
            self.put_u64(v)?;
        }
        let mode = mode_bits(a.kind) | u32::from(a.perm);
        for v in [
            atime_ns, mtime_ns, ctime_ns, mode, a.nlink, a.uid, a.gid, a.rdev, a.blksize, a.flags,
        ] {
            self.put_u32(v)?;
        }
        Ok(())
    }

    /// Appends a `fuse_attr_out` (104 bytes).
    pub(crate) fn put_attr_out(&mut self, ttl: Duration, a: &FileAttr) -> Result<(), Overflow> {
        self.put_u64(ttl.as_secs())?;
        self.put_u32(ttl.subsec_nanos())?;
        self.put_u32(0)?;
        self.put_attr(a)
    }

    /// Appends a `fuse_entry_out` (128 bytes) for `entry`: its node id (0
    /// for a negative entry) and its attributes.
    pub(crate) fn put_entry(
        &mut self,
        ttl: Duration,
        entry: &Entry,
        generation: Generation,
    ) -> Result<(), Overflow> {
        let a = &entry.attr;
        self.put_u64(entry.node)?;
        self.put_u64(generation.0)?;
        self.put_u64(ttl.as_secs())?;
        self.put_u64(ttl.as_secs())?;
        self.put_u32(ttl.subsec_nanos())?;
        self.put_u32(ttl.subsec_nanos())?;
        self.put_attr(a)
    }

    /// Appends a `fuse_open_out` (16 bytes): with a backing's id, the
    /// open is passthrough (`FOPEN_PASSTHROUGH`).
    pub(crate) fn put_open(
        &mut self,
        fh: u64,
        flags: FopenFlags,
        backing: Option<u32>,
    ) -> Result<(), Overflow> {
        self.put_u64(fh)?;
        match backing {
            Some(id) => {
                self.put_u32((flags | FopenFlags::FOPEN_PASSTHROUGH).bits())?;
                self.put_u32(id)
            }
            None => {
                self.put_u32(flags.bits())?;
                self.put_u32(0)
            }
        }
    }

    /// Appends a `fuse_dirent` for `READDIR`, padded to 8 bytes; `false`
    /// (nothing written) if it does not fit in `max` bytes of payload.
    pub(crate) fn put_dirent(
        &mut self,
        max: usize,
        ino: INodeNo,
        offset: u64,
        kind: FileType,
        name: &OsStr,
    ) -> Result<bool, Overflow> {
        let size = dirent_len(name);
        if self.len + size > max {
            return Ok(false);
        }
        self.put_dirent_unchecked(ino, offset, kind, name)?;
        Ok(true)
    }

    /// Appends a `fuse_direntplus` (the entry, then the dirent) for
    /// `READDIRPLUS`; `false` (nothing written) if it does not fit in
    /// `max` bytes of payload.
    pub(crate) fn put_direntplus(
        &mut self,
        max: usize,
        ttl: Duration,
        entry: &Entry,
        generation: Generation,
        offset: u64,
        name: &OsStr,
    ) -> Result<bool, Overflow> {
        let size = 128 + dirent_len(name);
        if self.len + size > max {
            return Ok(false);
        }
        self.put_entry(ttl, entry, generation)?;
        self.put_dirent_unchecked(entry.attr.ino, offset, entry.attr.kind, name)?;
        Ok(true)
    }

    fn put_dirent_unchecked(
        &mut self,
        ino: INodeNo,
        offset: u64,
        kind: FileType,
        name: &OsStr,
    ) -> Result<(), Overflow> {
        let name = name.as_bytes();
        self.put_u64(ino.0)?;
        self.put_u64(offset)?;
        self.put_u32(u32::try_from(name.len()).map_err(|_| Overflow)?)?;
        self.put_u32(mode_bits(kind) >> 12)?;
        self.put(name)?;
        let pad = dirent_len(OsStr::from_bytes(name)) - 24 - name.len();
        self.put(&[0u8; 8][..pad])
    }

    /// Finishes the reply: its `fuse_out_header` (`error`, negated errno
    /// or 0, and the request's `unique`) and the payload's length, none
    /// for an error.
    pub(crate) fn finish(self, unique: u64, error: i32) -> Finished {
        let len = if error == 0 { self.len } else { 0 };
        let total = u32::try_from(OUT_HEADER_LEN + len).expect("a payload under 4 GiB");
        let mut header = [0u8; OUT_HEADER_LEN];
        header[0..4].copy_from_slice(&total.to_ne_bytes());
        header[4..8].copy_from_slice(&(-error).to_ne_bytes());
        header[8..16].copy_from_slice(&unique.to_ne_bytes());
        Finished { header, len }
    }
}

/// A finished reply: the `fuse_out_header` to send before its payload, and
/// the payload's length.
pub(crate) struct Finished {
    pub(crate) header: [u8; OUT_HEADER_LEN],
    pub(crate) len: usize,
}

impl Finished {
    /// Writes the reply's header into a ring entry's `header` buffer: the
    /// `fuse_out_header` and the payload's length.
    pub(crate) fn into_ring(self, header: &mut [u8; HEADER_LEN]) {
        header[..self.header.len()].copy_from_slice(&self.header);
        let len = u32::try_from(self.len).expect("a payload under 4 GiB");
        header[PAYLOAD_SZ..PAYLOAD_SZ + 4].copy_from_slice(&len.to_ne_bytes());
    }
}

/// A `fuse_dirent`'s size: 24 bytes and the name, padded to 8.
fn dirent_len(name: &OsStr) -> usize {
    (24 + name.len()).next_multiple_of(8)
}

/// The file-type bits of a mode (`S_IFMT`).
fn mode_bits(kind: FileType) -> u32 {
    match kind {
        FileType::NamedPipe => libc::S_IFIFO,
        FileType::CharDevice => libc::S_IFCHR,
        FileType::BlockDevice => libc::S_IFBLK,
        FileType::Directory => libc::S_IFDIR,
        FileType::RegularFile => libc::S_IFREG,
        FileType::Symlink => libc::S_IFLNK,
        FileType::Socket => libc::S_IFSOCK,
    }
}

/// A time as `fuse_attr` carries it: seconds since the epoch (two's
/// complement before it) and nanoseconds, 0 to 999,999,999.
pub(super) fn seconds(t: SystemTime) -> (u64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs(), d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            // Two's complement of the seconds back, as the kernel's
            // `int64_t` (times this far back fit).
            let secs = d.as_secs() as i64;
            if d.subsec_nanos() == 0 {
                ((-secs) as u64, 0)
            } else {
                ((-secs - 1) as u64, 1_000_000_000 - d.subsec_nanos())
            }
        }
    }
}
