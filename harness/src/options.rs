//! Command-line options, parsed without panicking: every bad option gets
//! a message naming it.

use std::time::Duration;

use crate::runner::{cpus, RunConfig};
use crate::testcases::{Testcase, ALL};

/// What to run and where to write it.
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
    /// Pin workers to CPUs.
    pub pin: bool,
    /// Runs per configuration; the median (by total ops/s) is reported.
    pub repeat: usize,
    /// Per-tick progress lines.
    pub progress: bool,
    /// CSV output file.
    pub csv: Option<String>,
    /// JSON output file.
    pub json: Option<String>,
    /// SVG output file.
    pub svg: Option<String>,
    /// A trace to replay instead of the testcases.
    pub replay: Option<String>,
    /// An strace log to convert (then exit).
    pub convert: Option<String>,
    /// Where the converted trace goes (stdout if `None`).
    pub out: Option<String>,
    /// Print the help and exit.
    pub help: bool,
}

/// The help text.
pub const HELP: &str = "\
wis: will-it-scale style runs of the lockref dcache, each seed before and after

usage: wis [options]

  -t, --tests LIST        testcases, comma-separated (default: all):
                          open3 open1 openneg pseudo creat trylookup stat2 lockref inodes
  -n, --threads LIST      thread counts, comma-separated (default: 1 and the CPU count)
      --sweep N           thread counts 1, 2, ..., N (a scaling run)
  -d, --duration SECS     measured seconds per run (default 1)
  -w, --warmup SECS       warm-up seconds per run (default 0.25)
      --pin               pin worker i to CPU i mod ncpu, as will-it-scale does
  -r, --repeat N          run each configuration N times, report the median (default 1)
  -q, --quiet             no per-tick min/max/total lines
      --csv FILE          write runtest.py-style CSV
      --json FILE         write JSON
      --svg FILE          write an SVG plot of ops/s against threads
      --replay TRACE      replay a recorded trace (format: harness/src/trace.rs)
      --convert-strace LOG  convert an strace log to a trace (to --out FILE or stdout)
      --out FILE          where --convert-strace writes
  -h, --help              this text
";

impl Default for Options {
    fn default() -> Self {
        let n = cpus();
        Options {
            testcases: ALL.to_vec(),
            threads: if n > 1 { vec![1, n] } else { vec![1] },
            duration: Duration::from_secs(1),
            warmup: Duration::from_millis(250),
            pin: false,
            repeat: 1,
            progress: true,
            csv: None,
            json: None,
            svg: None,
            replay: None,
            convert: None,
            out: None,
            help: false,
        }
    }
}

fn seconds(opt: &str, v: &str) -> Result<Duration, String> {
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=3600.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!(
            "{opt}: `{v}` is not a number of seconds between 0 and 3600"
        )),
    }
}

fn count(opt: &str, v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err(format!(
            "{opt}: `{v}` is not a thread count between 1 and 4096"
        )),
    }
}

impl Options {
    /// Parses arguments (without the program name).
    ///
    /// # Errors
    ///
    /// A message naming the bad option or value.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, String> {
        let mut o = Options::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| -> Result<String, String> {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match name.as_str() {
                "-t" | "--tests" => {
                    let v = value(&name)?;
                    o.testcases = v
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| {
                            Testcase::from_name(s)
                                .ok_or_else(|| format!("{name}: unknown testcase `{s}`"))
                        })
                        .collect::<Result<_, _>>()?;
                    if o.testcases.is_empty() {
                        return Err(format!("{name}: no testcase given"));
                    }
                }
                "-n" | "--threads" => {
                    let v = value(&name)?;
                    o.threads = v
                        .split(',')
                        .map(|s| count(&name, s))
                        .collect::<Result<_, _>>()?;
                }
                "--sweep" => {
                    let n = count(&name, &value(&name)?)?;
                    o.threads = (1..=n).collect();
                }
                "-d" | "--duration" => o.duration = seconds(&name, &value(&name)?)?,
                "-w" | "--warmup" => o.warmup = seconds(&name, &value(&name)?)?,
                "--pin" => o.pin = true,
                "-r" | "--repeat" => {
                    let v = value(&name)?;
                    o.repeat = match v.parse::<usize>() {
                        Ok(n) if (1..=100).contains(&n) => n,
                        _ => {
                            return Err(format!(
                                "{name}: `{v}` is not a repeat count between 1 and 100"
                            ))
                        }
                    };
                }
                "-q" | "--quiet" => o.progress = false,
                "--csv" => o.csv = Some(value(&name)?),
                "--json" => o.json = Some(value(&name)?),
                "--svg" => o.svg = Some(value(&name)?),
                "--replay" => o.replay = Some(value(&name)?),
                "--convert-strace" => o.convert = Some(value(&name)?),
                "--out" => o.out = Some(value(&name)?),
                "-h" | "--help" => o.help = true,
                other => return Err(format!("unknown option `{other}` (see --help)")),
            }
        }
        if o.duration.is_zero() {
            return Err("--duration must be more than 0".into());
        }
        Ok(o)
    }

    /// The runner's configuration.
    pub fn run_config(&self) -> RunConfig {
        RunConfig {
            duration: self.duration,
            warmup: self.warmup,
            pin: self.pin,
            progress: self.progress,
        }
    }
}
