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
//!
//! Each queue is served by one thread pinned to its CPU, leader and
//! followers: the thread holding the queue's reaping lock waits for and
//! takes one completion, lets the lock go, answers the request, and takes
//! the lock again. A request the host is slow to answer would hold its
//! CPU's queue (the kernel sends a CPU's requests only to its own queue),
//! so a watchdog ([`watch`]) adds a thread to a queue whose threads have
//! all been answering for a tick with none done (one on standby, or a new
//! one), up to the share's thread count and one; a thread that finds
//! another waiting to reap when it is done goes to standby. Unstalled, a
//! queue is one thread and one system call per request.

use std::cell::{Cell, UnsafeCell};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use nix::sys::eventfd::{EfdFlags, EventFd};

use super::crew::Crew;
use super::dispatch::{answer, caller};
use super::wire::{command, Request, CMD_COMMIT_AND_FETCH, CMD_REGISTER, HEADER_LEN};
use crate::fs::{Passthrough, Waiting};
use crate::server::serve_waiting;
use crate::table::InodeTable;

/// How long a queue's threads may all be answering with none done before
/// the watchdog adds one, while the rings are busy.
const STALL_TICK: Duration = Duration::from_millis(10);
/// The watchdog's tick once the rings have been idle for [`IDLE_TICKS`]
/// ticks (no request answered, every queue with a reaper): an idle server
/// wakes twice a second, not a hundred times; a request held from idle is
/// helped within this.
const IDLE_TICK: Duration = Duration::from_millis(500);
const IDLE_TICKS: u32 = 10;

/// Entries per queue for a share of `threads` serving threads: one user
/// may hold its whole share on one queue (each request an entry until it
/// is answered) and the others still find entries.
pub(crate) fn depth(threads: usize) -> usize {
    (threads * 2).max(8)
}

/// One entry's buffers, shared with the kernel.
struct Entry {
    /// `fuse_uring_req_header`, from `Box::into_raw`, freed on drop.
    header: *mut [u8; HEADER_LEN],
    /// The payload buffer, from `Box::into_raw`, freed on drop.
    payload: *mut [u8],
    /// The two iovecs the `REGISTER` names, read by the kernel then.
    iov: UnsafeCell<[libc::iovec; 2]>,
}

// SAFETY: an entry's buffers are touched by one party at a time (the
// module's text): the kernel between a command and its completion, then
// the one thread that holds the entry until it commits.
unsafe impl Send for Entry {}
// SAFETY: as for `Send`; `iov` is written once, before the entry is shared.
unsafe impl Sync for Entry {}

