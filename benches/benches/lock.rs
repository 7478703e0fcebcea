//! The lock under contention: lock, a small critical section (a few
//! writes), unlock, at 1 to 8 threads on however many CPUs the machine has
//! (on a 2-CPU machine, 4 and 8 threads outnumber the CPUs, as a busy
//! server's threads do). `LockRef`'s lock (spins a while, then sleeps in
//! `parking_lot_core`) beside `parking_lot::Mutex`, `std::sync::Mutex`, a
//! lockref on the `Spin` park (waiters never sleep: the lock before it
//! parked, less its FIFO order) and `spin`'s ticket mutex (FIFO, spinning:
//! the lock before this one), all in one run. The summary gives M/s in
//! total and each as a ratio of `parking_lot::Mutex`.
//!
//! `cargo bench -p lockref-benches --bench lock`

use std::hint::black_box;

use criterion::Criterion;
use lockref::park::Spin;
use lockref::policy::KernelRetry;
use lockref::{CasWord, LockRef};
use lockref_benches::{contended, criterion, machine, mops, ratio, Registry, Table};

static REG: Registry = Registry::new();

/// The thread counts measured.
const THREADS: [usize; 4] = [1, 2, 4, 8];

/// The critical section: a few writes to the guarded data.
#[inline(always)]
fn section(data: &mut [u64; 4]) {
    for (i, slot) in data.iter_mut().enumerate() {
        *slot = slot.wrapping_add(i as u64 + 1);
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

/// The locks compared, by the name each row shows.
const LOCKS: [&str; 5] = [
    "lockref",
    "lockref (Spin)",
    "parking_lot",
    "std",
    "spin ticket",
];

fn main() {
    let mut c = criterion(200, 800, 10);
    let lockref = LockRef::new([0_u64; 4]);
    let spinning = LockRef::with_raw([0_u64; 4], CasWord::<KernelRetry, Spin>::new());
    let parking = parking_lot::Mutex::new([0_u64; 4]);
    let std_mutex = std::sync::Mutex::new([0_u64; 4]);
    let ticket = spin::mutex::TicketMutex::<_>::new([0_u64; 4]);
    for threads in THREADS {
        // Each lock in turn at this thread count, so that a slow phase of
        // the machine falls on all of them.
        run(&mut c, &format!("lockref x{threads}"), threads, || {
            section(&mut black_box(&lockref).lock());
        });
        run(
            &mut c,
            &format!("lockref (Spin) x{threads}"),
            threads,
            || {
                section(&mut black_box(&spinning).lock());
            },
        );
        run(&mut c, &format!("parking_lot x{threads}"), threads, || {
            section(&mut black_box(&parking).lock());
        });
        run(&mut c, &format!("std x{threads}"), threads, || {
            section(&mut black_box(&std_mutex).lock().unwrap());
        });
        run(&mut c, &format!("spin ticket x{threads}"), threads, || {
            section(&mut black_box(&ticket).lock());
        });
    }
    c.final_summary();
    let mut columns = vec!["threads".to_string()];
    columns.extend(LOCKS.iter().map(|l| format!("{l} M/s")));
    columns.extend(
        LOCKS
            .iter()
            .filter(|&&l| l != "parking_lot")
            .map(|l| format!("{l} / parking_lot")),
    );
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = Table::new(
        &format!("Lock + small section + unlock, in total ({})", machine()),
        &columns,
    );
    for threads in THREADS {
        let total = |k: &str| {
            REG.tally_of(&format!("{k} x{threads}"))
                .map_or(f64::NAN, |t| t.total())
        };
        let mut row = vec![threads.to_string()];
        row.extend(LOCKS.iter().map(|l| mops(total(l))));
        row.extend(
            LOCKS
                .iter()
                .filter(|&&l| l != "parking_lot")
                .map(|l| ratio(total(l) / total("parking_lot"))),
        );
        t.row(row);
    }
    t.emit("lock");
}
