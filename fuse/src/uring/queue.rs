//! The rings: one io_uring per queue of the kernel's (one queue per
//! possible CPU), with [`depth`] entries, each a 288-byte header buffer
//! and a payload buffer the kernel fills with a request and reads a reply
//! from.
//!
//! An entry belongs to the kernel from its `REGISTER` or
//! `COMMIT_AND_FETCH` until that command's completion, and to the thread
//! that took the completion (or the one a user's turn hands the request
//! to, `shares/`) from then until its next commit. Any thread may
//! commit an entry of any queue: pushes to a ring's submission queue are
//! serialised by its lock.
//!
//! Whoever *submits* a command (enters the ring with it) is the task the
//! kernel delivers the entry's next request through (its task work), and
//! a command whose task has exited ends `ECANCELED`, failing the request
//! it would have carried. So only a queue's own threads submit, and they
//! never exit while the connection lives: another thread that commits an
//! entry pushes the command and wakes the queue's reaper (an eventfd
//! polled on the ring), which submits it; a queue's extra thread, once
//! not needed, waits on standby rather than exit.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use nix::sys::eventfd::{EfdFlags, EventFd};

use super::crew::Crew;
use super::entry::Entry;
use crate::answer::answer_ring;
use crate::fs::Passthrough;
use crate::table::InodeTable;
use crate::wire::{command, CMD_COMMIT_AND_FETCH, CMD_REGISTER};

pub(crate) use super::threads::start;

/// Entries per queue for a share of `threads` serving threads: one user
/// may hold its whole share on one queue (each request an entry until it
/// is answered) and the others still find entries.
pub(crate) fn depth(threads: usize) -> usize {
    (threads * 2).max(8)
}

/// The `user_data` of the wake eventfd's poll (an entry's is its queue and
/// index, `user_data`).
pub(super) const WAKE: u64 = u64::MAX;

/// One queue: its ring, its entries, and who serves it.
pub(super) struct Queue {
    pub(super) ring: IoUring<squeue::Entry128, cqueue::Entry>,
    /// Serialises pushes to the submission queue.
    pub(super) submissions: Mutex<()>,
    /// Written to make the reaper submit what others pushed.
    pub(super) wake: EventFd,
    /// Who serves the queue.
    pub(super) crew: Crew,
    /// Held by the thread waiting for and taking a completion.
    pub(super) reaping: Mutex<()>,
    pub(super) entries: Box<[Entry]>,
    /// Entries not ended (with the kernel, or being answered).
    pub(super) live: AtomicUsize,
    /// Requests answered.
    pub(super) answered: AtomicU64,
}

/// What every ring thread shares.
pub(crate) struct Shared<T: InodeTable> {
    pub(super) fs: Arc<Passthrough<T>>,
    pub(super) queues: Box<[Queue]>,
    /// The most threads a queue gets (the share's thread count and one).
    pub(super) max_threads: usize,
    /// Requests answered through the rings.
    pub(super) served: Arc<AtomicU64>,
    /// Threads running (serving and the watchdog).
    pub(super) running: Arc<Running>,
}

thread_local! {
    /// The rings (by address) and queue this thread serves, if it is a
    /// ring thread.
    pub(super) static HOME: Cell<Option<(usize, u16)>> = const { Cell::new(None) };
}

/// An entry's `user_data`: its queue and index.
fn user_data(qid: u16, index: usize) -> u64 {
    (u64::from(qid) << 32) | index as u64
}

/// `sqe` with its `len` field set. io-uring 0.7's `UringCmd80` sets `addr`
/// but not `len`, which a FUSE `REGISTER` needs (the number of iovecs, 2).
fn with_len(sqe: squeue::Entry128, len: u32) -> squeue::Entry128 {
    const _: () = assert!(size_of::<squeue::Entry128>() == 128);
    // SAFETY: `Entry128` is `#[repr(C)]`: the kernel's 64-byte
    // `io_uring_sqe` (whose `len` is the `u32` at byte 24), then 64
    // command bytes; every field is an integer (or a union of integers),
    // so any 128 bytes are a valid value of it.
    unsafe {
        let mut raw: [u8; 128] = std::mem::transmute(sqe);
        raw[24..28].copy_from_slice(&len.to_ne_bytes());
        std::mem::transmute::<[u8; 128], squeue::Entry128>(raw)
    }
}

