//! Command-line options, on clap: every bad option gets a message naming
//! it, `--help` shows the defaults and examples.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::runner::RunConfig;
use crate::testcases::{Testcase, ALL};

/// What to run and where to write it, resolved from the command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Testcases, in order.
    pub testcases: Vec<Testcase>,
    /// Thread counts, in order.
    pub threads: Vec<usize>,
    /// Measured seconds per run.
    pub duration: Duration,
    /// Warm-up per run.
    pub warmup: Duration,
    /// Pin each worker to its own allowed CPU (the default).
    pub pin: bool,
    /// Busy neighbour threads beside the workers.
    pub background: usize,
    /// Runs per configuration; the median (by total ops/s) is reported.
    pub repeat: usize,
    /// Per-tick progress lines.
    pub progress: bool,
    /// CSV output file.
    pub csv: Option<PathBuf>,
    /// JSON output file.
    pub json: Option<PathBuf>,
    /// SVG plot file.
    pub svg: Option<PathBuf>,
    /// PNG plot file.
    pub png: Option<PathBuf>,
    /// A trace to replay instead of the testcases.
    pub replay: Option<PathBuf>,
    /// Replay even if a pass does not reproduce every recorded result.
    pub allow_differences: bool,
    /// An strace log to convert (then exit).
    pub convert: Option<PathBuf>,
    /// Where the converted trace goes (stdout if `None`).
    pub out: Option<PathBuf>,
    /// The directory the traced command started in.
    pub cwd: Option<String>,
    /// JSON files of the base side of a comparison (then exit).
    pub compare: Vec<PathBuf>,
    /// JSON files of the other side.
    pub against: Vec<PathBuf>,
}

/// `--help`'s text after the options: the testcases, one line each, with
/// their variants (before first), then the examples.
fn after_help() -> String {
    let mut text = String::from(
        "Testcases (-t; each runs its variants in this process, the first one the baseline):\n",
    );
    for t in ALL {
        text.push_str(&format!("  {:<10} {}\n", t.name(), t.describe()));
        text.push_str(&format!(
            "  {:<10}   variants: {}\n",
            "",
            t.variants().join(" | ")
        ));
    }
    text.push_str(
        "\nThe summary's ratio is the variant's ops/s over the baseline's (> 1.00x: faster);\n",
    );
    text.push_str("the legend printed under it says more, and harness/README.md all of it.\n\n");
    text.push_str(EXAMPLES);
    text
}

const EXAMPLES: &str = "\
Examples, from the workspace root after `cargo build --release -p lockref-harness`
(or run each through `cargo run --release -p lockref-harness --bin wis --`):
  target/release/wis                    every testcase at 1 thread and at every CPU
  target/release/wis -t open3,lockref --sweep 16 -r 3 --csv out.csv --json out.json --svg out.svg --png out.png
  target/release/wis --convert-strace build.strace --out build.trace
  target/release/wis --replay build.trace -n 1,4
  target/release/wis --compare cas-*.json --against add-*.json   two builds side by side (harness/compare-words.sh)";

fn testcase(s: &str) -> Result<Testcase, String> {
    Testcase::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = ALL.iter().map(|t| t.name()).collect();
        format!("unknown testcase `{s}` (one of: {})", names.join(", "))
    })
}

fn seconds(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=3600.0).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!(
            "`{s}` is not a number of seconds between 0 and 3600"
        )),
    }
}

fn thread_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a thread count between 1 and 4096")),
    }
}

fn repeat_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=100).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a repeat count between 1 and 100")),
    }
}

