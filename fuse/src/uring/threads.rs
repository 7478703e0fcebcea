//! The rings' threads. Each queue is served by one thread pinned to its CPU, leader and
//! followers: the thread holding the queue's reaping lock waits for and
//! takes one completion, lets the lock go, answers the request, and takes
//! the lock again. A request the host is slow to answer would hold its
//! CPU's queue (the kernel sends a CPU's requests only to its own queue),
//! so a watchdog (`watchdog.rs`) adds a thread to a queue whose threads have
//! all been answering for a tick with none done (one on standby, or a new
//! one), up to the share's thread count and one; a thread that finds
//! another waiting to reap when it is done goes to standby. Unstalled, a
//! queue is one thread and one system call per request.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, TryLockError};

use io_uring::cqueue;

use super::queue::{arm_wake, lock, register, Shared, HOME, WAKE};
use super::watchdog::watch;
use crate::dispatch::caller;
use crate::fs::Waiting;
use crate::table::InodeTable;
use crate::turns::in_turn;
use crate::wire::Request;

/// Starts the rings' threads: one per queue, which registers its entries,
/// and the watchdog.
pub(crate) fn start<T: InodeTable>(shared: &Arc<Shared<T>>) -> io::Result<()> {
    for qid in 0..shared.queues() {
        let qid = u16::try_from(qid).expect("fewer than 65,536 CPUs");
        spawn_server(shared, qid, true)?;
    }
    shared.running.begin();
    let (watched, running) = (shared.clone(), shared.running.clone());
    let spawned = std::thread::Builder::new()
        .name("lockref-fuse-ring-watchdog".into())
        .spawn(move || {
            watch(&watched);
            // Counted until nothing of the thread holds the rings.
            drop(watched);
            running.end();
        });
    if let Err(e) = spawned {
        shared.running.end();
        return Err(e);
    }
    Ok(())
}

/// Adds a thread to queue `qid`, as one waiting to reap: one on standby
/// if there is one, else a new one.
pub(super) fn add_server<T: InodeTable>(shared: &Arc<Shared<T>>, qid: u16) -> io::Result<()> {
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
    shared.running.begin();
    let (serving, running) = (shared.clone(), shared.running.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("lockref-fuse-ring-{qid}"))
        .spawn(move || {
            serve_queue(&serving, qid, register);
            // Counted until nothing of the thread holds the rings.
            drop(serving);
            running.end();
        });
    if let Err(e) = spawned {
        queue.crew.leave(true);
        shared.running.end();
        return Err(e);
    }
    Ok(())
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

/// Answers entry `index` of queue `qid` in its user's turn
/// (`turns.rs`).
fn serve<T: InodeTable>(shared: &Arc<Shared<T>>, qid: u16, index: usize) {
    let entry = &shared.queues[usize::from(qid)].entries[index];
    // SAFETY: as in `Shared::answer`: the entry is this thread's; only its
    // header is read, and the reference ends here.
    let uid = caller(&Request::in_header_of(unsafe { &*entry.header })).uid;
    in_turn(
        &shared.fs,
        uid,
        (),
        |()| shared.answer(qid, index),
        |()| {
            let held = shared.clone();
            let waiting: Waiting<T> = Box::new(move |_| held.answer(qid, index));
            waiting
        },
    );
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