pub(super) fn lock<G>(m: &Mutex<G>) -> MutexGuard<'_, G> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T: InodeTable> Shared<T> {
    /// The rings of `queues` queues of [`depth`]`(threads)` entries with
    /// payload buffers of `payload_len` bytes, on the FUSE device `dev`.
    pub(crate) fn new(
        fs: Arc<Passthrough<T>>,
        dev: &OwnedFd,
        queues: usize,
        threads: usize,
        payload_len: usize,
        served: Arc<AtomicU64>,
    ) -> io::Result<Self> {
        let depth = depth(threads);
        let queues = (0..queues)
            .map(|_| {
                // Room for every entry's command and the wake's poll at
                // once (the registration pushes them all before it enters).
                let ring = IoUring::<squeue::Entry128, cqueue::Entry>::builder()
                    .build(u32::try_from(depth * 2).expect("a small depth"))?;
                ring.submitter().register_files(&[dev.as_raw_fd()])?;
                Ok(Queue {
                    ring,
                    submissions: Mutex::new(()),
                    wake: EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)?,
                    crew: Crew::default(),
                    reaping: Mutex::new(()),
                    entries: (0..depth).map(|_| Entry::new(payload_len)).collect(),
                    live: AtomicUsize::new(0),
                    answered: AtomicU64::new(0),
                })
            })
            .collect::<io::Result<_>>()?;
        Ok(Shared {
            fs,
            queues,
            max_threads: threads + 1,
            served,
            running: Arc::default(),
        })
    }

    pub(crate) fn queues(&self) -> usize {
        self.queues.len()
    }

    /// The most threads the queues ever have, all together.
    pub(crate) fn most_threads(&self) -> usize {
        self.queues.len() * self.max_threads
    }

    /// The entries with the kernel or being answered, and the entries
    /// made, over every queue.
    pub(crate) fn entries(&self) -> (usize, usize) {
        self.queues.iter().fold((0, 0), |(live, made), q| {
            // Relaxed: a count for tests and reports.
            (
                live + q.live.load(Ordering::Relaxed),
                made + q.entries.len(),
            )
        })
    }

    /// Pushes `sqe` to queue `qid`'s ring, and wakes the queue's reaper to
    /// submit it unless `reaping` (the caller is a thread of that queue
    /// about to reap, which submits it).
    pub(super) fn push(&self, qid: u16, sqe: &squeue::Entry128, reaping: bool) -> io::Result<()> {
        let queue = &self.queues[usize::from(qid)];
        {
            let _only = lock(&queue.submissions);
            // SAFETY: the lock makes this the only submission-queue access
            // (a wait only reads its length); the entry's buffers and
            // iovecs live as long as `self`, which outlives every command
            // (see `threads.rs`'s `reap`).
            let mut sq = unsafe { queue.ring.submission_shared() };
            // SAFETY: as above.
            unsafe { sq.push(sqe) }.map_err(|_| io::Error::other("a full submission queue"))?;
        }
        if !reaping {
            queue.wake.write(1)?;
        }
        Ok(())
    }

    /// Answers the request in entry `index` of queue `qid` and commits it.
    pub(super) fn answer(&self, qid: u16, index: usize) {
        let queue = &self.queues[usize::from(qid)];
        let entry = &queue.entries[index];
        // SAFETY: the kernel completed the entry's command, so its buffers
        // are this thread's until the commit below (the module's text); the
        // two do not overlap.
        let (header, payload) = unsafe { (&mut *entry.header, &mut *entry.payload) };
        let commit_id = answer_ring(&self.fs, header, payload);
        // Relaxed: counters, for the watchdog and reports.
        queue.answered.fetch_add(1, Ordering::Relaxed);
        self.served.fetch_add(1, Ordering::Relaxed);
        let sqe = opcode::UringCmd80::new(types::Fixed(0), CMD_COMMIT_AND_FETCH)
            .cmd(command(commit_id, qid))
            .build()
            .user_data(user_data(qid, index));
        // A thread of the queue submits it with its next wait (or wakes the
        // reaper before it waits for the reaping lock or stands by:
        // `threads.rs`'s `serve_queue`); any other thread wakes the reaper.
        let home = HOME.get() == Some((std::ptr::from_ref(self) as usize, qid));
        if let Err(e) = self.push(qid, &sqe, home) {
            // The entry is lost to its queue; the kernel ends its request
            // at the unmount.
            eprintln!("lockref-fuse: a ring commit failed: {e}");
        }
    }

    /// Waits until every thread has ended (with the connection).
    pub(crate) fn join(&self) {
        self.running.join();
    }
}

/// The rings' threads running (serving and the watchdog): each counted
/// from before its spawn until it has dropped its share of the rings
/// (`threads.rs`), so that once [`join`](Running::join) returns, no thread
/// holds the server any more (the last reference to it may be the
/// caller's, whose drop then closes every host descriptor).
#[derive(Default)]
pub(super) struct Running {
    count: Mutex<usize>,
    ended: Condvar,
}

impl Running {
    /// Counts a thread about to be spawned.
    pub(super) fn begin(&self) {
        *lock(&self.count) += 1;
    }

    /// A thread ended (or never started).
    pub(super) fn end(&self) {
        *lock(&self.count) -= 1;
        self.ended.notify_all();
    }

    /// Waits until every thread counted has ended.
    pub(super) fn join(&self) {
        let mut count = lock(&self.count);
        while *count > 0 {
            count = self.ended.wait(count).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Sleeps for `tick`, or less if a thread ends meanwhile (the
    /// watchdog's tick).
    pub(super) fn sleep(&self, tick: Duration) {
        let count = lock(&self.count);
        let _ = self.ended.wait_timeout(count, tick);
    }
}

/// Polls queue `qid`'s wake eventfd on its ring (multishot: one
/// completion per wake, until the kernel ends it).
pub(super) fn arm_wake<T: InodeTable>(shared: &Shared<T>, qid: u16) {
    let queue = &shared.queues[usize::from(qid)];
    let sqe = squeue::Entry128::from(
        opcode::PollAdd::new(types::Fd(queue.wake.as_raw_fd()), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(WAKE),
    );
    if let Err(e) = shared.push(qid, &sqe, true) {
        eprintln!("lockref-fuse: ring {qid}: no wake poll: {e}");
    }
}

/// Registers queue `qid`'s entries with the kernel.
pub(super) fn register<T: InodeTable>(shared: &Shared<T>, qid: u16) {
    let queue = &shared.queues[usize::from(qid)];
    arm_wake(shared, qid);
    for (index, entry) in queue.entries.iter().enumerate() {
        let sqe = with_len(
            opcode::UringCmd80::new(types::Fixed(0), CMD_REGISTER)
                .cmd(command(0, qid))
                .addr(Some(entry.iov.get() as u64))
                .build(),
            2,
        )
        .user_data(user_data(qid, index));
        // Counted first: a completion may come before the push returns.
        // Relaxed: read by this queue's threads after the reaping lock.
        queue.live.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = shared.push(qid, &sqe, true) {
            queue.live.fetch_sub(1, Ordering::Relaxed);
            eprintln!("lockref-fuse: a ring entry was not registered: {e}");
        }
    }
}
