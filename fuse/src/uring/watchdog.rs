//! The rings' watchdog: a request the host is slow to answer would hold
//! its CPU's queue (the kernel sends a CPU's requests only to its own
//! queue), so every tick the watchdog adds a thread to a queue whose
//! threads have all been answering with none done: one on standby, or a
//! new one, up to the share's thread count and one (`threads.rs`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::queue::Shared;
use super::threads::add_server;
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

/// The watchdog: every [`STALL_TICK`] (every [`IDLE_TICK`] once idle),
/// adds a thread to each queue whose threads are all answering, none done
/// since the last tick; ends with the rings.
pub(super) fn watch<T: InodeTable>(shared: &Arc<Shared<T>>) {
    let mut last: Vec<u64> = vec![u64::MAX; shared.queues()];
    let mut idle_ticks = 0;
    loop {
        let tick = if idle_ticks >= IDLE_TICKS {
            IDLE_TICK
        } else {
            STALL_TICK
        };
        shared.running.sleep(tick);
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
}
