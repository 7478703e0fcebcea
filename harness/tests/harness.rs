//! The harness's logic, never its speed: options, every testcase in every
//! variant, outputs that parse back (the operation counts behind each
//! seed's before and after are in `seed_counts.rs`, the CPUs in `cpus.rs`,
//! the traces in `traces.rs`).

use std::time::Duration;

use lockref_dcache::Errno;
use lockref_harness::options::Options;
use lockref_harness::runner::{self, Measurement, RunConfig, RunError};
use lockref_harness::testcases::{Testcase, ALL};
use lockref_harness::{report, run_testcases};

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn options_parse_and_reject() {
    let d = Options::parse(Vec::new()).unwrap();
    assert_eq!(d.testcases, ALL.to_vec());
    assert_eq!(d.threads[0], 1);
    assert_eq!(d.duration, Duration::from_secs(1));
    assert!(d.pin, "pinned by default, as will-it-scale");
    let o = Options::parse(args(
        "-t open3,lockref -n 1,4 -d 0.5 -w 0 --no-pin -q --csv a.csv --json=b.json --svg c.svg --png d.png",
    ))
    .unwrap();
    assert_eq!(o.testcases, vec![Testcase::Open3, Testcase::Lockref]);
    assert_eq!(o.threads, vec![1, 4]);
    assert_eq!(o.duration, Duration::from_millis(500));
    assert!(!o.pin && !o.progress);
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
    assert_eq!(
        (path(&o.csv), path(&o.json), path(&o.svg), path(&o.png)),
        (
            Some("a.csv".into()),
            Some("b.json".into()),
            Some("c.svg".into()),
            Some("d.png".into())
        )
    );
    assert_eq!(
        Options::parse(args("--sweep 4")).unwrap().threads,
        vec![1, 2, 3, 4]
    );
    for (bad, names, says) in [
        ("--frobnicate", "--frobnicate", "unexpected argument"),
        ("-t nosuch", "--tests", "unknown testcase `nosuch`"),
        ("-n 0", "--threads", "not a thread count"),
        ("-n two", "--threads", "not a thread count"),
        ("-d -1", "--duration", "not a number of seconds"),
        ("-d 0", "--duration", "more than 0"),
        ("--csv", "--csv", "a value is required"),
        ("--sweep 100000", "--sweep", "not a thread count"),
        ("--repeat 0", "--repeat", "not a repeat count"),
        ("-n 1 --sweep 2", "--sweep", "cannot be used with"),
        ("--out x", "--out", "--convert-strace"),
    ] {
        let e = Options::parse(args(bad)).unwrap_err().to_string();
        assert!(e.contains(names) && e.contains(says), "{bad}: {e}");
    }
    // --help shows the defaults and the examples.
    let help = Options::parse(args("--help")).unwrap_err();
    assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
    let help = help.to_string();
    assert!(
        help.contains("[default: 1]") && help.contains("[default: 0.25]"),
        "{help}"
    );
    assert!(
        help.contains("Examples") && help.contains("--sweep 16"),
        "{help}"
    );
    // Every example runs as written from the workspace root: no bare
    // `wis`, which no build puts on the PATH.
    let examples = &help[help.find("Examples").unwrap()..];
    let lines: Vec<&str> = examples.lines().filter(|l| l.starts_with("  ")).collect();
    assert!(lines.len() >= 4, "{examples}");
    for line in lines {
        assert!(line.starts_with("  target/release/wis"), "{line}");
    }
}

#[test]
fn every_testcase_runs_in_every_variant() {
    for tc in ALL {
        for v in 0..tc.variants().len() {
            let state = tc.setup(v, 2);
            for t in 0..2 {
                let w = tc.worker(&state, t).unwrap();
                for _ in 0..20 {
                    w.run_once()
                        .unwrap_or_else(|e| panic!("{} {}: {e}", tc.name(), tc.variants()[v]));
                }
            }
            if let Some(cache) = state.dcache() {
                if tc != Testcase::TryLookup {
                    cache.check_balanced().unwrap();
                }
            }
        }
    }
}

fn quick() -> Options {
    Options::parse(args("-q -d 0.05 -w 0 -n 1,2")).unwrap()
}

