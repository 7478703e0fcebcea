//! `INIT`: the connection's terms, answered on the mounting thread before
//! any serving thread starts (so the root's alias, the rings and the
//! serving threads all begin on an initialized connection).

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;

use fuser::InitFlags;

use super::{MAX_WRITE, READ_BUFFER_LEN};
use crate::fs::Passthrough;
use crate::table::InodeTable;
use crate::wire::{op, InHeader, Reply, Request, OUT_HEADER_LEN};

/// The protocol answered: 7.40, as the kernel's of Linux 6.9 to 6.13 (and
/// fuser's). A newer kernel speaks to it as to a server of 7.40; every
/// operation served is older.
const MAJOR: u32 = 7;
const MINOR: u32 = 40;

/// `sizeof(struct fuse_init_out)`.
const INIT_OUT_LEN: usize = 64;

/// The capabilities asked for whatever the options, each kept where the
/// kernel offers it.
fn always() -> InitFlags {
    // Reads of one file in parallel, as fuser's default.
    InitFlags::FUSE_ASYNC_READ
        // Writes larger than a page, and `max_pages` honoured.
        | InitFlags::FUSE_BIG_WRITES
        | InitFlags::FUSE_MAX_PAGES
        // READDIRPLUS, adaptively: `ls -l` and `find` get entries with
        // attributes (and lookups) in one request.
        | InitFlags::FUSE_DO_READDIRPLUS
        | InitFlags::FUSE_READDIRPLUS_AUTO
        // Lookups and listings of one directory in parallel: the kernel
        // otherwise serializes them per directory (a held lookup would
        // hold every other caller's lookup in that directory, whatever the
        // serving threads). The table and the host calls take no
        // per-directory lock; changes of a directory still hold its lock
        // in the kernel's VFS.
        | InitFlags::FUSE_PARALLEL_DIROPS
        // The server clears set-user-ID and set-group-ID bits itself: every
        // write, truncate and chown runs on the host as the caller, whose
        // host kernel clears them as it would for the caller directly.
        // Without this the kernel first sends SETATTR (the mode without
        // the bits) on the writer's behalf, which the host refuses to a
        // writer who does not own the file.
        | InitFlags::FUSE_HANDLE_KILLPRIV_V2
        // POSIX ACLs the kernel can see: it reads `system.posix_acl_*`
        // (`xattr.rs`) and enforces them with the mode bits on every path
        // walk, so a directory's ACL holds on cached paths too. With them
        // the caller's umask comes to the server unapplied (DONT_MASK),
        // which applies it only where no default ACL does, as the host.
        | InitFlags::FUSE_POSIX_ACL
        | InitFlags::FUSE_DONT_MASK
        // The second word of flags.
        | InitFlags::FUSE_INIT_EXT
}

