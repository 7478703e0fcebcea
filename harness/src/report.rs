//! The summary table and the CSV, JSON and SVG outputs.

use std::fmt::Write as _;

use crate::runner::Measurement;
use crate::testcases::Testcase;

/// The summary: per testcase and thread count, the baseline variant's
/// ops/s, each other variant's, the ratio, and the seed's figure.
pub fn summary(results: &[Measurement]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:>7} {:>16} {:>14} {:>16} {:>14} {:>7} {:>7}  seed reported",
        "testcase", "threads", "before", "ops/s", "after", "ops/s", "ratio", "slowest"
    );
    // The control's rows off by 2x or more, told again under the table.
    let mut noisy: Vec<String> = Vec::new();
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for m in results {
        if !seen.contains(&(&m.testcase, m.threads)) {
            seen.push((&m.testcase, m.threads));
        }
    }
    for (testcase, threads) in seen {
        let group: Vec<&Measurement> = results
            .iter()
            .filter(|m| m.testcase == testcase && m.threads == threads)
            .collect();
        let Some(base) = group.first() else { continue };
        let figure = Testcase::from_name(testcase).map_or("", Testcase::seed_figure);
        for after in group.iter().skip(1) {
            let ratio = after.total / base.total.max(f64::MIN_POSITIVE);
            let figure = if testcase == CONTROL && is_noise(ratio) {
                noisy.push(format!("{ratio:.2}x at {threads} threads"));
                "control: NOISE, see below"
            } else {
                figure
            };
            let _ = writeln!(
                out,
                "{:<10} {:>7} {:>16} {:>14.0} {:>16} {:>14.0} {:>6.2}x {:>7.2}  {}",
                testcase,
                threads,
                base.variant,
                base.total,
                after.variant,
                after.total,
                ratio,
                after.slowest_round / after.total.max(f64::MIN_POSITIVE),
                figure
            );
        }
    }
    if !noisy.is_empty() {
        let _ = writeln!(
            out,
            "\nNOISE: the control ({CONTROL}, where nothing is shared and no change is expected) ran at\n\
             {}: off by 2x or more, so this run measured the machine, not the code.\n\
             Rerun with more rounds (-r 5) and seconds (-d 3), or on a quieter machine.",
            noisy.join(", ")
        );
    }
    out
}

/// The testcase whose before and after should not differ.
const CONTROL: &str = "open1";

/// Whether a ratio of the control is off by 2x or more either way.
fn is_noise(ratio: f64) -> bool {
    !(0.5..2.0).contains(&ratio)
}

/// The legend printed under the summary: how to read each column, and
/// what the baseline is for the rows that are not a seed's before and
/// after. Says only what applies to `results`.
pub fn legend(results: &[Measurement]) -> String {
    let has = |name: &str| results.iter().any(|m| m.testcase == name);
    let mut out = String::from(
        "How to read this (harness/README.md has the rest):\n\
         \x20 ratio          each row's variant's ops/s over the first variant's of its testcase (for a\n\
         \x20                seed: after / before), measured one after the other in this process. Above\n\
         \x20                1.00x the row's variant is faster.\n\
         \x20 before, after  a seed's old and new code (its first and second variant), both built into\n\
         \x20                this binary; runs on 2 CPUs move by 15-30%, so compare ratios, and repeat (-r 5).\n\
         \x20 slowest        the after variant's slowest round over its median (1.00 with one round, -r 1);\n\
         \x20                under 0.50 a round stalled: a convoy, or a neighbour that took the CPUs.\n\
         \x20 seed reported  the figure the seed's own patch reported, on the machine it was measured on\n\
         \x20                (often tens of cores): the direction to expect, not a target on a small machine.\n\
         \x20                \"control\" (open1): nothing is shared between the threads, so the change should\n\
         \x20                do nothing; its ratio's distance from 1.00x is this machine's noise (off by 2x\n\
         \x20                or more either way, the summary flags the run NOISE).\n\
         \x20 variants       each testcase's, baseline first, are listed by `wis --help` with what they are.\n\
         \x20 pinned         (first line) each worker on a CPU of its own, as will-it-scale runs; \"not\n\
         \x20                pinned\" (--no-pin): the scheduler places them, as a server's threads are.\n",
    );
    if has("lockref") {
        out.push_str(
            "  lockref rows   the first variant is the fetch_add floor (a lock xadd get and put, no check:\n\
             \x20                the same two read-modify-writes a lockref's get and put make), so each ratio is\n\
             \x20                what the lockref's check costs. With one thread nothing contends: about 1.00x\n\
             \x20                (0.7x-1.2x on the 2-CPU dev VMs, by CPU model and noise). From two threads on,\n\
             \x20                the cache line's hand-offs between CPUs set the pace: KernelRetry and\n\
             \x20                WaitUnlock retry failed compare-and-swaps (0.6x-1.4x on 2 CPUs, by CPU model\n\
             \x20                and run), and ExpBackoff's waiting thread leaves the line to the other for\n\
             \x20                several operations in a row, which the floor's threads never do: up to about\n\
             \x20                2x, throughput bought with fairness. Compare over rounds (-r 5).\n",
        );
    }
    if has("inodes") {
        out.push_str(
            "  inodes rows    the first variant is the virtiofsd-style table (a locked map of Arcs), the\n\
             \x20                second lockref's table (lockref-table), the third a table on dashmap's\n\
             \x20                sharded maps (the well-kept concurrent map a FUSE author would reach for).\n",
        );
    }
    if has("hotinode") {
        out.push_str(
            "  hotinode rows  the first variant is the inode table on dashmap's sharded maps (an Arc per\n\
             \x20                inode, an atomic count of the kernel's lookups), then lockref's table keeping\n\
             \x20                no forgotten inode (the FUSE server's), the same keeping up to 1024 on its\n\
             \x20                LRU, and the virtiofsd-style table. Every thread on one directory and one\n\
             \x20                file, each cycling through zero. The last put takes no lock: one\n\
             \x20                compare-and-swap to zero (lockref keep: the entry stays listed), or to\n\
             \x20                dead (lockref: every cycle makes and releases an entry).\n",
        );
    }
    if has("replay") {
        out.push_str(
            "  replay rows    before: every seed's old code; after: every seed's new code, on the same trace;\n\
             \x20                N alone: only seed N's new code. A seed can gain at most its share of the\n\
             \x20                operations (the seeds' reach table above) times its own testcase's gain, so a\n\
             \x20                seed alone far from 1.00x on a small share is the machine's noise (repeat: -r 5,\n\
             \x20                which runs the variants round-robin and keeps each one's median).\n",
        );
    }
    out
}