#[test]
fn runs_produce_outputs_that_parse_back() {
    let mut opts = quick();
    opts.testcases = vec![Testcase::Open3, Testcase::Lockref];
    let mut out = Vec::new();
    let results = run_testcases(&opts, &mut out).unwrap();
    // open3: 2 variants x 2 thread counts; lockref: 5 x 2.
    assert_eq!(results.len(), 14);
    assert!(results.iter().all(|m| m.total > 0.0 && m.min <= m.max));
    let summary = report::summary(&results);
    assert!(summary.contains("open3") && summary.contains("consume") && summary.contains("+39%"));

    // CSV: the header, and every row back to the numbers measured.
    let csv = report::csv(&results).unwrap();
    assert_eq!(
        csv.lines().next(),
        Some("testcase,variant,tasks,threads,threads_idle,linear,min_thread,max_thread")
    );
    let rows: Vec<report::CsvRow> = csv::Reader::from_reader(csv.as_bytes())
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 14);
    for (row, m) in rows.iter().zip(&results) {
        assert_eq!(
            (&row.testcase, &row.variant, row.tasks),
            (&m.testcase, &m.variant, m.threads)
        );
        assert_eq!(
            (row.threads, row.min_thread, row.max_thread),
            (m.total, m.min, m.max)
        );
        assert_eq!(row.threads_idle, m.idle_percent);
        let one = results
            .iter()
            .find(|o| o.testcase == m.testcase && o.variant == m.variant && o.threads == 1)
            .unwrap();
        assert_eq!(row.linear, Some(one.total * m.threads as f64));
    }
    // The idle column is measured here (Linux has /proc/stat).
    assert!(results
        .iter()
        .all(|m| m.idle_percent.is_some_and(|i| (0.0..=100.0).contains(&i))));

    // JSON: the schema, and every result back.
    let json = report::json(&results, "test machine \"quoted\"");
    let back: report::JsonReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.schema, 2);
    assert_eq!(back.machine, "test machine \"quoted\"");
    assert_eq!(back.dentry_word, lockref_dcache::DENTRY_WORD);
    assert_eq!(back.results, results);

    // The plots: SVG that parses as XML with a panel per testcase, and a
    // PNG that decodes to the drawn size.
    let dir = tempfile::tempdir().unwrap();
    let (svg, png) = (dir.path().join("p.svg"), dir.path().join("p.png"));
    lockref_harness::plot::svg(&svg, &results, "m<&>").unwrap();
    lockref_harness::plot::png(&png, &results, "machine").unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    for want in [
        "open3",
        "lockref",
        "threads",
        "ops/s",
        "consume",
        "get/put: linear",
        "m<&>",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(want)),
            "no `{want}` in the SVG"
        );
    }
    let decoder = png::Decoder::new(std::fs::File::open(&png).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1120, 380 + 36));
    assert!(buf.iter().any(|&b| b != 255), "the PNG is not blank");
}

#[test]
fn repeat_reports_the_median_run() {
    let mut opts = quick();
    opts.testcases = vec![Testcase::Lockref];
    opts.threads = vec![1];
    opts.repeat = 3;
    let results = run_testcases(&opts, &mut Vec::new()).unwrap();
    assert_eq!(results.len(), 5, "one result per variant, not per run");
    let m = |t: f64| Measurement {
        testcase: "x".into(),
        variant: "y".into(),
        threads: 1,
        total: t,
        min: t,
        max: t,
        idle_percent: None,
        slowest_round: t,
    };
    let median = lockref_harness::median(vec![m(3.0), m(1.0), m(2.0)]);
    assert_eq!(median.total, 2.0);
    assert_eq!(median.slowest_round, 1.0, "the slowest round is kept");
}

#[test]
fn ticks_are_shown_only_when_asked() {
    assert!(
        !Options::parse(args("-n 1")).unwrap().progress,
        "summary only by default"
    );
    assert!(Options::parse(args("-n 1 --ticks")).unwrap().progress);
    assert!(!Options::parse(args("-n 1 -q")).unwrap().progress);
    assert!(
        Options::parse(args("-n 1 -q --ticks")).is_err(),
        "contradictory"
    );
}

