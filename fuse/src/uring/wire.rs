//! The FUSE wire format of a ring entry: what the kernel writes into an
//! entry's header and payload buffers (`fuse_in_header` in `in_out`, the
//! operation's fixed arguments in `op_in`, names and data in the payload)
//! and what a reply writes back (`fuse_out_header` in `in_out`, every
//! output argument in the payload, its length in `ring_ent_in_out`).
//! Layouts from the kernel's `include/uapi/linux/fuse.h`; every field is
//! read and written by offset, in native byte order, so no struct of ours
//! has to match the kernel's padding.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, FopenFlags, Generation, INodeNo};

/// `fuse_uring_req_header`: `in_out` (128 bytes), `op_in` (128), then
/// `fuse_uring_ent_in_out` (32).
pub(crate) const HEADER_LEN: usize = 288;
/// Where `op_in` starts in the header.
const OP_IN: usize = 128;
/// `fuse_uring_ent_in_out.commit_id`.
const COMMIT_ID: usize = 256 + 8;
/// `fuse_uring_ent_in_out.payload_sz`.
const PAYLOAD_SZ: usize = 256 + 16;
/// `sizeof(struct fuse_out_header)`.
const OUT_HEADER_LEN: u32 = 16;

/// `FUSE_IO_URING_CMD_REGISTER`: an entry's buffers given to the kernel,
/// which fills them with the next request of the entry's queue.
pub(crate) const CMD_REGISTER: u32 = 1;
/// `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`: the reply in an entry's buffers
/// handed over, and the entry given back for the next request.
pub(crate) const CMD_COMMIT_AND_FETCH: u32 = 2;

/// `struct fuse_uring_cmd_req` in an SQE's 80 command bytes: `flags`
/// (0), `commit_id`, `qid`.
pub(crate) fn command(commit_id: u64, qid: u16) -> [u8; 80] {
    let mut cmd = [0u8; 80];
    cmd[8..16].copy_from_slice(&commit_id.to_ne_bytes());
    cmd[16..18].copy_from_slice(&qid.to_ne_bytes());
    cmd
}

/// The operation codes (`enum fuse_opcode`) a ring can carry.
#[allow(missing_docs)]
pub(crate) mod op {
    pub const LOOKUP: u32 = 1;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const READLINK: u32 = 5;
    pub const SYMLINK: u32 = 6;
    pub const MKNOD: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const UNLINK: u32 = 10;
    pub const RMDIR: u32 = 11;
    pub const RENAME: u32 = 12;
    pub const LINK: u32 = 13;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const SETXATTR: u32 = 21;
    pub const GETXATTR: u32 = 22;
    pub const LISTXATTR: u32 = 23;
    pub const REMOVEXATTR: u32 = 24;
    pub const FLUSH: u32 = 25;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const ACCESS: u32 = 34;
    pub const CREATE: u32 = 35;
    pub const DESTROY: u32 = 38;
    pub const FALLOCATE: u32 = 43;
    pub const READDIRPLUS: u32 = 44;
    pub const RENAME2: u32 = 45;
    pub const LSEEK: u32 = 46;
    pub const COPY_FILE_RANGE: u32 = 47;
}

/// `FATTR_*`: which of `fuse_setattr_in`'s fields are set.
#[allow(missing_docs)]
pub(crate) mod fattr {
    pub const MODE: u32 = 1 << 0;
    pub const UID: u32 = 1 << 1;
    pub const GID: u32 = 1 << 2;
    pub const SIZE: u32 = 1 << 3;
    pub const ATIME: u32 = 1 << 4;
    pub const MTIME: u32 = 1 << 5;
    pub const FH: u32 = 1 << 6;
    pub const ATIME_NOW: u32 = 1 << 7;
    pub const MTIME_NOW: u32 = 1 << 8;
    pub const CTIME: u32 = 1 << 10;
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("four bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

/// `struct fuse_in_header` of the request in an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InHeader {
    pub(crate) opcode: u32,
    pub(crate) unique: u64,
    pub(crate) nodeid: u64,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) pid: u32,
}

/// What the kernel wrote into an entry: its header buffer and the part of
/// its payload buffer the request filled.
#[derive(Clone, Copy)]
pub(crate) struct Request<'a> {
    header: &'a [u8; HEADER_LEN],
    payload: &'a [u8],
}

/// A request whose arguments are shorter than its operation's: the kernel
/// never sends one, so it is answered `EINVAL` (`EPROTO`-like) rather
/// than trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