impl Entry {
    fn new(payload_len: usize) -> Self {
        let header = Box::into_raw(Box::new([0u8; HEADER_LEN]));
        let payload = Box::into_raw(vec![0u8; payload_len].into_boxed_slice());
        let iov = [
            libc::iovec {
                iov_base: header.cast(),
                iov_len: HEADER_LEN,
            },
            libc::iovec {
                iov_base: payload.cast(),
                iov_len: payload_len,
            },
        ];
        Entry {
            header,
            payload,
            iov: UnsafeCell::new(iov),
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: both came from `Box::into_raw` and are freed once, here;
        // an entry is dropped only when no command of it is with the
        // kernel (`Shared` is leaked otherwise, see `serve_queue`).
        unsafe {
            drop(Box::from_raw(self.header));
            drop(Box::from_raw(self.payload));
        }
    }
}

/// The `user_data` of the wake eventfd's poll (an entry's is its queue and
/// index, `user_data`).
const WAKE: u64 = u64::MAX;

/// One queue: its ring, its entries, and who serves it.
struct Queue {
    ring: IoUring<squeue::Entry128, cqueue::Entry>,
    /// Serialises pushes to the submission queue.
    submissions: Mutex<()>,
    /// Written to make the reaper submit what others pushed.
    wake: EventFd,
    /// Who serves the queue.
    crew: Crew,
    /// Held by the thread waiting for and taking a completion.
    reaping: Mutex<()>,
    entries: Box<[Entry]>,
    /// Entries not ended (with the kernel, or being answered).
    live: AtomicUsize,
    /// Requests answered.
    answered: AtomicU64,
}

/// What every ring thread shares.
pub(crate) struct Shared<T: InodeTable> {
    fs: Arc<Passthrough<T>>,
    queues: Box<[Queue]>,
    /// The most threads a queue gets (the share's thread count and one).
    max_threads: usize,
    /// Requests answered through the rings.
    served: Arc<AtomicU64>,
    /// Threads running (serving and the watchdog), and their end.
    running: Mutex<usize>,
    ended: Condvar,
}

thread_local! {
    /// The rings (by address) and queue this thread serves, if it is a
    /// ring thread.
    static HOME: Cell<Option<(usize, u16)>> = const { Cell::new(None) };
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

fn lock<G>(m: &Mutex<G>) -> MutexGuard<'_, G> {
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
            running: Mutex::new(0),
            ended: Condvar::new(),
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
    fn push(&self, qid: u16, sqe: &squeue::Entry128, reaping: bool) -> io::Result<()> {
        let queue = &self.queues[usize::from(qid)];
        {
            let _only = lock(&queue.submissions);
            // SAFETY: the lock makes this the only submission-queue access
            // (a wait only reads its length); the entry's buffers and
            // iovecs live as long as `self`, which outlives every command
            // (see `serve_queue`).
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
    fn answer(&self, qid: u16, index: usize) {
        let queue = &self.queues[usize::from(qid)];
        let entry = &queue.entries[index];
        // SAFETY: the kernel completed the entry's command, so its buffers
        // are this thread's until the commit below (the module's text); the
        // two do not overlap.
        let (header, payload) = unsafe { (&mut *entry.header, &mut *entry.payload) };
        let commit_id = answer(&self.fs, header, payload);
        // Relaxed: counters, for the watchdog and reports.
        queue.answered.fetch_add(1, Ordering::Relaxed);
        self.served.fetch_add(1, Ordering::Relaxed);
        let sqe = opcode::UringCmd80::new(types::Fixed(0), CMD_COMMIT_AND_FETCH)
            .cmd(command(commit_id, qid))
            .build()
            .user_data(user_data(qid, index));
        // A thread of the queue submits it with its next wait (or wakes the
        // reaper before it waits for the reaping lock or stands by:
        // `serve_queue`); any other thread wakes the reaper.
        let home = HOME.get() == Some((std::ptr::from_ref(self) as usize, qid));
        if let Err(e) = self.push(qid, &sqe, home) {
            // The entry is lost to its queue; the kernel ends its request
            // at the unmount.
            eprintln!("lockref-fuse: a ring commit failed: {e}");
        }
    }

    fn ended(&self) {
        *lock(&self.running) -= 1;
        self.ended.notify_all();
    }

    /// Waits until every thread has ended (with the connection).
    pub(crate) fn join(&self) {
        let mut running = lock(&self.running);
        while *running > 0 {
            running = self.ended.wait(running).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Starts the rings' threads: one per queue, which registers its entries,
/// and the watchdog.
pub(crate) fn start<T: InodeTable>(shared: &Arc<Shared<T>>) -> io::Result<()> {
    for qid in 0..shared.queues() {
        let qid = u16::try_from(qid).expect("fewer than 65,536 CPUs");
        spawn_server(shared, qid, true)?;
    }
    *lock(&shared.running) += 1;
    let watched = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("lockref-fuse-ring-watchdog".into())
        .spawn(move || watch(&watched));
    if let Err(e) = spawned {
        shared.ended();
        return Err(e);
    }
    Ok(())
}

/// Adds a thread to queue `qid`, as one waiting to reap: one on standby
/// if there is one, else a new one.
fn add_server<T: InodeTable>(shared: &Arc<Shared<T>>, qid: u16) -> io::Result<()> {
    let queue = &shared.queues[usize::from(qid)];
    if queue.crew.call() || queue.crew.threads() >= shared.max_threads {
        return Ok(());
    }
    spawn_server(shared, qid, false)
}

/// Adds a new thread to queue `qid`, as one waiting to reap.
fn spawn_server<T: InodeTable>(
    shared: &Arc<Shared<T>>,
    qid: u16,
    register: bool,
) -> io::Result<()> {
    let queue = &shared.queues[usize::from(qid)];
    queue.crew.join();
    *lock(&shared.running) += 1;
    let serving = shared.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("lockref-fuse-ring-{qid}"))
        .spawn(move || serve_queue(&serving, qid, register));
    if let Err(e) = spawned {
        queue.crew.leave(true);
        shared.ended();
        return Err(e);
    }
    Ok(())
}

/// Polls queue `qid`'s wake eventfd on its ring (multishot: one
/// completion per wake, until the kernel ends it).
fn arm_wake<T: InodeTable>(shared: &Shared<T>, qid: u16) {
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
fn register<T: InodeTable>(shared: &Shared<T>, qid: u16) {
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

/// Serves queue `qid` on this thread (the module's text) until the
/// connection ends.
fn serve_queue<T: InodeTable>(shared: &Arc<Shared<T>>, qid: u16, register_entries: bool) {
    pin_to_cpu(usize::from(qid));
    HOME.set(Some((Arc::as_ptr(shared) as usize, qid)));
    let queue = &shared.queues[usize::from(qid)];
    if register_entries {
        register(shared, qid);
    }
    loop {
        // This thread is counted a reaper here.
        let reaping = match queue.reaping.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                // Another thread waits on the ring: it submits what this
                // one pushed, now.
                let _ = queue.wake.write(1);
                lock(&queue.reaping)
            }
        };
        let reaped = reap(shared, qid);
        drop(reaping);
        queue.crew.took();
        let Some((ud, result)) = reaped else {
            break;
        };
        let index = (ud & 0xffff_ffff) as usize;
        if result < 0 {
            // The connection ended (`ENOTCONN`), or the kernel refused the
            // entry (io_uring off: `EOPNOTSUPP`): neither the kernel's nor
            // ours to commit again.
            if queue.live.fetch_sub(1, Ordering::Relaxed) == 1 {
                // The last: the threads on standby end too.
                queue.crew.wake_all();
            }
            if result != -libc::ENOTCONN {
                eprintln!(
                    "lockref-fuse: ring {qid}: an entry ended: {} (/dev/fuse serves)",
                    io::Error::from_raw_os_error(-result)
                );
            }
        } else {
            serve(shared, qid, index);
        }
        if queue.crew.reap_again() {
            continue;
        }
        // Another thread reaps: it submits what this one pushed (woken
        // for it); this one waits on standby.
        let _ = queue.wake.write(1);
        // Relaxed: the last decrement is followed by `wake_all`, whose
        // lock orders it before this load.
        let ended = || queue.live.load(Ordering::Relaxed) == 0;
        if !queue.crew.stand_by(ended) {
            break;
        }
    }
    queue.crew.leave(false);
    shared.ended();
}

/// Waits for and takes one request of queue `qid` (an entry's
/// completion), submitting what was pushed; `None` once none can come
/// (every entry ended) or the ring failed. Wakes are taken here.
fn reap<T: InodeTable>(shared: &Shared<T>, qid: u16) -> Option<(u64, i32)> {
    let queue = &shared.queues[usize::from(qid)];
    loop {
        // SAFETY: only the holder of the reaping lock reads completions.
        let next = unsafe { queue.ring.completion_shared() }.next();
        if let Some(c) = next {
            if c.user_data() != WAKE {
                return Some((c.user_data(), c.result()));
            }
            // A wake: what was pushed is submitted by the wait below.
            let _ = queue.wake.read();
            if !cqueue::more(c.flags()) && queue.live.load(Ordering::Relaxed) > 0 {
                arm_wake(shared, qid);
            }
            continue;
        }
        // Relaxed: every decrement is made by a holder of the reaping
        // lock, which this thread holds.
        if queue.live.load(Ordering::Relaxed) == 0 {
            return None;
        }
        match queue.ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("lockref-fuse: ring {qid} stops: {e}");
                // Commands may still be with the kernel: their buffers
                // must outlive them, so nothing of the rings is freed.
                queue.live.store(0, Ordering::Relaxed);
                queue.crew.wake_all();
                return None;
            }
        }
    }
}

/// The watchdog: every [`STALL_TICK`] (every [`IDLE_TICK`] once idle),
/// adds a thread to each queue whose threads are all answering, none done
/// since the last tick; ends with the rings.
fn watch<T: InodeTable>(shared: &Arc<Shared<T>>) {
    let mut last: Vec<u64> = vec![u64::MAX; shared.queues()];
    let mut idle_ticks = 0;
    loop {
        let tick = if idle_ticks >= IDLE_TICKS {
            IDLE_TICK
        } else {
            STALL_TICK
        };
        {
            let running = lock(&shared.running);
            let _ = shared.ended.wait_timeout(running, tick);
        }
        // Relaxed: a stale count costs a tick.
        if shared
            .queues
            .iter()
            .all(|q| q.live.load(Ordering::Relaxed) == 0)
        {
            break;
        }
        let mut busy = false;
        for (qid, queue) in shared.queues.iter().enumerate() {
            let answered = queue.answered.load(Ordering::Relaxed);
            let unreaped = queue.crew.reapers() == 0;
            let stalled =
                queue.live.load(Ordering::Relaxed) > 0 && unreaped && answered == last[qid];
            busy |= unreaped || answered != last[qid];
            last[qid] = answered;
            if stalled {
                let qid = u16::try_from(qid).expect("fewer than 65,536 CPUs");
                if let Err(e) = add_server(shared, qid) {
                    eprintln!("lockref-fuse: ring {qid}: no thread added: {e}");
                }
            }
        }
        idle_ticks = if busy { 0 } else { idle_ticks + 1 };
    }
    shared.ended();
}

/// Answers entry `index` of queue `qid` in its user's turn (as
/// `server.rs`'s `in_turn!`): at once, or on the thread that ends a turn
/// when this user's comes.
fn serve<T: InodeTable>(shared: &Arc<Shared<T>>, qid: u16, index: usize) {
    let entry = &shared.queues[usize::from(qid)].entries[index];
    // SAFETY: as in `Shared::answer`: the entry is this thread's; only its
    // header is read, and the reference ends here.
    let uid = caller(&Request::in_header_of(unsafe { &*entry.header })).uid;
    let fs = &shared.fs;
    match fs.shares.admit(uid) {
        Some(turn) => {
            shared.answer(qid, index);
            serve_waiting(fs, turn);
        }
        None => {
            let held = shared.clone();
            let waiting: Waiting<T> = Box::new(move |_| held.answer(qid, index));
            if let Some((turn, request)) = fs.shares.wait(uid, waiting) {
                request(fs);
                serve_waiting(fs, turn);
            }
        }
    }
}

/// Keeps this thread on CPU `cpu`, where the kernel queues the requests
/// of queue `cpu`; left unpinned where the CPU is not this process's.
fn pin_to_cpu(cpu: usize) {
    use nix::sched::{sched_setaffinity, CpuSet};
    let mut set = CpuSet::new();
    if set.set(cpu).is_ok() {
        let _ = sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
}
