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
            // Round-robin over the variants, `-r` rounds: a busy spell of
            // the machine falls on every variant alike, not on one.
            let variants = tc.variants();
            let mut runs: Vec<Vec<Measurement>> = variants.iter().map(|_| Vec::new()).collect();
            for _ in 0..opts.repeat.max(1) {
                for (v, name) in variants.iter().enumerate() {
                    let state = tc.setup(v, threads);
                    runs[v].push(runner::run(
                        (tc.name(), name),
                        threads,
                        &cfg,
                        out,
                        |t| tc.worker(&state, t),
                        |w| w.run_once(),
                    )?);
                }
            }
            results.extend(runs.into_iter().map(median));
        }
    }
    Ok(results)
}

/// Replays a trace with each thread count, before (no seed), with each
/// seed that reaches one of its operations alone, and after (every seed),
/// writing progress to `out`.
///
/// First, on one thread, two passes over the whole trace, each from the
/// tree the recorded run started from (what a pass creates is removed
/// after it): the recorded results either pass did not reproduce are
/// reported once, grouped by reason, and the second pass must differ
/// exactly as the first (every pass reproduces the trace); unless
/// `allow_differences`, any recorded result not reproduced fails the
/// replay. A third pass
/// counts the operations each seed's change reaches
/// ([`trace::seed_shares`]), printed as a table. Then the timed
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
    let shares;
    {
        let cache = Dcache::new(Config::default());
        let tree = trace::populate(&cache, ops).map_err(RunError::Op)?;
        let first = trace::verify_pass(&cache, ops);
        let second = trace::verify_pass(&cache, ops);
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
        if differing > 0 && !opts.allow_differences {
            return Err(RunError::Replay(format!(
                "{differing} recorded results were not reproduced (above); record with the README's recipe, which traces the calls that make and move names, or time it anyway with --allow-differences"
            )));
        }
        shares = trace::seed_shares(&cache, ops);
        write!(out, "{}", trace::shares_table(&shares, ops.len())).map_err(RunError::Io)?;
    }
    // Before, each seed that reaches an operation alone, then every seed.
    let mut variants = vec![("before".to_string(), Variants::BEFORE)];
    for s in shares.iter().filter(|s| s.ops > 0) {
        variants.push((format!("{} alone", s.seed), s.alone));
    }
    variants.push(("after".into(), Variants::AFTER));
    if cfg.progress {
        writeln!(out, "{}", runner::PROGRESS_HEADER).map_err(RunError::Io)?;
    }
    for &threads in &opts.threads {
        // Round-robin over the variants, `-r` rounds, each round starting
        // one variant later: a drift of the machine's speed, or an
        // advantage of running first, reaches every variant alike.
        let mut runs: Vec<Vec<Measurement>> = vec![Vec::new(); variants.len()];
        for round in 0..opts.repeat.max(1) {
            for k in 0..variants.len() {
                let v = (round + k) % variants.len();
                let (name, variants) = &variants[v];
                runs[v].push(replay_run(ops, name, *variants, threads, &cfg, out)?);
            }
        }
        results.extend(runs.into_iter().map(median));
    }
    Ok(results)
}

/// One timed run of `ops` with `variants` on `threads` workers, each
/// looping over the trace from its own starting point and putting the
/// tree back at the end of each of its passes.
fn replay_run(
    ops: &[trace::Op],
    name: &str,
    variants: Variants,
    threads: usize,
    cfg: &RunConfig,
    out: &mut dyn Write,
) -> Result<Measurement, RunError> {
    let cache = Dcache::new(Config {
        variants,
        ..Config::default()
    });
    trace::populate(&cache, ops).map_err(RunError::Op)?;
    runner::run(
        ("replay", name),
        threads,
        cfg,
        out,
        |t| {
            Ok((
                std::cell::Cell::new(t * ops.len() / threads.max(1)),
                std::cell::RefCell::new(trace::Pass::new()),
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
    )
}

/// The run with the median total of several runs of one configuration,
/// with the slowest run's total as its `slowest_round`.
///
/// # Panics
///
/// Never for a non-empty `runs` (callers run at least once).
pub fn median(mut runs: Vec<Measurement>) -> Measurement {
    runs.sort_by(|a, b| a.total.total_cmp(&b.total));
    let slowest = runs.first().map_or(0.0, |m| m.total);
    let mid = runs.len() / 2;
    let mut median = runs.swap_remove(mid);
    median.slowest_round = slowest;
    median
}

pub use lockref_measure::machine;
