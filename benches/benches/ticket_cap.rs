//! The cost of the ticket cap: `LockRef`'s lock, whose ticket is drawn by a
//! compare-and-swap that refuses to pass 65 535 tickets out, against the
//! same ticket lock drawing with a bare `fetch_add` (the draw before the
//! cap, which wraps at 65 536 waiters), uncontended and at 2 and 4
//! threads, lock + unlock each time.
//!
//! `cargo bench -p lockref-benches --bench ticket_cap`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::Criterion;
use lockref::LockRef;
use lockref_benches::{contended, criterion, machine, mops, ratio, Registry, Table};

static REG: Registry = Registry::new();

/// The uncapped draw: a ticket lock in the top half of a word, as
/// `LockRef`'s, with `fetch_add` to draw (the baseline).
struct FetchAddTicketLock(AtomicU64);

impl FetchAddTicketLock {
    fn lock(&self) -> u16 {
        let old = (self.0.fetch_add(1 << 48, Ordering::Acquire) >> 32) as u32;
        let ticket = (old >> 16) as u16;
        while ((self.0.load(Ordering::Acquire) >> 32) as u16) != ticket {
            std::hint::spin_loop();
        }
        ticket
    }

    fn unlock(&self, ticket: u16) {
        let delta = u32::from(ticket.wrapping_add(1)).wrapping_sub(u32::from(ticket));
        self.0.fetch_add(u64::from(delta) << 32, Ordering::Release);
    }
}

fn run(c: &mut Criterion, id: &str, threads: usize, op: impl Fn() + Sync) {
    c.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let (elapsed, per_thread) = contended(threads, iters, |_| op());
            REG.tally(id, &per_thread);
            elapsed
        })
    });
}

fn main() {
    let mut c = criterion(200, 800, 10);
    let capped = LockRef::new(0_u64);
    let uncapped = FetchAddTicketLock(AtomicU64::new(0));
    for threads in [1, 2, 4] {
        run(&mut c, &format!("capped x{threads}"), threads, || {
            *black_box(&capped).lock() += 1;
        });
        run(&mut c, &format!("fetch_add x{threads}"), threads, || {
            let t = black_box(&uncapped).lock();
            uncapped.unlock(t);
        });
    }
    c.final_summary();
    let mut t = Table::new(
        &format!("Ticket cap: lock + unlock, M/s in total ({})", machine()),
        &[
            "threads",
            "fetch_add draw (no cap)",
            "CAS draw with cap",
            "capped / uncapped",
        ],
    );
    for threads in [1, 2, 4] {
        let total = |k: &str| {
            REG.tally_of(&format!("{k} x{threads}"))
                .map_or(f64::NAN, |t| t.total())
        };
        t.row(vec![
            threads.to_string(),
            mops(total("fetch_add")),
            mops(total("capped")),
            ratio(total("capped") / total("fetch_add")),
        ]);
    }
    t.emit("ticket-cap");
}
