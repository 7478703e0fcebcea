//! A will-it-scale style harness over the lockref dcache: each seed's
//! before and after, measured in one run, at 1 thread and at every CPU by
//! default, or swept 1..N on a many-core machine. See the README and
//! `wis --help`.

pub mod compare;
pub mod cpus;
pub mod options;
pub mod plot;
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
    if cfg.progress {
        writeln!(out, "{}", runner::PROGRESS_HEADER).map_err(RunError::Io)?;
    }
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
/// (every seed), writing progress to `out`.
///
/// First, on one thread, two passes over the whole trace, each from the
/// tree the recorded run started from (what a pass creates is removed
/// after it): the recorded results either pass did not reproduce are
/// reported once, grouped by reason, and the second pass must differ
/// exactly as the first (every pass reproduces the trace). Then the timed
/// runs: each worker loops over the trace from its own starting point,
/// removing what it created at the end of each of its passes; with
/// several workers their passes overlap, so results are not checked there.
///
/// # Errors
///
/// As [`run_testcases`]; [`RunError::Replay`] if the second pass differs
/// from the first.
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
        let tree = trace::populate(&cache, ops).map_err(RunError::Op)?;
        let first = trace::verify_pass(&cache, &tree, ops);
        let second = trace::verify_pass(&cache, &tree, ops);
        let differing: usize = first.values().map(|(n, _)| n).sum();
        writeln!(
            out,
            "replay: {} operations from a tree of {} directories and {} files; {} differ from the recorded results on every pass{}",
            ops.len(),
            tree.dirs.len(),
            tree.files.len(),
            differing,
            if differing == 0 { "" } else { ":" }
        )
        .map_err(RunError::Io)?;
        for ((op, recorded, replayed), (n, path)) in &first {
            writeln!(
                out,
                "  {n:>6}  {op}: recorded {recorded}, replayed {replayed} (first: {path}): {}",
                trace::difference_reason(recorded, replayed)
            )
            .map_err(RunError::Io)?;
        }
        if second != first {
            return Err(RunError::Replay(
                "the second pass differed from the first: a pass did not put the tree back".into(),
            ));
        }
    }
    if cfg.progress {
        writeln!(out, "{}", runner::PROGRESS_HEADER).map_err(RunError::Io)?;
    }
    for &threads in &opts.threads {
        for (name, variants) in [("before", Variants::BEFORE), ("after", Variants::AFTER)] {
            let cache = Dcache::new(Config {
                variants,
                ..Config::default()
            });
            let tree = trace::populate(&cache, ops).map_err(RunError::Op)?;
            let m = runner::run(
                ("replay", name),
                threads,
                &cfg,
                out,
                |t| {
                    Ok((
                        std::cell::Cell::new(t * ops.len() / threads.max(1)),
                        std::cell::RefCell::new(trace::Pass::new(&tree)),
                    ))
                },
                |(next, pass)| {
                    let i = next.get() % ops.len();
                    next.set(i + 1);
                    let mut pass = pass.borrow_mut();
                    let _ = pass.step(&cache, &ops[i]);
                    if i + 1 == ops.len() {
                        pass.finish(&cache);
                    }
                    Ok(())
                },
            )?;
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
