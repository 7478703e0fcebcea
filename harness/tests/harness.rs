//! The harness's logic, never its speed: options, every testcase in every
//! variant, the operation counts behind each seed's before and after, the
//! trace format and the strace converter, and well-formed outputs.

use std::time::Duration;

use lockref_dcache::testing::deferred_on_this_thread;
use lockref_dcache::{Errno, OpenFlags};
use lockref_harness::options::Options;
use lockref_harness::runner::{self, Measurement, RunConfig, RunError};
use lockref_harness::testcases::{State, Testcase, ALL};
use lockref_harness::{report, run_replay, run_testcases, trace};

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn options_parse_and_reject() {
    let d = Options::parse(Vec::new()).unwrap();
    assert_eq!(d.testcases, ALL.to_vec());
    assert_eq!(d.threads[0], 1);
    assert_eq!(d.duration, Duration::from_secs(1));
    let o = Options::parse(args(
        "-t open3,lockref -n 1,4 -d 0.5 -w 0 --pin -q --csv a.csv --json=b.json --svg c.svg",
    ))
    .unwrap();
    assert_eq!(o.testcases, vec![Testcase::Open3, Testcase::Lockref]);
    assert_eq!(o.threads, vec![1, 4]);
    assert_eq!(o.duration, Duration::from_millis(500));
    assert!(o.pin && !o.progress);
    assert_eq!(
        (o.csv.as_deref(), o.json.as_deref(), o.svg.as_deref()),
        (Some("a.csv"), Some("b.json"), Some("c.svg"))
    );
    assert_eq!(
        Options::parse(args("--sweep 4")).unwrap().threads,
        vec![1, 2, 3, 4]
    );
    for (bad, says) in [
        ("--frobnicate", "unknown option"),
        ("-t nosuch", "unknown testcase `nosuch`"),
        ("-n 0", "not a thread count"),
        ("-n two", "not a thread count"),
        ("-d -1", "not a number of seconds"),
        ("-d 0", "more than 0"),
        ("--csv", "needs a value"),
        ("--sweep 100000", "not a thread count"),
        ("--repeat 0", "not a repeat count"),
    ] {
        let e = Options::parse(args(bad)).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
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

/// The lockref operations on `path`'s dentry during `n` iterations.
fn ops_on(state: &State, tc: Testcase, path: &str, n: usize) -> usize {
    let cache = state.dcache().unwrap();
    let d = cache.lookup_path(path).unwrap().dentry().clone();
    let w = tc.worker(state, 0).unwrap();
    w.run_once().unwrap(); // warm: caches any negative dentries
    d.reset_lockref_stats();
    for _ in 0..n {
        w.run_once().unwrap();
    }
    d.lockref_stats().operations
}

#[test]
fn open3_consume_saves_exactly_two_operations_per_open() {
    let after = ops_on(
        &Testcase::Open3.setup(1, 1),
        Testcase::Open3,
        "/tmp/shared/file",
        10,
    );
    let before = ops_on(
        &Testcase::Open3.setup(0, 1),
        Testcase::Open3,
        "/tmp/shared/file",
        10,
    );
    assert_eq!((before, after), (40, 20));
}

#[test]
fn openneg_token_defers_nothing() {
    for (v, per_iter) in [(0, 1), (1, 0)] {
        let state = Testcase::OpenNeg.setup(v, 1);
        let w = Testcase::OpenNeg.worker(&state, 0).unwrap();
        let start = deferred_on_this_thread();
        for _ in 0..10 {
            w.run_once().unwrap();
        }
        assert_eq!(
            deferred_on_this_thread() - start,
            10 * per_iter,
            "variant {v}"
        );
    }
}

#[test]
fn pseudo_self_parent_touches_no_root() {
    for (v, per_iter) in [(0, 2), (1, 0)] {
        let state = Testcase::Pseudo.setup(v, 1);
        let root = state.dcache().unwrap().pseudo_root();
        root.reset_lockref_stats();
        let w = Testcase::Pseudo.worker(&state, 0).unwrap();
        for _ in 0..10 {
            w.run_once().unwrap();
        }
        assert_eq!(
            root.lockref_stats().operations,
            10 * per_iter,
            "variant {v}"
        );
    }
}

#[test]
fn creat_lookup_first_takes_no_directory_lock() {
    for (v, per_iter) in [(0, 1), (1, 0)] {
        let state = Testcase::Creat.setup(v, 1);
        let dir = state.dcache().unwrap().lookup_path("/tmp/shared").unwrap();
        let before = dir.dentry().inode_write_locks();
        let w = Testcase::Creat.worker(&state, 0).unwrap();
        for _ in 0..10 {
            w.run_once().unwrap();
        }
        assert_eq!(
            dir.dentry().inode_write_locks() - before,
            10 * per_iter,
            "variant {v}"
        );
    }
}

#[test]
fn trylookup_without_revalidation_takes_no_dentry_lock() {
    for (v, per_iter) in [(0, 1), (1, 0)] {
        let state = Testcase::TryLookup.setup(v, 1);
        let cache = state.dcache().unwrap();
        let dir = cache.lookup_path("/tmp/shared").unwrap();
        let file = cache
            .try_lookup_noperm(dir.dentry(), "file")
            .unwrap()
            .unwrap();
        file.reset_lockref_stats();
        let w = Testcase::TryLookup.worker(&state, 0).unwrap();
        for _ in 0..10 {
            w.run_once().unwrap();
        }
        assert_eq!(
            file.lockref_stats().lock_acquisitions,
            10 * per_iter,
            "variant {v}"
        );
    }
}

fn quick() -> Options {
    Options::parse(args("-q -d 0.05 -w 0 -n 1,2")).unwrap()
}

#[test]
fn runs_produce_well_formed_outputs() {
    let mut opts = quick();
    opts.testcases = vec![Testcase::Open3, Testcase::Lockref];
    let mut out = Vec::new();
    let results = run_testcases(&opts, &mut out).unwrap();
    // open3: 2 variants x 2 thread counts; lockref: 4 x 2.
    assert_eq!(results.len(), 12);
    assert!(results.iter().all(|m| m.total > 0.0 && m.min <= m.max));
    let summary = report::summary(&results);
    assert!(summary.contains("open3") && summary.contains("consume") && summary.contains("+39%"));

    let csv = report::csv(&results);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("testcase,variant,tasks,processes,processes_idle,threads,threads_idle,linear,min_thread,max_thread")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 12);
    assert!(rows.iter().all(|r| r.split(',').count() == 10));

    let json = report::json(&results, "test machine");
    assert!(json.starts_with("{\"machine\":\"test machine\",\"results\":["));
    assert_eq!(json.matches('{').count(), json.matches('}').count());
    assert_eq!(json.matches("\"testcase\"").count(), 12);

    let svg = report::svg(&results, "m<&>");
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<g>").count(), svg.matches("</g>").count());
    assert_eq!(svg.matches("<polyline").count(), 2 + 4);
    assert!(svg.contains("m&lt;&amp;&gt;"), "text is escaped");
}

#[test]
fn repeat_reports_the_median_run() {
    let mut opts = quick();
    opts.testcases = vec![Testcase::Lockref];
    opts.threads = vec![1];
    opts.repeat = 3;
    let results = run_testcases(&opts, &mut Vec::new()).unwrap();
    assert_eq!(results.len(), 4, "one result per variant, not per run");
    let m = |t: f64| Measurement {
        testcase: "x".into(),
        variant: "y".into(),
        threads: 1,
        total: t,
        min: t,
        max: t,
    };
    assert_eq!(
        lockref_harness::median(vec![m(3.0), m(1.0), m(2.0)]).total,
        2.0
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
    let line = text.lines().next().unwrap();
    assert!(
        line.contains("min:") && line.contains("max:") && line.contains("total:"),
        "{line}"
    );
}

#[test]
fn a_failing_body_is_an_error_not_a_panic() {
    let cfg = RunConfig {
        duration: Duration::from_millis(20),
        warmup: Duration::ZERO,
        pin: true,
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
fn trace_parses_good_lines_and_names_bad_ones() {
    let ops = trace::parse(
        "# c\n\nopen /a O_RDONLY 0\nopen /b O_WRONLY|O_CREAT|O_EXCL EEXIST\nstat /c - ENOENT\n",
    )
    .unwrap();
    assert_eq!(ops.len(), 3);
    assert_eq!(
        ops[1].kind,
        trace::OpKind::Open(OpenFlags::WRONLY.creat().excl())
    );
    assert_eq!(ops[2].result, Err(Errno::NoEnt));
    assert_eq!(ops[1].to_string(), "open /b O_WRONLY|O_CREAT|O_EXCL EEXIST");
    for (text, line, says) in [
        ("open /a O_RDONLY", 1, "expected 4 fields"),
        ("\n\nread /a - 0", 3, "unknown operation `read`"),
        ("open /a O_BOGUS 0", 1, "unknown open flag `O_BOGUS`"),
        ("stat /a O_RDONLY 0", 1, "stat takes `-`"),
        ("open /a O_RDONLY EWHAT", 1, "unknown result `EWHAT`"),
        ("open /a O_CREAT|O_DIRECTORY 0", 1, "EINVAL"),
    ] {
        let e = trace::parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text}");
        assert!(e.to_string().contains(says), "{text}: {e}");
    }
}

#[test]
fn strace_converter_handles_real_line_shapes() {
    let log = r#"10525 openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3
[pid 42] openat(AT_FDCWD, "/usr/local/include/stdio.h", O_RDONLY|O_NOCTTY) = -1 ENOENT (No such file or directory)
10526 newfstatat(AT_FDCWD, "/usr/lib", {st_mode=S_IFDIR|0755, st_size=4096, ...}, 0) = 0
10526 openat(AT_FDCWD, "/tmp/cc1.s", O_RDWR|O_CREAT|O_EXCL, 0600) = 4
10527 openat(AT_FDCWD, "/secret", O_RDONLY) = -1 EACCES (Permission denied)
10527 openat(AT_FDCWD, "/slow", O_RDONLY <unfinished ...>
10527 <... openat resumed>) = 5
10528 newfstatat(3, "", {st_mode=S_IFREG|0644, ...}, AT_EMPTY_PATH) = 0
10528 read(3, "x", 1) = 1
10528 +++ exited with 0 +++
stat("hello.c", {st_mode=S_IFREG|0644, st_size=12, ...}) = 0
"#;
    let c = trace::convert_strace(log);
    let ops = trace::parse(&c.trace).unwrap();
    let lines: Vec<String> = ops.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "open /etc/ld.so.cache O_RDONLY 0",
            "open /usr/local/include/stdio.h O_RDONLY ENOENT",
            "stat /usr/lib - 0",
            "open /tmp/cc1.s O_RDWR|O_CREAT|O_EXCL 0",
            "stat hello.c - 0",
        ]
    );
    assert_eq!((c.ops, c.skipped), (5, 6));
}

#[test]
fn shipped_trace_is_the_conversion_of_the_shipped_log() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/");
    let log = std::fs::read_to_string(format!("{dir}gcc-hello.strace")).unwrap();
    let shipped = std::fs::read_to_string(format!("{dir}gcc-hello.trace")).unwrap();
    assert_eq!(trace::convert_strace(&log).trace, shipped);
    let ops = trace::parse(&shipped).unwrap();
    assert!(ops.len() > 500);
    assert!(ops.iter().filter(|o| o.result == Err(Errno::NoEnt)).count() > 300);
}

#[test]
fn replay_runs_before_and_after_and_matches_the_trace() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/");
    let ops =
        trace::parse(&std::fs::read_to_string(format!("{dir}gcc-hello.trace")).unwrap()).unwrap();
    let cache = lockref_dcache::Dcache::new(Default::default());
    trace::populate(&cache, &ops).unwrap();
    let diff = trace::first_pass_mismatches(&cache, &ops);
    // Only what cannot repeat: O_EXCL temporaries, and a stat of the
    // output before it was written.
    assert!(diff.len() <= 8, "{} mismatches", diff.len());
    let mut out = Vec::new();
    let results = run_replay(&ops, &quick(), &mut out).unwrap();
    assert_eq!(results.len(), 4);
    assert!(results
        .iter()
        .all(|m| m.testcase == "replay" && m.total > 0.0));
}
