//! What the benchmarks share: one "get + put" operation per contender, a
//! contended runner in the background-threads pattern, and a registry of
//! samples that turns criterion's runs into ratio tables.
//!
//! Every table is computed from samples taken in the same process run, so
//! ratios compare like with like on a noisy machine.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use lockref::experimental::AddWord;
use lockref::policy::{ExpBackoff, KernelRetry, WaitUnlock};
use lockref::CasWord;

pub use lockref_measure::{machine, AddWordGetPut, CountedRefGetPut, Floor, GetPut, LockRefGetPut};

/// `Arc::clone` + drop.
pub struct ArcRc(pub Arc<()>);

impl GetPut for ArcRc {
    #[inline]
    fn get_put(&self) {
        drop(black_box(self.0.clone()));
    }
}

macro_rules! mutex_contender {
    ($name:ident, $ty:ty, |$m:ident| $lock:expr) => {
        /// Increment and decrement a `u32` under a mutex.
        pub struct $name(pub $ty);

        impl GetPut for $name {
            #[inline]
            fn get_put(&self) {
                let $m = &self.0;
                *$lock += 1;
                *$lock -= 1;
            }
        }
    };
}

mutex_contender!(ParkingLot, parking_lot::Mutex<u32>, |m| m.lock());
mutex_contender!(SpinMutex, spin::mutex::SpinMutex<u32>, |m| m.lock());
mutex_contender!(SpinTicket, spin::mutex::TicketMutex<u32>, |m| m.lock());
mutex_contender!(StdMutex, std::sync::Mutex<u32>, |m| m.lock().unwrap());

/// Every contender a table compares, by name. The first is the baseline.
pub fn contenders() -> Vec<(&'static str, Box<dyn GetPut>)> {
    vec![
        ("floor fetch_add+fetch_sub", Box::new(Floor::new())),
        (
            "LockRef<KernelRetry>",
            Box::new(LockRefGetPut::<CasWord<KernelRetry>>::new()),
        ),
        (
            "LockRef<WaitUnlock>",
            Box::new(LockRefGetPut::<CasWord<WaitUnlock>>::new()),
        ),
        (
            "LockRef<ExpBackoff>",
            Box::new(LockRefGetPut::<CasWord<ExpBackoff>>::new()),
        ),
        ("LockRef<AddWord> get+put", Box::new(AddWordGetPut::new())),
        (
            "CountedRef clone+drop",
            Box::new(CountedRefGetPut::<CasWord, false>::new()),
        ),
        (
            "CountedRef clone+drop (grace)",
            Box::new(CountedRefGetPut::<CasWord, true>::new()),
        ),
        (
            "CountedRef<AddWord> clone+drop (grace)",
            Box::new(CountedRefGetPut::<AddWord, true>::new()),
        ),
        ("Arc clone+drop", Box::new(ArcRc(Arc::new(())))),
        (
            "parking_lot::Mutex<u32>",
            Box::new(ParkingLot(parking_lot::Mutex::new(0))),
        ),
        (
            "spin::SpinMutex<u32>",
            Box::new(SpinMutex(spin::mutex::SpinMutex::new(0))),
        ),
        (
            "spin::TicketMutex<u32>",
            Box::new(SpinTicket(spin::mutex::TicketMutex::new(0))),
        ),
        (
            "std::sync::Mutex<u32>",
            Box::new(StdMutex(std::sync::Mutex::new(0))),
        ),
    ]
}

/// Operations each thread did and the time it ran, summed over samples.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Per thread: (operations, seconds).
    pub threads: Vec<(u64, f64)>,
}

impl Tally {
    fn add(&mut self, per_thread: &[(u64, f64)]) {
        if self.threads.len() < per_thread.len() {
            self.threads.resize(per_thread.len(), (0, 0.0));
        }
        for (acc, (ops, secs)) in self.threads.iter_mut().zip(per_thread) {
            acc.0 += ops;
            acc.1 += secs;
        }
    }

    /// Operations per second of each thread.
    pub fn rates(&self) -> Vec<f64> {
        self.threads
            .iter()
            .map(|&(ops, secs)| if secs > 0.0 { ops as f64 / secs } else { 0.0 })
            .collect()
    }

    /// Total operations per second (sum of the threads' rates).
    pub fn total(&self) -> f64 {
        self.rates().iter().sum()
    }

    /// Slowest and fastest thread, operations per second; `None` for an
    /// empty tally.
    pub fn min_max(&self) -> Option<(f64, f64)> {
        lockref_measure::min_max(&self.rates())
    }
}

/// Samples of one benchmark: nanoseconds per operation of the timed thread
/// (uncontended), or per-thread tallies (contended).
#[derive(Default)]
pub struct Registry {
    ns_per_op: Mutex<BTreeMap<String, Vec<f64>>>,
    tallies: Mutex<BTreeMap<String, Tally>>,
}

