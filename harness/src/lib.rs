//! A will-it-scale style harness over the lockref dcache: each seed's
//! before and after, measured in one run, at 1 thread and at every CPU by
//! default, or swept 1..N on a many-core machine. See the README and
//! `wis --help`.

pub mod options;
pub mod report;
pub mod runner;
pub mod testcases;
pub mod trace;

use std::io::Write;

use lockref_dcache::{Config, Dcache, Variants};

use crate::options::Options;
use crate::runner::{Measurement, RunConfig, RunError};

/// Runs every selected testcase, variant and thread count, writing
/// progress to `out`. Returns the measurements in run order.
///
/// # Errors
///
/// A loop body that failed, or output that could not be written.
pub fn run_testcases(opts: &Options, out: &mut dyn Write) -> Result<Vec<Measurement>, RunError> {
    let cfg = opts.run_config();
    let mut results = Vec::new();
    for &tc in &opts.testcases {
        for &threads in &opts.threads {
            for (v, name) in tc.variants().iter().enumerate() {
                let mut runs = Vec::with_capacity(opts.repeat);
                for _ in 0..opts.repeat.max(1) {
                    let state = tc.setup(v, threads);
                    runs.push(runner::run(
                        (tc.name(), name),
                        threads,
                        &cfg,
                        out,
                        |t| tc.worker(&state, t),
                        |w| w.run_once(),
                    )?);
                }
                results.push(median(runs));
            }
        }
    }
    Ok(results)
}

/// Replays a trace with each thread count, before (no seed) and after
/// (every seed), writing progress to `out`. Also reports how many replayed
/// results differed from the trace's.
///
/// # Errors
///
/// As [`run_testcases`].
pub fn run_replay(
    ops: &[trace::Op],
    opts: &Options,
    out: &mut dyn Write,
) -> Result<Vec<Measurement>, RunError> {
    let cfg: RunConfig = opts.run_config();
    let mut results = Vec::new();
    if ops.is_empty() {
        return Ok(results);
    }
    {
        let cache = Dcache::new(Config::default());
        trace::populate(&cache, ops).map_err(RunError::Op)?;
        let diff = trace::first_pass_mismatches(&cache, ops);
        writeln!(
            out,
            "replay: {} operations; {} differ from the trace on a first pass",
            ops.len(),
            diff.len()
        )
        .map_err(RunError::Io)?;
        for (op, got) in diff.iter().take(10) {
            let got = got.map_or_else(|e| e.name().to_string(), |()| "0".into());
            writeln!(out, "  {op}  -> replayed {got}").map_err(RunError::Io)?;
        }
    }
    for &threads in &opts.threads {
        for (name, variants) in [("before", Variants::BEFORE), ("after", Variants::AFTER)] {
            let cache = Dcache::new(Config {
                variants,
                ..Config::default()
            });
            trace::populate(&cache, ops).map_err(RunError::Op)?;
            let mismatches = std::sync::atomic::AtomicU64::new(0);
            let m = runner::run(
                ("replay", name),
                threads,
                &cfg,
                out,
                |t| Ok(std::cell::Cell::new(t * ops.len() / threads.max(1))),
                |next: &std::cell::Cell<usize>| {
                    let i = next.get() % ops.len();
                    next.set(i + 1);
                    if !trace::replay_one(&cache, &ops[i]) {
                        mismatches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(())
                },
            )?;
            let mm = mismatches.into_inner();
            if mm > 0 {
                writeln!(
                    out,
                    "replay {name}: {mm} operations returned another result than the trace's"
                )
                .map_err(RunError::Io)?;
            }
            results.push(m);
        }
    }
    Ok(results)
}

/// The run with the median total of several runs of one configuration.
///
/// # Panics
///
/// Never for a non-empty `runs` (callers run at least once).
pub fn median(mut runs: Vec<Measurement>) -> Measurement {
    runs.sort_by(|a, b| a.total.total_cmp(&b.total));
    let mid = runs.len() / 2;
    runs.swap_remove(mid)
}

pub use lockref_measure::machine;