impl<'a> Request<'a> {
    /// The request in `header` and `payload` (the whole payload buffer:
    /// its filled length is read from the header, and refused past the
    /// buffer's end).
    pub(crate) fn new(header: &'a [u8; HEADER_LEN], payload: &'a [u8]) -> Result<Self, Malformed> {
        let filled = u32_at(header, PAYLOAD_SZ) as usize;
        let payload = payload.get(..filled).ok_or(Malformed)?;
        Ok(Request { header, payload })
    }

    /// The `unique` of the request in `header`, however malformed the
    /// rest.
    pub(crate) fn unique_of(header: &[u8; HEADER_LEN]) -> u64 {
        u64_at(&header[..], 8)
    }

    /// The request's `fuse_in_header`.
    pub(crate) fn in_header(&self) -> InHeader {
        Self::in_header_of(self.header)
    }

    /// The `fuse_in_header` in `header`.
    pub(crate) fn in_header_of(header: &[u8; HEADER_LEN]) -> InHeader {
        let h = &header[..];
        InHeader {
            opcode: u32_at(h, 4),
            unique: u64_at(h, 8),
            nodeid: u64_at(h, 16),
            uid: u32_at(h, 24),
            gid: u32_at(h, 28),
            pid: u32_at(h, 32),
        }
    }

    /// The id the reply's commit names, in `header`.
    pub(crate) fn commit_id_of(header: &[u8; HEADER_LEN]) -> u64 {
        u64_at(&header[..], COMMIT_ID)
    }

    /// The operation's fixed arguments (`op_in`, 128 bytes; an operation
    /// with fewer leaves the rest as the kernel left it).
    pub(crate) fn op_in(&self) -> OpIn<'a> {
        OpIn(&self.header[OP_IN..OP_IN + 128])
    }

    /// The payload: names, link targets, written data.
    pub(crate) fn payload(&self) -> Payload<'a> {
        Payload(self.payload)
    }
}

/// An operation's fixed arguments, read by field offset.
#[derive(Clone, Copy)]
pub(crate) struct OpIn<'a>(&'a [u8]);

impl OpIn<'_> {
    pub(crate) fn u32(&self, at: usize) -> u32 {
        u32_at(self.0, at)
    }
    pub(crate) fn i32(&self, at: usize) -> i32 {
        i32::from_ne_bytes(self.0[at..at + 4].try_into().expect("four bytes"))
    }
    pub(crate) fn u64(&self, at: usize) -> u64 {
        u64_at(self.0, at)
    }
}

/// A request's payload, taken apart front to back.
#[derive(Clone, Copy)]
pub(crate) struct Payload<'a>(&'a [u8]);

impl<'a> Payload<'a> {
    /// The next NUL-terminated name, and what follows it.
    pub(crate) fn name(self) -> Result<(&'a OsStr, Payload<'a>), Malformed> {
        let end = self.0.iter().position(|&b| b == 0).ok_or(Malformed)?;
        Ok((
            OsStr::from_bytes(&self.0[..end]),
            Payload(&self.0[end + 1..]),
        ))
    }

    /// The next `len` bytes.
    pub(crate) fn bytes(self, len: usize) -> Result<&'a [u8], Malformed> {
        self.0.get(..len).ok_or(Malformed)
    }
}

/// A reply being written into an entry: its header buffer and payload
/// buffer, with the length written so far.
pub(crate) struct Reply<'a> {
    header: &'a mut [u8; HEADER_LEN],
    payload: &'a mut [u8],
    len: usize,
}

/// A reply that does not fit the entry's payload buffer (the kernel sizes
/// requests so that none does: a bug, answered `EIO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overflow;