impl Registry {
    /// An empty registry.
    pub const fn new() -> Self {
        Registry {
            ns_per_op: Mutex::new(BTreeMap::new()),
            tallies: Mutex::new(BTreeMap::new()),
        }
    }

    /// Records one sample of `iters` operations taking `elapsed`.
    pub fn sample(&self, id: &str, iters: u64, elapsed: Duration) {
        let ns = elapsed.as_nanos() as f64 / iters.max(1) as f64;
        self.ns_per_op
            .lock()
            .unwrap()
            .entry(id.into())
            .or_default()
            .push(ns);
    }

    /// The median nanoseconds per operation of `id`.
    pub fn median_ns(&self, id: &str) -> Option<f64> {
        let map = self.ns_per_op.lock().unwrap();
        let mut v = map.get(id)?.clone();
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }

    /// Adds a contended sample's per-thread counts.
    pub fn tally(&self, id: &str, per_thread: &[(u64, f64)]) {
        self.tallies
            .lock()
            .unwrap()
            .entry(id.into())
            .or_default()
            .add(per_thread);
    }

    /// The tally of `id`.
    pub fn tally_of(&self, id: &str) -> Option<Tally> {
        self.tallies.lock().unwrap().get(id).cloned()
    }
}

/// Times `iters` operations of `c` on this thread.
#[inline(never)]
pub fn time_ops(c: &dyn GetPut, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        c.get_put();
    }
    start.elapsed()
}

/// The background-threads pattern: `threads - 1` threads loop on `op`
/// from a common start until told to stop, counting their operations and
/// their time; this thread times `iters` operations. Returns this thread's
/// time (what criterion sees) and every thread's (operations, seconds).
///
/// `op` gets the thread's index: 0 for the timed thread, 1.. for the
/// others.
pub fn contended<F>(threads: usize, iters: u64, op: F) -> (Duration, Vec<(u64, f64)>)
where
    F: Fn(usize) + Sync,
{
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads);
    thread::scope(|s| {
        let (op, stop, start) = (&op, &stop, &start);
        let background: Vec<_> = (1..threads)
            .map(|idx| {
                s.spawn(move || {
                    start.wait();
                    let t0 = Instant::now();
                    let mut ops = 0_u64;
                    while !stop.load(Ordering::Relaxed) {
                        // 16 at a time: the flag is read rarely.
                        for _ in 0..16 {
                            op(idx);
                        }
                        ops += 16;
                    }
                    (ops, t0.elapsed().as_secs_f64())
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        for _ in 0..iters {
            op(0);
        }
        let elapsed = t0.elapsed();
        stop.store(true, Ordering::Relaxed);
        let mut per_thread = vec![(iters, elapsed.as_secs_f64())];
        per_thread.extend(background.into_iter().map(|h| h.join().unwrap()));
        (elapsed, per_thread)
    })
}

/// A small Markdown table builder that also writes CSV beside it.
pub struct Table {
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with a title and column names.
    pub fn new(title: &str, header: &[&str]) -> Self {
        Table {
            title: title.into(),
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Prints the table and writes `target/bench-results/<file>.csv`.
    pub fn emit(&self, file: &str) {
        let mut out = String::new();
        let _ = writeln!(out, "\n### {}\n", self.title);
        let _ = writeln!(out, "| {} |", self.header.join(" | "));
        let _ = writeln!(out, "|{}|", vec!["---"; self.header.len()].join("|"));
        for r in &self.rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        println!("{out}");
        let dir = results_dir();
        let _ = std::fs::create_dir_all(&dir);
        let mut csv = self.header.join(",") + "\n";
        for r in &self.rows {
            csv += &(r
                .iter()
                .map(|c| c.replace(',', ";"))
                .collect::<Vec<_>>()
                .join(",")
                + "\n");
        }
        let _ = std::fs::write(dir.join(format!("{file}.csv")), csv);
        let _ = std::fs::write(dir.join(format!("{file}.md")), out);
    }
}

/// Where tables are saved: `<workspace>/target/bench-results`.
pub fn results_dir() -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("bench-results")
}

/// Formats operations per second as millions.
pub fn mops(x: f64) -> String {
    format!("{:.1}", x / 1e6)
}

/// Formats a ratio.
pub fn ratio(x: f64) -> String {
    format!("{x:.2}x")
}

/// Criterion configured for short runs on a small machine: `warm_up` and
/// `measure` milliseconds, `samples` samples, then the command line.
pub fn criterion(warm_up: u64, measure: u64, samples: usize) -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(Duration::from_millis(warm_up))
        .measurement_time(Duration::from_millis(measure))
        .sample_size(samples)
        .configure_from_args()
}
