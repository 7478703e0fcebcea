//! FUSE over io_uring (Linux 6.14+, `fuse.enable_uring=1`): the kernel
//! hands each request to a ring of the CPU that made it, and takes its
//! reply and hands the next request in one submission, where `/dev/fuse`
//! takes a `read` to fetch and a `writev` to answer, and wakes whichever
//! serving thread waited longest, often on another CPU.
//!
//! fuser serves `INIT` (with `FUSE_OVER_IO_URING` asked for), then
//! [`Rings::start`] registers [`queue::DEPTH`] entries per CPU; once every
//! queue has one, the kernel sends every request but `FORGET`,
//! `BATCH_FORGET` and `INTERRUPT` (and those already read) through them,
//! and fuser's threads serve those. Each ring request is answered by the
//! same [`Passthrough`](crate::fs::Passthrough) operations as fuser's
//! (`dispatch.rs`), in its user's turn (`shares/`).
//!
//! Not yet through the rings: kernel passthrough. An open answered on a
//! ring registers no backing, so its reads and writes come to the server
//! (`backing.rs` registers through fuser's reply, which a ring request
//! has none of).
//!
//! Where the kernel offers no io_uring (`enable_uring` off, or a kernel
//! before 6.14) or refuses the entries, no ring is used and fuser serves
//! every request, as without `--io-uring`.

mod crew;
mod dispatch;
mod entry;
mod queue;
mod threads;
mod watchdog;
mod wire;

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::fs::Passthrough;
use crate::table::InodeTable;

/// The largest `WRITE` (and so the payload buffer) asked for at `INIT`
/// when rings will serve: each entry's payload buffer must hold the
/// largest request, and fuser's default (16 MiB) would take 16 MiB per
/// entry. The kernel's own cap (256 pages) is 1 MiB too.
pub(crate) const MAX_WRITE: u32 = 1 << 20;

/// The running rings of a mount.
pub(crate) struct Rings {
    /// Waits for the ring threads.
    join: Box<dyn FnOnce() + Send + Sync>,
    /// The entries registered and made ([`Rings::entries`]).
    entries: Box<dyn Fn() -> (usize, usize) + Send + Sync>,
    served: Arc<AtomicU64>,
    /// Every queue's threads at their most.
    most_threads: usize,
}

impl Rings {
    /// Starts a ring per possible CPU on the FUSE device `dev`, whose
    /// `INIT` was answered with `FUSE_OVER_IO_URING`.
    ///
    /// # Errors
    ///
    /// io_uring's setup (no io_uring in this kernel, a limit on locked
    /// memory).
    pub(crate) fn start<T: InodeTable>(
        fs: Arc<Passthrough<T>>,
        dev: &OwnedFd,
        threads: usize,
    ) -> io::Result<Self> {
        let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .and_then(|p| usize::try_from(p).ok())
            .unwrap_or(4096);
        // The kernel's `max_payload_sz`: the largest write or 256 pages.
        let payload_len = (MAX_WRITE as usize).max(256 * page);
        let served = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(queue::Shared::new(
            fs,
            dev,
            possible_cpus(),
            threads,
            payload_len,
            served.clone(),
        )?);
        queue::start(&shared)?;
        let most_threads = shared.most_threads();
        let counted = shared.clone();
        Ok(Rings {
            join: Box::new(move || shared.join()),
            entries: Box::new(move || counted.entries()),
            served,
            most_threads,
        })
    }

    /// The most threads the rings ever serve on: every queue's at their
    /// most.
    pub(crate) fn most_threads(&self) -> usize {
        self.most_threads
    }

    /// Requests answered through the rings so far.
    pub(crate) fn served(&self) -> u64 {
        // Relaxed: a counter for tests and reports.
        self.served.load(Ordering::Relaxed)
    }

    /// The entries with the kernel or being answered, and the entries
    /// made: equal once every entry's registration went through.
    pub(crate) fn entries(&self) -> (usize, usize) {
        (self.entries)()
    }

    /// Waits for the ring threads, which end with the connection.
    pub(crate) fn join(self) {
        (self.join)();
    }
}

/// The kernel's queue count: one per possible CPU
/// (`/sys/devices/system/cpu/possible`, e.g. `0-15`).
fn possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| {
            s.trim()
                .split(',')
                .filter_map(|r| r.rsplit('-').next()?.parse::<usize>().ok())
                .max()
        })
        .map_or_else(
            || std::thread::available_parallelism().map_or(1, usize::from),
            |last| last + 1,
        )
}
