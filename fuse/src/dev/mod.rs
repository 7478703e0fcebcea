//! The `/dev/fuse` transport, the server's own: `INIT` answered on the
//! mounting thread (`init.rs`), then serving threads, each reading the
//! kernel's queue on a descriptor of its own (`FUSE_DEV_IOC_CLONE`, as
//! libfuse's `clone_fd`: the kernel wakes a reader of that descriptor,
//! and takes the reply there), answering each request into the buffer it
//! read it into and writing the reply from there in one `write`. Requests
//! are decoded, done and answered as a ring's (`wire/`, `dispatch.rs`,
//! `answer.rs`), each in its user's turn (`turns.rs`); `FORGET` and
//! `BATCH_FORGET` have no reply and never wait, and `INTERRUPT` is
//! answered `ENOSYS` at once (every request is answered when done; the
//! kernel then sends no more interrupts, as with fuser before).
//!
//! A request that waits for its user's turn is copied out of its thread's
//! buffer, and answered on the thread its turn comes to, on the descriptor
//! it was read from (the kernel finds a reply's request among those read
//! through that descriptor).

mod init;
mod mounting;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::thread::JoinHandle;

pub(crate) use init::answer_init;
pub(crate) use mounting::{fusermount, fusermount_unmount, mount_device};

use crate::answer::answer_device;
use crate::fs::{Passthrough, Waiting};
use crate::table::InodeTable;
use crate::turns::in_turn;
use crate::wire::{op, Request};

pub(crate) use crate::wire::MAX_WRITE;

/// A serving thread's buffer: the largest request (a `WRITE` of
/// [`MAX_WRITE`] and its header and arguments), and the largest reply. At
/// least the kernel's `FUSE_MIN_READ_BUFFER` (8 KiB).
pub(crate) const READ_BUFFER_LEN: usize = MAX_WRITE as usize + 8192;

// `FUSE_DEV_IOC_CLONE`: `_IOR(229, 0, uint32_t)`.
nix::ioctl_read!(fuse_dev_ioc_clone, 229, 0, u32);

/// The system's page size.
pub(crate) fn page_size() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|p| usize::try_from(p).ok())
        .unwrap_or(4096)
}

/// A new descriptor of the connection on `dev`, with its own queue of
/// requests being answered.
///
/// # Errors
///
/// Opening `/dev/fuse`, or the kernel's refusal to clone.
fn clone_device(dev: &OwnedFd) -> io::Result<OwnedFd> {
    let clone = nix::fcntl::open(
        "/dev/fuse",
        nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    let mut session = u32::try_from(dev.as_raw_fd()).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: the ioctl reads one `u32` (the descriptor to clone) through
    // the pointer, valid for the call, on a descriptor of `/dev/fuse`.
    unsafe { fuse_dev_ioc_clone(clone.as_raw_fd(), &raw mut session) }?;
    Ok(clone)
}

/// The serving threads of a connection.
pub(crate) struct Serving {
    threads: Vec<JoinHandle<()>>,
}

impl Serving {
    /// Starts `threads` serving threads on the connection of `dev`, whose
    /// `INIT` was answered.
    ///
    /// # Errors
    ///
    /// A clone's or a thread's start (those started end with the
    /// connection).
    pub(crate) fn start<T: InodeTable>(
        fs: &Arc<Passthrough<T>>,
        dev: &OwnedFd,
        threads: usize,
    ) -> io::Result<Self> {
        let mut started = Vec::with_capacity(threads);
        for i in 0..threads {
            let fd = Arc::new(clone_device(dev)?);
            let fs = fs.clone();
            started.push(
                std::thread::Builder::new()
                    .name(format!("fuse-{i}"))
                    .spawn(move || serve(&fs, &fd))?,
            );
        }
        Ok(Serving { threads: started })
    }

    /// The serving threads.
    pub(crate) fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Waits for the serving threads, which end with the connection.
    ///
    /// # Errors
    ///
    /// A thread that panicked.
    pub(crate) fn join(self) -> io::Result<()> {
        let mut result = Ok(());
        for thread in self.threads {
            if thread.join().is_err() {
                result = Err(io::Error::other("a serving thread panicked"));
            }
        }
        result
    }
}

/// A serving thread: reads requests from `fd` and answers them, until the
/// connection ends.
fn serve<T: InodeTable>(fs: &Passthrough<T>, fd: &Arc<OwnedFd>) {
    let mut buf = vec![0u8; READ_BUFFER_LEN];
    loop {
        match nix::unistd::read(&**fd, &mut buf) {
            Ok(n) => handle(fs, fd, &mut buf, n),
            // The request was interrupted before it was read, or a signal
            // came: read again.
            Err(nix::errno::Errno::ENOENT | nix::errno::Errno::EINTR) => {}
            // Unmounted (or aborted): the connection is over.
            Err(nix::errno::Errno::ENODEV) => return,
            Err(e) => {
                eprintln!("lockref-fuse: reading /dev/fuse: {e}");
                return;
            }
        }
    }
}

/// Answers the request of `n` bytes in `buf`, read from `fd`.
fn handle<T: InodeTable>(fs: &Passthrough<T>, fd: &Arc<OwnedFd>, buf: &mut [u8], n: usize) {
    let Ok(request) = Request::from_device(&buf[..n]) else {
        // Answered `EINVAL` if it has a `unique` to answer.
        answer_and_write(fs, fd, buf, n);
        return;
    };
    let header = request.in_header();
    match header.opcode {
        op::FORGET => fs.forget_one(header.nodeid, request.op_in().u64(0)),
        op::BATCH_FORGET => {
            let count = request.op_in().u32(0) as usize;
            // `fuse_forget_one`s: node id and count, 16 bytes each.
            for one in request.payload().rest().chunks_exact(16).take(count) {
                let (id, n) = one.split_at(8);
                fs.forget_one(
                    u64::from_ne_bytes(id.try_into().expect("eight bytes")),
                    u64::from_ne_bytes(n.try_into().expect("eight bytes")),
                );
            }
        }
        // `ENOSYS` (the dispatcher's answer to it): the kernel sends no
        // more, and waits for each request's own reply, as fuser's did.
        op::INTERRUPT => answer_and_write(fs, fd, buf, n),
        _ => in_turn(
            fs,
            header.uid,
            buf,
            |buf| answer_and_write(fs, fd, buf, n),
            |buf| {
                let copy = buf[..n].to_vec();
                let fd = fd.clone();
                let waiting: Waiting<T> = Box::new(move |fs| {
                    // Calloc'd: only the pages the reply writes are
                    // touched.
                    let mut buf = vec![0u8; READ_BUFFER_LEN];
                    buf[..n].copy_from_slice(&copy);
                    drop(copy);
                    answer_and_write(fs, &fd, &mut buf, n);
                });
                waiting
            },
        ),
    }
}

/// Answers the request of `n` bytes in `buf` into `buf`, and writes the
/// reply to `fd`.
fn answer_and_write<T: InodeTable>(fs: &Passthrough<T>, fd: &OwnedFd, buf: &mut [u8], n: usize) {
    let Some(len) = answer_device(fs, buf, n) else {
        return;
    };
    match nix::unistd::write(fd, &buf[..len]) {
        // The request was interrupted and is gone, or the connection ended.
        Ok(_) | Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENODEV) => {}
        Err(e) => eprintln!("lockref-fuse: a reply was not taken: {e}"),
    }
}
