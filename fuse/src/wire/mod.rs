//! The FUSE wire format, one for both transports: a request's
//! `fuse_in_header`, its operation's fixed arguments and its payload
//! ([`Request`]), and a reply's output arguments and `fuse_out_header`
//! ([`Reply`]). A `/dev/fuse` read gives the three parts of a request one
//! after the other, and a reply is written as its header then its
//! payload; a ring entry has `fuse_in_header` in `in_out`, the fixed
//! arguments in `op_in` and the rest in the payload buffer, and its reply
//! puts `fuse_out_header` in `in_out` and the payload's length in
//! `ring_ent_in_out`. Layouts from the kernel's
//! `include/uapi/linux/fuse.h`; every field is read and written by offset,
//! in native byte order, so no struct of ours has to match the kernel's
//! padding.

mod reply;
mod request;
#[cfg(test)]
mod tests;

pub(crate) use reply::{Entry, Overflow, Reply};
pub(crate) use request::{time, InHeader, Malformed, OpIn, Payload, Request};

/// The largest `WRITE` asked for at `INIT`, and so the largest request
/// and reply but a header: each ring entry's payload buffer and each
/// `/dev/fuse` serving thread's buffer must hold it. The kernel's own cap
/// (256 pages) is 1 MiB too.
pub(crate) const MAX_WRITE: u32 = 1 << 20;

/// `sizeof(struct fuse_in_header)`.
pub(crate) const IN_HEADER_LEN: usize = 40;

/// `fuse_uring_req_header`: `in_out` (128 bytes), `op_in` (128), then
/// `fuse_uring_ent_in_out` (32).
pub(crate) const HEADER_LEN: usize = 288;
/// Where `op_in` starts in the header.
pub(super) const OP_IN: usize = 128;
/// `fuse_uring_ent_in_out.commit_id`.
pub(super) const COMMIT_ID: usize = 256 + 8;
/// `fuse_uring_ent_in_out.payload_sz`.
pub(super) const PAYLOAD_SZ: usize = 256 + 16;
/// `sizeof(struct fuse_out_header)`.
pub(crate) const OUT_HEADER_LEN: usize = 16;

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

/// The operation codes (`enum fuse_opcode`) served. `FORGET`,
/// `BATCH_FORGET`, `INTERRUPT` and `INIT` come only through `/dev/fuse`.
#[allow(missing_docs)]
pub(crate) mod op {
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
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
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const ACCESS: u32 = 34;
    pub const CREATE: u32 = 35;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const BATCH_FORGET: u32 = 42;
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

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("four bytes"))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

/// The `unique` of a `/dev/fuse` request, if it is long enough to have
/// one.
pub(crate) fn unique_of_device(read: &[u8]) -> Option<u64> {
    read.get(..IN_HEADER_LEN).map(|h| u64_at(h, 8))
}
