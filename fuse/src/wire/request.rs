//! A request as the kernel wrote it: its `fuse_in_header`, its
//! operation's fixed arguments (`op_in`) and its payload (names, link
//! targets, written data), each read within what the kernel filled.
//!
//! The two transports lay the same three parts out differently: a
//! `/dev/fuse` read gives them one after the other in one buffer, a ring
//! entry gives the header and `op_in` in its header buffer and the payload
//! in its payload buffer. [`Request::from_device`] and
//! [`Request::from_ring`] find them; everything after reads a
//! [`Request`] alike.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{op, u32_at, u64_at, COMMIT_ID, HEADER_LEN, IN_HEADER_LEN, OP_IN, PAYLOAD_SZ};

/// `struct fuse_in_header` of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InHeader {
    pub(crate) opcode: u32,
    pub(crate) unique: u64,
    pub(crate) nodeid: u64,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) pid: u32,
}

impl InHeader {
    /// The header at the start of `bytes` (at least [`IN_HEADER_LEN`]).
    fn of(bytes: &[u8]) -> Self {
        InHeader {
            opcode: u32_at(bytes, 4),
            unique: u64_at(bytes, 8),
            nodeid: u64_at(bytes, 16),
            uid: u32_at(bytes, 24),
            gid: u32_at(bytes, 28),
            pid: u32_at(bytes, 32),
        }
    }
}

/// A request's three parts, wherever the transport put them.
#[derive(Clone, Copy)]
pub(crate) struct Request<'a> {
    header: InHeader,
    op_in: &'a [u8],
    payload: &'a [u8],
}

/// A request whose arguments are shorter than its operation's, or whose
/// lengths point past what was read: the kernel never sends one, so it is
/// answered `EINVAL` (or `EIO`) rather than trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Malformed;

/// The size of an operation's fixed arguments (`in_args[0]`, the struct
/// the kernel puts in a ring entry's `op_in`), from the kernel's
/// `include/uapi/linux/fuse.h` at the protocol this server answers `INIT`
/// with (`FUSE_SETXATTR_EXT` not asked for: the 8-byte
/// `fuse_setxattr_in`). 0 for operations whose first argument is a name,
/// or that have none.
pub(crate) fn op_in_len(opcode: u32) -> usize {
    match opcode {
        op::MKDIR
        | op::RENAME
        | op::LINK
        | op::OPEN
        | op::OPENDIR
        | op::SETXATTR
        | op::GETXATTR
        | op::LISTXATTR
        | op::ACCESS
        | op::INTERRUPT
        | op::FORGET
        | op::BATCH_FORGET => 8,
        op::GETATTR
        | op::MKNOD
        | op::FSYNC
        | op::FSYNCDIR
        | op::CREATE
        | op::RENAME2
        | op::INIT => 16,
        op::RELEASE | op::RELEASEDIR | op::FLUSH | op::LSEEK => 24,
        op::FALLOCATE => 32,
        op::READ | op::READDIR | op::READDIRPLUS | op::WRITE => 40,
        op::COPY_FILE_RANGE => 56,
        op::SETATTR => 88,
        _ => 0,
    }
}

impl<'a> Request<'a> {
    /// The request a `/dev/fuse` read returned (`read` is the bytes read):
    /// its header, then its operation's fixed arguments, then its payload.
    /// Refused if shorter than the header and the fixed arguments, or if
    /// the header's length is not what was read.
    pub(crate) fn from_device(read: &'a [u8]) -> Result<Self, Malformed> {
        let header = read.get(..IN_HEADER_LEN).ok_or(Malformed)?;
        if u32_at(header, 0) as usize != read.len() {
            return Err(Malformed);
        }
        let header = InHeader::of(header);
        let args = &read[IN_HEADER_LEN..];
        let (op_in, payload) = args
            .split_at_checked(op_in_len(header.opcode))
            .ok_or(Malformed)?;
        Ok(Request {
            header,
            op_in,
            payload,
        })
    }

    /// The request in a ring entry's `header` and `payload` (the whole
    /// payload buffer: its filled length is read from the header, and
    /// refused past the buffer's end).
    pub(crate) fn from_ring(
        header: &'a [u8; HEADER_LEN],
        payload: &'a [u8],
    ) -> Result<Self, Malformed> {
        let filled = u32_at(header, PAYLOAD_SZ) as usize;
        let payload = payload.get(..filled).ok_or(Malformed)?;
        Ok(Request {
            header: Self::in_header_of(header),
            op_in: &header[OP_IN..OP_IN + 128],
            payload,
        })
    }

    /// The `unique` of the request in a ring entry's `header`, however
    /// malformed the rest.
    pub(crate) fn unique_of(header: &[u8; HEADER_LEN]) -> u64 {
        u64_at(&header[..], 8)
    }

    /// The request's `fuse_in_header`.
    pub(crate) fn in_header(&self) -> InHeader {
        self.header
    }

    /// The `fuse_in_header` in a ring entry's `header`.
    pub(crate) fn in_header_of(header: &[u8; HEADER_LEN]) -> InHeader {
        InHeader::of(&header[..])
    }

    /// The id a ring entry's reply commit names, in its `header`.
    pub(crate) fn commit_id_of(header: &[u8; HEADER_LEN]) -> u64 {
        u64_at(&header[..], COMMIT_ID)
    }

    /// The operation's fixed arguments.
    pub(crate) fn op_in(&self) -> OpIn<'a> {
        OpIn(self.op_in)
    }

    /// The payload: names, link targets, written data.
    pub(crate) fn payload(&self) -> Payload<'a> {
        Payload(self.payload)
    }
}

/// An operation's fixed arguments, read by field offset. A field past the
/// arguments reads as 0: [`Request::from_device`] refuses arguments
/// shorter than the operation's struct, and a ring's are 128 bytes, so
/// none is read but through a bug of ours in an offset.
#[derive(Clone, Copy)]
pub(crate) struct OpIn<'a>(&'a [u8]);

impl OpIn<'_> {
    fn field<const N: usize>(&self, at: usize) -> [u8; N] {
        self.0
            .get(at..at + N)
            .and_then(|b| b.try_into().ok())
            .unwrap_or([0; N])
    }
    pub(crate) fn u32(&self, at: usize) -> u32 {
        u32::from_ne_bytes(self.field(at))
    }
    pub(crate) fn i32(&self, at: usize) -> i32 {
        i32::from_ne_bytes(self.field(at))
    }
    pub(crate) fn u64(&self, at: usize) -> u64 {
        u64::from_ne_bytes(self.field(at))
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

    /// Everything left.
    pub(crate) fn rest(self) -> &'a [u8] {
        self.0
    }
}

/// A time as `fuse_setattr_in` carries it (`secs` seconds from the epoch,
/// negative before it, and `nanos` nanoseconds after that), read before
/// 1970 as the epoch minus (-`secs` s + `nanos` ns), which `attrs.rs`
/// takes back to the kernel's pair.
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