/// wis: will-it-scale style runs of the lockref dcache, each seed before
/// and after, in one process.
#[derive(Parser, Debug)]
#[command(name = "wis", version, after_help = after_help())]
struct Cli {
    /// Testcases, comma-separated [default: all].
    #[arg(short = 't', long = "tests", value_delimiter = ',', value_parser = testcase, value_name = "LIST")]
    tests: Vec<Testcase>,
    /// Thread counts, comma-separated [default: 1 and the number of CPUs
    /// this process may use].
    #[arg(short = 'n', long, value_delimiter = ',', value_parser = thread_count, value_name = "LIST", conflicts_with = "sweep")]
    threads: Vec<usize>,
    /// Thread counts 1, 2, ..., N (a scaling run).
    #[arg(long, value_parser = thread_count, value_name = "N")]
    sweep: Option<usize>,
    /// Measured seconds per run.
    #[arg(short = 'd', long, allow_negative_numbers = true, value_parser = seconds, default_value = "1", value_name = "SECS")]
    duration: Duration,
    /// Warm-up seconds per run.
    #[arg(short = 'w', long, allow_negative_numbers = true, value_parser = seconds, default_value = "0.25", value_name = "SECS")]
    warmup: Duration,
    /// Do not pin workers (by default each worker runs on its own CPU
    /// among those this process may use, physical cores before SMT
    /// siblings, as will-it-scale does; a failed pin is an error).
    #[arg(long)]
    no_pin: bool,
    /// Busy neighbours: N threads that spin on arithmetic beside the
    /// workers for each run, unpinned, at the workers' priority (a server
    /// host is rarely idle).
    #[arg(long, default_value = "0", value_name = "N")]
    background: usize,
    /// Runs per configuration; the median is reported.
    #[arg(short = 'r', long, value_parser = repeat_count, default_value = "1", value_name = "N")]
    repeat: usize,
    /// Per-tick lines while it runs (each run's ticks: the slowest and
    /// the fastest worker's ops/s, and all workers' together), above the
    /// summary.
    #[arg(long, conflicts_with = "quiet")]
    ticks: bool,
    /// No per-tick lines: the default (kept for scripts written before
    /// `--ticks`).
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Write will-it-scale's runtest.py CSV (the idle column measured).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write JSON (schema in the harness README).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write an SVG plot: a panel per testcase, ops/s against threads.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write the same plot as PNG.
    #[arg(long, value_name = "FILE")]
    png: Option<PathBuf>,
    /// Replay a recorded trace (format: harness/src/trace/mod.rs) instead
    /// of the testcases.
    #[arg(long, value_name = "TRACE", conflicts_with = "convert_strace")]
    replay: Option<PathBuf>,
    /// With --replay: time the trace even if a pass does not reproduce
    /// every recorded result (a trace recorded without the calls that make
    /// and move names); the differences are still listed.
    #[arg(long, requires = "replay")]
    allow_differences: bool,
    /// Convert an strace log to a trace, then exit.
    #[arg(long, value_name = "LOG")]
    convert_strace: Option<PathBuf>,
    /// Where --convert-strace writes [default: stdout].
    #[arg(long, value_name = "FILE", requires = "convert_strace")]
    out: Option<PathBuf>,
    /// For --convert-strace: the directory the traced command started in,
    /// for relative paths before its first chdir (not needed with a log
    /// recorded with strace -y).
    #[arg(long, value_name = "DIR", requires = "convert_strace")]
    cwd: Option<String>,
    /// Compare two builds' JSON outputs (this side the base), then exit:
    /// medians over the files of each side, and their ratio.
    #[arg(long, num_args = 1.., value_name = "JSON", requires = "against")]
    compare: Vec<PathBuf>,
    /// The other side of --compare.
    #[arg(long, num_args = 1.., value_name = "JSON", requires = "compare")]
    against: Vec<PathBuf>,
}

impl Options {
    /// Parses arguments (without the program name).
    ///
    /// # Errors
    ///
    /// clap's error naming the bad option or value; `--help` and
    /// `--version` also come back as errors, which print their text
    /// (`Error::exit` does the right thing for each).
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("wis".to_string()).chain(args))?;
        if cli.duration.is_zero() {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                "--duration must be more than 0\n",
            ));
        }
        let threads = match (cli.sweep, cli.threads.is_empty()) {
            (Some(n), _) => (1..=n).collect(),
            (None, false) => cli.threads,
            (None, true) => {
                let n = crate::cpus::allowed().len();
                if n > 1 {
                    vec![1, n]
                } else {
                    vec![1]
                }
            }
        };
        Ok(Options {
            testcases: if cli.tests.is_empty() {
                ALL.to_vec()
            } else {
                cli.tests
            },
            threads,
            duration: cli.duration,
            warmup: cli.warmup,
            pin: !cli.no_pin,
            background: cli.background,
            repeat: cli.repeat,
            progress: cli.ticks,
            csv: cli.csv,
            json: cli.json,
            svg: cli.svg,
            png: cli.png,
            replay: cli.replay,
            allow_differences: cli.allow_differences,
            convert: cli.convert_strace,
            out: cli.out,
            cwd: cli.cwd,
            compare: cli.compare,
            against: cli.against,
        })
    }

    /// The runner's configuration.
    pub fn run_config(&self) -> RunConfig {
        RunConfig {
            duration: self.duration,
            warmup: self.warmup,
            pin: self.pin,
            background: self.background,
            progress: self.progress,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::parse(Vec::new()).expect("the defaults parse")
    }
}