/// Reads the connection's `INIT` from `dev` and answers it. A kernel of a
/// newer major version is answered with ours alone, and sends `INIT`
/// again.
///
/// # Errors
///
/// The device's, a first request other than `INIT`, or a kernel older than
/// protocol 7.
pub(crate) fn answer_init<T: InodeTable>(fs: &Passthrough<T>, dev: &OwnedFd) -> io::Result<()> {
    let mut buf = vec![0u8; READ_BUFFER_LEN];
    loop {
        let n = loop {
            match nix::unistd::read(dev, &mut buf) {
                Ok(n) => break n,
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        };
        let request =
            Request::from_device(&buf[..n]).map_err(|_| invalid("a malformed first request"))?;
        let header = request.in_header();
        if header.opcode != op::INIT {
            return Err(invalid("a first request other than INIT"));
        }
        let args = request.op_in();
        let major = args.u32(0);
        if major > MAJOR {
            send(dev, &header, 0, &init_out(0, 0, 0))?;
            continue;
        }
        if major < MAJOR {
            send(dev, &header, libc::EPROTO, &[])?;
            return Err(invalid("a kernel older than FUSE 7"));
        }
        let low = args.u32(12);
        // `flags2`, in the 64-byte `fuse_init_in` of 7.36 on, follows.
        let high = if InitFlags::from_bits_retain(u64::from(low)).contains(InitFlags::FUSE_INIT_EXT)
        {
            request
                .payload()
                .bytes(4)
                .map_or(0, |b| u32::from_ne_bytes(b.try_into().expect("four bytes")))
        } else {
            0
        };
        let offered = InitFlags::from_bits_retain(u64::from(low) | (u64::from(high) << 32));
        let flags = terms(fs, offered);
        send(
            dev,
            &header,
            0,
            &init_out(args.u32(8), flags.bits(), MAX_WRITE),
        )?;
        return Ok(());
    }
}

/// The capabilities taken of those `offered`, with what taking them sets
/// in `fs`.
fn terms<T: InodeTable>(fs: &Passthrough<T>, offered: InitFlags) -> InitFlags {
    let mut flags = always() & offered;
    // Opens read and written by the kernel from the host file itself
    // (`backing.rs`), if asked for and offered; the share must not be on a
    // stacked filesystem itself (depth 1, in the reply). Not asked for by
    // a server that is not root: the kernel refuses its registrations (it
    // takes CAP_SYS_ADMIN).
    if fs.passthrough && fs.server_is_root && offered.contains(InitFlags::FUSE_PASSTHROUGH) {
        flags |= InitFlags::FUSE_PASSTHROUGH;
        fs.backings.enable();
    }
    // FUSE over io_uring (`uring/`), if asked for.
    // Relaxed: set before the mount on this thread.
    if fs.rings_asked.load(Ordering::Relaxed) && offered.contains(InitFlags::FUSE_OVER_IO_URING) {
        flags |= InitFlags::FUSE_OVER_IO_URING;
        // Relaxed: read by the mount after this, on this thread.
        fs.rings_offered.store(true, Ordering::Relaxed);
    }
    flags
}

/// `struct fuse_init_out` for `flags` (both words).
fn init_out(max_readahead: u32, flags: u64, max_write: u32) -> [u8; INIT_OUT_LEN] {
    let page = super::page_size();
    let max_pages = u16::try_from((max_write as usize).div_ceil(page).max(1)).unwrap_or(u16::MAX);
    let mut out = [0u8; INIT_OUT_LEN];
    let mut put = |at: usize, bytes: &[u8]| out[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, &MAJOR.to_ne_bytes());
    put(4, &MINOR.to_ne_bytes());
    put(8, &max_readahead.to_ne_bytes());
    // The low word of the flags (truncation intended), then the high.
    put(12, &(flags as u32).to_ne_bytes());
    // `max_background` and `congestion_threshold`, as fuser's.
    put(16, &16u16.to_ne_bytes());
    put(18, &12u16.to_ne_bytes());
    put(20, &max_write.to_ne_bytes());
    // `time_gran`: nanoseconds.
    put(24, &1u32.to_ne_bytes());
    put(28, &max_pages.to_ne_bytes());
    put(32, &((flags >> 32) as u32).to_ne_bytes());
    // `max_stack_depth`: the share on no stacked filesystem (passthrough).
    if InitFlags::from_bits_retain(flags).contains(InitFlags::FUSE_PASSTHROUGH) {
        put(36, &1u32.to_ne_bytes());
    }
    out
}

/// Sends `INIT`'s reply: `payload`, or the error `errno` (then none),
/// written as every other reply is (`wire::Reply`).
fn send(dev: &OwnedFd, header: &InHeader, errno: i32, payload: &[u8]) -> io::Result<()> {
    let mut out = vec![0u8; OUT_HEADER_LEN + payload.len()];
    let (head, body) = out.split_at_mut(OUT_HEADER_LEN);
    let mut reply = Reply::new(body);
    reply.put(payload).expect("sized for the payload");
    let finished = reply.finish(header.unique, errno);
    head.copy_from_slice(&finished.header);
    nix::unistd::write(dev, &out[..OUT_HEADER_LEN + finished.len])?;
    Ok(())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("FUSE INIT: {what}"))
}