/// A row of the CSV: will-it-scale's `runtest.py` columns for a threads
/// run (`tasks`, `threads`, `threads_idle`, `linear`), prefixed by the
/// testcase and variant, with each worker's slowest and fastest rate. The
/// `processes` columns are left out (only threads are run) and
/// `threads_idle` is measured (`/proc/stat`), empty where it could not be.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CsvRow {
    /// Testcase name.
    pub testcase: String,
    /// Variant name.
    pub variant: String,
    /// Workers.
    pub tasks: usize,
    /// Operations per second, all workers.
    pub threads: f64,
    /// Idle CPU time during the run, percent.
    pub threads_idle: Option<f64>,
    /// The one-worker rate times the workers (empty without a 1-worker run).
    pub linear: Option<f64>,
    /// The slowest worker's operations per second.
    pub min_thread: f64,
    /// The fastest worker's operations per second.
    pub max_thread: f64,
}

/// The one-worker rate of `m`'s testcase and variant, if it was run.
fn one_worker(results: &[Measurement], m: &Measurement) -> Option<f64> {
    results
        .iter()
        .find(|o| o.testcase == m.testcase && o.variant == m.variant && o.threads == 1)
        .map(|o| o.total)
}

/// The CSV (see [`CsvRow`]), with a header.
///
/// # Errors
///
/// The csv crate's error (none for in-memory output in practice).
pub fn csv(results: &[Measurement]) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for m in results {
        w.serialize(CsvRow {
            testcase: m.testcase.clone(),
            variant: m.variant.clone(),
            tasks: m.threads,
            threads: m.total,
            threads_idle: m.idle_percent,
            linear: one_worker(results, m).map(|one| one * m.threads as f64),
            min_thread: m.min,
            max_thread: m.max,
        })?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("csv writes UTF-8"))
}

/// The JSON document: `{"schema": 2, "machine": ..., "dentry_word": ...,
/// "results": [...]}`, each result a [`Measurement`] (field names as in
/// the struct).
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JsonReport {
    /// The layout's version: 2 (1 had no `dentry_word`).
    pub schema: u32,
    /// The machine, as the harness's first line names it.
    pub machine: String,
    /// The lockref word the dcache's dentries were built on
    /// ([`lockref_dcache::DENTRY_WORD`]).
    pub dentry_word: String,
    /// Every run, in run order.
    pub results: Vec<Measurement>,
}

/// The JSON document (see [`JsonReport`]), pretty-printed.
pub fn json(results: &[Measurement], machine: &str) -> String {
    let report = JsonReport {
        schema: 2,
        machine: machine.into(),
        dentry_word: lockref_dcache::DENTRY_WORD.into(),
        results: results.to_vec(),
    };
    let mut text = serde_json::to_string_pretty(&report).expect("measurements serialize");
    text.push('\n');
    text
}
