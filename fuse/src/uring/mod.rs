//! FUSE over io_uring (Linux 6.14+, `fuse.enable_uring=1`): the kernel
//! hands each request to a ring of the CPU that made it, and takes its
//! reply and hands the next request in one submission, where `/dev/fuse`
//! takes a `read` to fetch and a `writev` to answer, and wakes whichever
//! serving thread waited longest, often on another CPU.
//!
//! The `/dev/fuse` loop (`dev/`) answers `INIT` (with `FUSE_OVER_IO_URING`
//! asked for), then [`Rings::start`] registers [`queue::DEPTH`] entries per
//! CPU; once every queue has one, the kernel sends every request but
//! `FORGET`, `BATCH_FORGET` and `INTERRUPT` (and those already read)
//! through them, and the `/dev/fuse` threads serve those. A ring request
//! is decoded and answered as a `/dev/fuse` one (`wire/`, `dispatch.rs`,
//! `answer.rs`), in its user's turn (`turns.rs`); an open answered on a
//! ring registers its backing on the connection's device as any other, so
//! kernel passthrough works through the rings too.
//!
//! Where the kernel offers no io_uring (`enable_uring` off, or a kernel
//! before 6.14) or refuses the entries, no ring is used and the
//! `/dev/fuse` threads serve every request, as without `--io-uring`.

mod crew;
mod entry;
mod queue;
mod threads;
mod watchdog;

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::fs::Passthrough;
use crate::table::InodeTable;

pub(crate) use crate::wire::MAX_WRITE;

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