impl<'a> Reply<'a> {
    /// An empty reply into `header` and `payload`.
    pub(crate) fn new(header: &'a mut [u8; HEADER_LEN], payload: &'a mut [u8]) -> Self {
        Reply {
            header,
            payload,
            len: 0,
        }
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

    /// Appends a `fuse_entry_out` (128 bytes): the node id is the
    /// attributes' `ino`, as fuser's (`node_id.rs`), 0 for a negative
    /// entry.
    pub(crate) fn put_entry(
        &mut self,
        ttl: Duration,
        a: &FileAttr,
        generation: Generation,
    ) -> Result<(), Overflow> {
        self.put_u64(a.ino.0)?;
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
        attr: &FileAttr,
        generation: Generation,
        offset: u64,
        name: &OsStr,
    ) -> Result<bool, Overflow> {
        let size = 128 + dirent_len(name);
        if self.len + size > max {
            return Ok(false);
        }
        self.put_entry(ttl, attr, generation)?;
        self.put_dirent_unchecked(attr.ino, offset, attr.kind, name)?;
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

    /// Finishes the reply: `fuse_out_header` (`error`, negated errno or 0,
    /// and the request's `unique`) and the payload's length.
    pub(crate) fn finish(self, unique: u64, error: i32) {
        let len = if error == 0 { self.len } else { 0 };
        let total = OUT_HEADER_LEN + u32::try_from(len).expect("a payload under 4 GiB");
        self.header[0..4].copy_from_slice(&total.to_ne_bytes());
        self.header[4..8].copy_from_slice(&(-error).to_ne_bytes());
        self.header[8..16].copy_from_slice(&unique.to_ne_bytes());
        self.header[PAYLOAD_SZ..PAYLOAD_SZ + 4].copy_from_slice(
            &u32::try_from(len)
                .expect("a payload under 4 GiB")
                .to_ne_bytes(),
        );
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
fn seconds(t: SystemTime) -> (u64, u32) {
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

/// A time as `fuse_setattr_in` carries it (`secs` seconds from the epoch,
/// negative before it, and `nanos` nanoseconds after that), read as fuser
/// 0.18 reads it for `server.rs`: before 1970, as the epoch minus
/// (-`secs` s + `nanos` ns), which `attrs.rs` takes back to the kernel's
/// pair. So `SETATTR` means the same whichever transport it came by.
pub(crate) fn time(secs: u64, nanos: u32) -> SystemTime {
    // The kernel's `int64_t`.
    let secs = secs as i64;
    let nanos = nanos.min(999_999_999);
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs.unsigned_abs(), nanos)
    } else {
        UNIX_EPOCH - Duration::new(secs.unsigned_abs(), nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(ino: u64) -> FileAttr {
        FileAttr {
            ino: INodeNo(ino),
            size: 5,
            blocks: 1,
            atime: UNIX_EPOCH + Duration::new(7, 8),
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind: FileType::Directory,
            perm: 0o755,
            nlink: 2,
            uid: 1000,
            gid: 100,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn header() -> Box<[u8; HEADER_LEN]> {
        Box::new([0u8; HEADER_LEN])
    }

    /// Each reply is the kernel's struct size exactly: the kernel refuses
    /// a fixed-size reply of any other length (`fuse_copy_out_args`).
    #[test]
    fn replies_have_the_kernels_sizes() {
        let mut h = header();
        let mut p = vec![0u8; 4096];
        let sizes: Vec<usize> = [
            |r: &mut Reply<'_>| r.put_entry(Duration::from_secs(1), &attr(9), Generation(0)),
            |r: &mut Reply<'_>| r.put_attr_out(Duration::from_secs(1), &attr(9)),
            |r: &mut Reply<'_>| r.put_open(3, FopenFlags::empty(), None),
            |r: &mut Reply<'_>| r.put_attr(&attr(9)),
        ]
        .iter()
        .map(|put| {
            let mut r = Reply::new(&mut h, &mut p);
            put(&mut r).unwrap();
            r.len
        })
        .collect();
        assert_eq!(sizes, [128, 104, 16, 88]);
    }

    #[test]
    fn an_entry_carries_the_node_id_the_mode_and_the_timeout() {
        let mut h = header();
        let mut p = vec![0u8; 4096];
        let mut r = Reply::new(&mut h, &mut p);
        r.put_entry(Duration::new(2, 5), &attr(42), Generation(0))
            .unwrap();
        r.finish(77, 0);
        assert_eq!(u64_at(&p, 0), 42, "node id");
        assert_eq!((u64_at(&p, 16), u32_at(&p, 32)), (2, 5), "entry timeout");
        assert_eq!(u64_at(&p, 40), 42, "attr.ino");
        assert_eq!(u64_at(&p, 40 + 24), 7, "atime seconds");
        assert_eq!(u32_at(&p, 40 + 48), 8, "atime nanoseconds");
        assert_eq!(u32_at(&p, 40 + 60), libc::S_IFDIR | 0o755, "mode");
        assert_eq!(u32_at(&h[..], 0), 16 + 128, "out header length");
        assert_eq!(u64_at(&h[..], 8), 77, "unique");
        assert_eq!(u32_at(&h[..], PAYLOAD_SZ), 128, "payload_sz");
    }

    #[test]
    fn an_error_reply_carries_the_negated_errno_and_no_payload() {
        let mut h = header();
        let mut p = vec![0u8; 64];
        let mut r = Reply::new(&mut h, &mut p);
        r.put_u64(1).unwrap();
        r.finish(5, libc::ENOENT);
        assert_eq!(u32_at(&h[..], 4) as i32, -libc::ENOENT);
        assert_eq!(u32_at(&h[..], PAYLOAD_SZ), 0);
        assert_eq!(u32_at(&h[..], 0), 16);
    }

    #[test]
    fn dirents_are_padded_to_eight_and_stop_at_the_page() {
        let mut h = header();
        let mut p = vec![0u8; 4096];
        let mut r = Reply::new(&mut h, &mut p);
        let kind = FileType::RegularFile;
        assert!(r
            .put_dirent(64, INodeNo(1), 1, kind, OsStr::new("a"))
            .unwrap());
        assert_eq!(r.len, 32);
        assert!(r
            .put_dirent(64, INodeNo(2), 2, kind, OsStr::new("12345678"))
            .unwrap());
        assert_eq!(r.len, 64);
        assert!(
            !r.put_dirent(64, INodeNo(3), 3, kind, OsStr::new("b"))
                .unwrap(),
            "full"
        );
        assert_eq!(r.len, 64, "nothing written past the page");
        assert_eq!(u32_at(&p, 16), 1, "namelen");
        assert_eq!(u32_at(&p, 20), libc::S_IFREG >> 12, "type");
        assert_eq!(&p[24..32], b"a\0\0\0\0\0\0\0");
        let mut r = Reply::new(&mut h, &mut p);
        let at = attr(4);
        let plus = |r: &mut Reply<'_>| {
            r.put_direntplus(200, Duration::ZERO, &at, Generation(0), 9, OsStr::new("d"))
        };
        assert!(plus(&mut r).unwrap());
        assert_eq!(r.len, 128 + 32);
        assert!(!plus(&mut r).unwrap(), "a second does not fit in 200");
    }

    #[test]
    fn a_reply_past_the_payload_buffer_is_refused() {
        let mut h = header();
        let mut p = vec![0u8; 100];
        let mut r = Reply::new(&mut h, &mut p);
        assert_eq!(r.put_attr_out(Duration::ZERO, &attr(1)), Err(Overflow));
    }

    #[test]
    fn requests_are_read_within_what_the_kernel_filled() {
        let mut h = header();
        h[4..8].copy_from_slice(&op::LOOKUP.to_ne_bytes());
        h[8..16].copy_from_slice(&33u64.to_ne_bytes());
        h[16..24].copy_from_slice(&1u64.to_ne_bytes());
        h[24..28].copy_from_slice(&1000u32.to_ne_bytes());
        h[COMMIT_ID..COMMIT_ID + 8].copy_from_slice(&33u64.to_ne_bytes());
        let payload = b"name\0rest\0garbage";
        h[PAYLOAD_SZ..PAYLOAD_SZ + 4].copy_from_slice(&10u32.to_ne_bytes());
        let req = Request::new(&h, payload).unwrap();
        let in_header = req.in_header();
        assert_eq!(
            (
                in_header.opcode,
                in_header.unique,
                in_header.nodeid,
                in_header.uid
            ),
            (op::LOOKUP, 33, 1, 1000)
        );
        assert_eq!(Request::commit_id_of(&h), 33);
        let (first, rest) = req.payload().name().unwrap();
        assert_eq!(first, "name");
        let (second, rest) = rest.name().unwrap();
        assert_eq!(second, "rest");
        assert_eq!(
            rest.name().err(),
            Some(Malformed),
            "no NUL within the filled part"
        );
        h[PAYLOAD_SZ..PAYLOAD_SZ + 4].copy_from_slice(&100u32.to_ne_bytes());
        assert!(Request::new(&h, payload).is_err(), "filled past the buffer");
    }

    #[test]
    fn times_read_and_written_as_the_kernel_and_fuser_do() {
        assert_eq!(seconds(time(7, 8)), (7, 8));
        let before = UNIX_EPOCH - Duration::new(3, 250_000_000);
        // Written as the kernel's pair: -4 s, then 0.75 s forward.
        assert_eq!(seconds(before), ((-4i64) as u64, 750_000_000));
        // Read as fuser reads the pair (`attrs.rs` takes it back).
        assert_eq!(
            time((-4i64) as u64, 750_000_000),
            UNIX_EPOCH - Duration::new(4, 750_000_000)
        );
        assert_eq!(command(5, 2)[8..18], [5, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
    }
}