#[test]
fn progress_lines_look_like_will_it_scale() {
    let mut opts = quick();
    opts.progress = true;
    opts.testcases = vec![Testcase::Lockref];
    opts.threads = vec![2];
    let mut out = Vec::new();
    run_testcases(&opts, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(lockref_harness::runner::PROGRESS_HEADER),
        "the header first"
    );
    let line = lines.next().unwrap();
    assert!(
        line.contains("min:") && line.contains("max:") && line.contains("total:"),
        "{line}"
    );
    // Quiet: neither ticks nor their header.
    let mut quiet = Vec::new();
    opts.progress = false;
    run_testcases(&opts, &mut quiet).unwrap();
    assert!(quiet.is_empty(), "{}", String::from_utf8_lossy(&quiet));
}

/// `wis` as a newcomer runs it: the summary is followed by a legend that
/// says what the ratio is, which way is better, what the floor and the
/// seeds' figures are, and where to read more; `--help` lists every
/// testcase with a line on it and its variants.
#[test]
fn the_output_and_the_help_explain_themselves() {
    let wis = env!("CARGO_BIN_EXE_wis");
    let run = std::process::Command::new(wis)
        .args([
            "-q",
            "-d",
            "0.02",
            "-w",
            "0",
            "-n",
            "1",
            "-t",
            "open3,lockref,inodes",
            "--no-pin",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = String::from_utf8(run.stdout).unwrap();
    // This binary is the tests' build (with `testing`: lockref's `stats`
    // on), and says it is not one to measure with.
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("NOT FOR MEASURING")),
        "{text}"
    );
    let legend = text
        .split("How to read this")
        .nth(1)
        .expect("a legend under the table");
    for needed in [
        "harness/README.md",
        "after / before",
        "1.00x the row's variant is faster",
        "seed reported",
        "fetch_add floor",
        "virtiofsd-style table",
    ] {
        assert!(
            legend.contains(needed),
            "legend lacks {needed:?}:\n{legend}"
        );
    }
    assert!(!legend.contains("replay rows"), "only what applies");
    assert!(text.find("ratio").unwrap() < text.find("How to read this").unwrap());
    let help = std::process::Command::new(wis)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for t in lockref_harness::testcases::ALL {
        let line = format!("{:<10} {}", t.name(), t.describe());
        assert!(help.contains(&line), "--help lacks {line:?}");
        assert!(
            help.contains(&t.variants().join(" | ")),
            "--help lacks {}'s variants",
            t.name()
        );
    }
}

#[test]
fn the_plot_names_before_after_and_the_baseline() {
    use lockref_harness::plot::series_name;
    assert_eq!(series_name(0, 2, "get/put"), "before: get/put");
    assert_eq!(series_name(1, 2, "consume"), "after: consume");
    assert_eq!(
        series_name(0, 5, "fetch_add floor"),
        "baseline: fetch_add floor"
    );
    assert_eq!(series_name(3, 5, "ExpBackoff"), "ExpBackoff");
}

#[test]
fn a_failing_body_is_an_error_not_a_panic() {
    let cfg = RunConfig {
        duration: Duration::from_millis(20),
        warmup: Duration::ZERO,
        pin: false,
        background: 0,
        progress: false,
    };
    let r: Result<Measurement, RunError> = runner::run(
        ("x", "y"),
        2,
        &cfg,
        &mut Vec::new(),
        |_| Ok(()),
        |()| Err(Errno::NoEnt),
    );
    assert!(matches!(r, Err(RunError::Op(Errno::NoEnt))));
}

#[test]
fn a_control_off_by_two_or_more_flags_the_run_as_noise() {
    let measured = |variant: &str, threads: usize, total: f64| Measurement {
        testcase: "open1".into(),
        variant: variant.into(),
        threads,
        total,
        min: total / threads as f64,
        max: total / threads as f64,
        idle_percent: None,
        slowest_round: total,
    };
    let quiet = [
        measured("get/put", 1, 100.0),
        measured("consume", 1, 120.0),
        measured("get/put", 2, 200.0),
        measured("consume", 2, 110.0),
    ];
    let summary = report::summary(&quiet);
    assert!(!summary.contains("NOISE"), "{summary}");
    for (after, at) in [(99.0, "0.49x at 2 threads"), (400.0, "2.00x at 2 threads")] {
        let mut noisy = quiet.clone();
        noisy[3].total = after;
        let summary = report::summary(&noisy);
        assert!(summary.contains("control: NOISE"), "{summary}");
        assert!(
            summary.contains(&format!("ran at\n{at}: off by 2x")),
            "{summary}"
        );
        assert!(!summary.contains("at 1 threads"), "{summary}");
    }
}
