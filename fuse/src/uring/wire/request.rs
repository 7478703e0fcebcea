//! What the kernel wrote into a ring entry: the request's header, its
//! operation's fixed arguments and its payload, each read within what the
//! kernel filled.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{u32_at, u64_at, COMMIT_ID, HEADER_LEN, OP_IN, PAYLOAD_SZ};

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
