//! Runs a loop body on N pinned workers and samples their counters, as
//! will-it-scale's main loop does.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use lockref_dcache::Errno;

/// How long and how to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunConfig {
    /// Measured time per run.
    pub duration: Duration,
    /// Time run before measuring.
    pub warmup: Duration,
    /// Pin worker `i` to the `i`-th CPU of [`cpus::worker_cpus`]
    /// (around again past the last).
    pub pin: bool,
    /// Busy neighbour threads that spin beside the workers, unpinned.
    pub background: usize,
    /// Print the per-tick min/max/total lines.
    pub progress: bool,
}

/// One run's result (and one element of the JSON's `results`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    /// Testcase name.
    pub testcase: String,
    /// Variant name.
    pub variant: String,
    /// Worker threads.
    pub threads: usize,
    /// Operations per second, all workers, averaged over the duration.
    pub total: f64,
    /// The slowest worker's operations per second.
    pub min: f64,
    /// The fastest worker's operations per second.
    pub max: f64,
    /// The share of the machine's CPU time that was idle during the
    /// measured time, in percent (`/proc/stat`); `None` where it cannot be
    /// read.
    pub idle_percent: Option<f64>,
    /// Of several rounds (`-r`), the slowest one's total ops/s; the
    /// run's own total for a single run. A round far below the median
    /// (under half) is a convoy, or a machine busy with something else.
    #[serde(default)]
    pub slowest_round: f64,
}

/// Why a run failed.
#[derive(Debug)]
pub enum RunError {
    /// A loop body's operation failed.
    Op(Errno),
    /// Writing progress failed.
    Io(std::io::Error),
    /// A worker could not be pinned.
    Pin(cpus::PinError),
    /// A trace's replay did not reproduce itself.
    Replay(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Op(e) => write!(f, "loop body failed: {e}"),
            RunError::Io(e) => write!(f, "writing output: {e}"),
            RunError::Pin(e) => write!(f, "{e}"),
            RunError::Replay(e) => write!(f, "replay: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

use crate::cpus;

/// The line printed before the per-tick lines (unless `-q`): what their
/// columns are.
pub const PROGRESS_HEADER: &str = "# per tick (250 ms): testcase, variant, worker threads; \
min/max: the slowest and the fastest worker's ops/s; total: all workers' ops/s";

/// Runs `body(worker)` in a loop on `threads` workers, each first built by
/// `make(worker)`, for `cfg.warmup` then `cfg.duration`, printing one line
/// per tick (a quarter second, or less for short runs).
pub fn run<W, M, B>(
    label: (&str, &str),
    threads: usize,
    cfg: &RunConfig,
    out: &mut dyn Write,
    make: M,
    body: B,
) -> Result<Measurement, RunError>
where
    M: Fn(usize) -> Result<W, Errno> + Sync,
    B: Fn(&W) -> Result<(), Errno> + Sync,
{
    let counters: Vec<CachePadded<AtomicU64>> = (0..threads)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect();
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<RunError>> = Mutex::new(None);
    let placement = if cfg.pin {
        cpus::worker_cpus()
    } else {
        Vec::new()
    };
    let result = thread::scope(|s| {
        for _ in 0..cfg.background {
            let stop = &stop;
            s.spawn(move || {
                let mut x = 1_u64;
                // Relaxed: the flag only ends the loop.
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1024 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                        );
                    }
                }
            });
        }
        for t in 0..threads {
            let (counters, stop, failure, make, body) = (&counters, &stop, &failure, &make, &body);
            let cpu = (!placement.is_empty()).then(|| placement[t % placement.len()]);
            s.spawn(move || {
                let fail = |e| {
                    *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    stop.store(true, Ordering::Relaxed);
                };
                if let Some(cpu) = cpu {
                    if let Err(e) = cpus::pin_to(cpu) {
                        return fail(RunError::Pin(e));
                    }
                }
                let worker = match make(t) {
                    Ok(w) => w,
                    Err(e) => return fail(RunError::Op(e)),
                };
                // Relaxed: the flag only ends the loop; counters are read
                // as totals.
                while !stop.load(Ordering::Relaxed) {
                    if let Err(e) = body(&worker) {
                        return fail(RunError::Op(e));
                    }
                    counters[t].fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let snapshot = || {
            counters
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect::<Vec<u64>>()
        };
        thread::sleep(cfg.warmup);
        let start = snapshot();
        let cpu_start = cpus::CpuTimes::now();
        let t0 = Instant::now();
        let tick = Duration::from_millis(250).min(cfg.duration.max(Duration::from_millis(1)));
        let mut last = start.clone();
        let mut last_t = t0;
        let mut io = Ok(());
        while t0.elapsed() < cfg.duration && !stop.load(Ordering::Relaxed) {
            thread::sleep(
                tick.min(cfg.duration.saturating_sub(t0.elapsed()))
                    .max(Duration::from_millis(1)),
            );
            let now = snapshot();
            let secs = last_t.elapsed().as_secs_f64();
            last_t = Instant::now();
            if cfg.progress {
                let rates = rates(&now, &last, secs);
                let (min, max) = lockref_measure::min_max(&rates).unwrap_or((0.0, 0.0));
                io = io.and_then(|()| {
                    writeln!(
                        out,
                        "{:<10} {:<16} {threads:>3} threads  min:{:>12.0} max:{:>12.0} total:{:>13.0}",
                        label.0,
                        label.1,
                        min,
                        max,
                        rates.iter().sum::<f64>()
                    )
                });
            }
            last = now;
        }
        let end = snapshot();
        let secs = t0.elapsed().as_secs_f64();
        let idle = cpu_start
            .zip(cpus::CpuTimes::now())
            .and_then(|(a, b)| a.idle_percent(b));
        stop.store(true, Ordering::Relaxed);
        io.map(|()| (start, end, secs, idle))
    });
    if let Some(e) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let (start, end, secs, idle_percent) = result.map_err(RunError::Io)?;
    let rates = rates(&end, &start, secs);
    let (min, max) = lockref_measure::min_max(&rates).unwrap_or((0.0, 0.0));
    let total = rates.iter().sum();
    Ok(Measurement {
        testcase: label.0.into(),
        variant: label.1.into(),
        threads,
        total,
        min,
        max,
        idle_percent,
        slowest_round: total,
    })
}

/// Each worker's operations per second between two counter snapshots.
fn rates(now: &[u64], then: &[u64], secs: f64) -> Vec<f64> {
    now.iter()
        .zip(then)
        .map(|(n, t)| (n - t) as f64 / secs)
        .collect()
}
