//! The trace format, the strace converter on real and malformed line
//! shapes, and the replay: every pass from the same tree, differences named.

use std::time::Duration;

use lockref_dcache::{Errno, OpenFlags};
use lockref_harness::options::Options;
use lockref_harness::{run_replay, trace};

fn quick() -> Options {
    let mut o = Options::parse(Vec::new()).unwrap();
    o.progress = false;
    o.duration = Duration::from_millis(50);
    o.warmup = Duration::ZERO;
    o.threads = vec![1, 2];
    o
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
    // The shapes strace prints: pid columns both ways, AT_FDCWD and fds
    // with and without -y paths, relative paths after chdir and fchdir,
    // inheritance across clone/vfork, calls split across pids, padding
    // before `=`, errno the dcache does not model, signals and exits.
    let log = r#"100 openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3
100 close(3)                        = 0
100 chdir("/src/proj")              = 0
100 openat(AT_FDCWD, "include", O_RDONLY|O_DIRECTORY) = 4
100 openat(4, "stdio.h", O_RDONLY|O_NOCTTY) = -1 ENOENT (No such file or directory)
100 newfstatat(4, "../README", {st_mode=S_IFREG|0644, ...}, 0) = 0
100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 101
[pid   101] openat(AT_FDCWD, "main.c", O_RDONLY <unfinished ...>
[pid   100] stat("Cargo.toml", {st_mode=S_IFREG|0644, ...}) = 0
[pid   101] <... openat resumed>)    = 5
101 fchdir(4)                        = 0
101 openat(AT_FDCWD, "local.h", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 6
102 openat(AT_FDCWD</opt>, "lib/x.so", O_RDONLY) = 3</opt/lib/x.so>
102 newfstatat(3</opt/lib/x.so>, "", {st_mode=S_IFREG|0755, ...}, AT_EMPTY_PATH) = 0
102 openat(7</usr/include>, "a b.h", O_RDONLY) = -1 ENOENT (No such file or directory)
100 openat(AT_FDCWD, "/secret", O_RDONLY) = -1 EACCES (Permission denied)
103 openat(9, "x", O_RDONLY) = 3
100 read(3, "x", 1) = 1
100 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---
101 +++ exited with 0 +++
"#;
    let c = trace::convert_strace(log, None);
    assert!(c.malformed.is_empty(), "{:?}", c.malformed);
    let lines: Vec<String> = trace::parse(&c.trace)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        lines,
        [
            "open /etc/ld.so.cache O_RDONLY 0",
            "open /src/proj/include O_RDONLY|O_DIRECTORY 0",
            "open /src/proj/include/stdio.h O_RDONLY ENOENT",
            "stat /src/proj/include/../README - 0",
            "stat /src/proj/Cargo.toml - 0",
            "open /src/proj/main.c O_RDONLY 0",
            "open /src/proj/include/local.h O_WRONLY|O_CREAT 0",
            "open /opt/lib/x.so O_RDONLY 0",
            "stat /opt/lib/x.so - 0",
        ]
    );
    assert_eq!(c.resolved_relative, 8);
    let skipped = |reason: &str| c.skipped.get(reason).copied().unwrap_or(0);
    assert_eq!(
        skipped("path with whitespace (the trace format splits on it)"),
        1
    );
    assert_eq!(skipped("errno EACCES (not modelled)"), 1);
    assert_eq!(
        skipped("relative to a directory fd opened before the log or not traced"),
        1
    );
    assert_eq!(skipped("other system call `read`"), 1);
    assert_eq!(skipped("signal or exit"), 2);
    assert!(
        c.report()
            .contains("9 operations written (8 with a relative path"),
        "{}",
        c.report()
    );

    // Without -y or a chdir, a relative path needs the starting directory.
    let c = trace::convert_strace("1 stat(\"a\", {...}) = 0\n", None);
    assert_eq!(c.ops, 0);
    assert!(
        c.report().contains("unknown working directory"),
        "{}",
        c.report()
    );
    let c = trace::convert_strace("1 stat(\"a\", {...}) = 0\n", Some("/home/u"));
    assert_eq!(c.trace.lines().nth(1), Some("stat /home/u/a - 0"));
}

#[test]
fn strace_converter_names_malformed_lines_by_number() {
    let log = "1 openat(AT_FDCWD, \"/ok\", O_RDONLY) = 3\n\
               1 openat(AT_FDCWD, \"/cut, O_RDONLY) = 3\n\
               1 openat(AT_FDCWD, \"/a\", O_RDONLY) = what\n\
               1 <... openat resumed>) = 3\n\
               garbage\n\
               1 openat(AT_FDCWD, \"/b\", O_RDONLY\n";
    let c = trace::convert_strace(log, None);
    assert_eq!(c.ops, 1);
    let lines: Vec<usize> = c.malformed.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 3, 4, 5, 6], "{:?}", c.malformed);
    assert!(
        c.malformed[0].what.contains("unterminated string"),
        "{:?}",
        c.malformed[0]
    );
    assert!(
        c.malformed[1].what.contains("neither a number"),
        "{:?}",
        c.malformed[1]
    );
    assert!(
        c.malformed[2].what.contains("never started"),
        "{:?}",
        c.malformed[2]
    );
    assert!(c.report().contains("malformed: line 2:"), "{}", c.report());
}

#[test]
fn shipped_trace_is_the_conversion_of_the_shipped_log() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/");
    let log = std::fs::read_to_string(format!("{dir}gcc-hello.strace")).unwrap();
    let shipped = std::fs::read_to_string(format!("{dir}gcc-hello.trace")).unwrap();
    let c = trace::convert_strace(&log, None);
    assert_eq!(c.trace, shipped);
    assert!(c.malformed.is_empty());
    // Recorded with -y: every relative path resolved (gcc's header search
    // and the driver's temporaries), none skipped for want of a directory.
    assert!(c.resolved_relative > 100, "{}", c.report());
    assert!(!c.report().contains("relative to"), "{}", c.report());
    let ops = trace::parse(&shipped).unwrap();
    assert!(ops.len() > 500);
    assert!(ops.iter().filter(|o| o.result == Err(Errno::NoEnt)).count() > 100);
}

#[test]
fn replay_reproduces_the_shipped_trace_on_every_pass() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/");
    let ops =
        trace::parse(&std::fs::read_to_string(format!("{dir}gcc-hello.trace")).unwrap()).unwrap();
    let cache = lockref_dcache::Dcache::new(Default::default());
    trace::populate(&cache, &ops).unwrap();
    for pass in 0..3 {
        let diff = trace::verify_pass(&cache, &ops);
        assert!(diff.is_empty(), "pass {pass}: {diff:?}");
    }
    cache.check_balanced().unwrap();
    let mut out = Vec::new();
    let results = run_replay(&ops, &quick(), &mut out).unwrap();
    // Per thread count: before, the three seeds that reach an operation
    // alone, after.
    let names: Vec<&str> = results[..5].iter().map(|m| m.variant.as_str()).collect();
    assert_eq!(
        names,
        ["before", "000 alone", "001 alone", "003 alone", "after"]
    );
    assert_eq!(results.len(), 10);
    assert!(results
        .iter()
        .all(|m| m.testcase == "replay" && m.total > 0.0));
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("0 differ from the recorded results on every pass"),
        "{text}"
    );
    assert!(
        text.contains("seeds' reach: of the trace's 621 operations"),
        "{text}"
    );
}

/// Each seed's reach in the shipped trace, counted exactly: every open
/// that succeeds (000), every one that fails (001), the O_CREAT opens of a
/// name already there (003); no pseudo file (002) and no
/// `try_lookup_noperm` (004). The pass leaves the tree as it found it.
#[test]
fn seed_shares_of_the_shipped_trace_are_exact() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/");
    let ops =
        trace::parse(&std::fs::read_to_string(format!("{dir}gcc-hello.trace")).unwrap()).unwrap();
    let cache = lockref_dcache::Dcache::new(Default::default());
    trace::populate(&cache, &ops).unwrap();
    let shares = trace::seed_shares(&cache, &ops);
    let counts: Vec<(&str, usize)> = shares.iter().map(|s| (s.seed, s.ops)).collect();
    let opens = ops
        .iter()
        .filter(|o| matches!(o.kind, trace::OpKind::Open(_)))
        .count();
    assert_eq!(opens, 133 + 97, "every open succeeds or fails");
    assert_eq!(
        counts,
        [
            ("000", 133),
            ("001", 97),
            ("002", 0),
            ("003", 2),
            ("004", 0)
        ]
    );
    assert!(
        trace::verify_pass(&cache, &ops).is_empty(),
        "the tree was put back"
    );
    let table = trace::shares_table(&shares, ops.len());
    assert!(
        table.contains("21.4%") && table.contains("(not timed alone)"),
        "{table}"
    );
}

#[test]
fn replay_names_what_it_cannot_reproduce_and_resets_each_pass() {
    // A name created with O_EXCL (succeeds once per pass only if the pass
    // is reset), and a stat that saw a file the trace never made.
    let ops = trace::parse(
        "stat /t/x - ENOENT\nopen /t/x O_WRONLY|O_CREAT|O_EXCL 0\nstat /t/x - 0\nstat /t/made-elsewhere - 0\nstat /t/gone - ENOENT\nopen /t/gone O_RDONLY 0\n",
    )
    .unwrap();
    let cache = lockref_dcache::Dcache::new(Default::default());
    trace::populate(&cache, &ops).unwrap();
    let first = trace::verify_pass(&cache, &ops);
    let second = trace::verify_pass(&cache, &ops);
    assert_eq!(first, second, "every pass alike");
    // Only the last line: /t/gone was missing, then opened (made by a call
    // the trace does not hold).
    let keys: Vec<_> = first.keys().cloned().collect();
    assert_eq!(
        keys,
        [("open".to_string(), "0".to_string(), "ENOENT".to_string())]
    );
    assert!(
        trace::difference_reason("0", "ENOENT").contains("made by a call the trace does not hold")
    );
}

/// The calls that make, remove and move names become trace operations,
/// their paths resolved as the others' (`-y` directories, the working
/// directory); a `renameat2` with flags is skipped by name.
#[test]
fn strace_converter_reads_the_calls_that_make_and_move_names() {
    let log = r#"100 chdir("/t") = 0
100 mkdir("/t/d", 0755) = 0
100 mkdirat(AT_FDCWD</t>, "e", 0777) = 0
100 unlinkat(AT_FDCWD</t>, "d", AT_REMOVEDIR) = 0
100 unlink("f") = -1 ENOENT (No such file or directory)
100 unlinkat(3</t/e>, "g", 0) = 0
100 rename("/t/a", "/t/b") = 0
100 renameat2(AT_FDCWD</t>, "b", AT_FDCWD</t>, "c", RENAME_NOREPLACE) = 0
100 renameat(3</t/e>, "x", AT_FDCWD</t>, "y") = 0
100 renameat2(AT_FDCWD, "y", AT_FDCWD, "z", 0) = 0
100 linkat(AT_FDCWD</t>, "c", AT_FDCWD</t>, "l", 0) = 0
100 link("/t/c", "/t/m") = -1 EEXIST (File exists)
100 symlinkat("target", AT_FDCWD</t>, "s") = 0
100 symlink("../x", "/t/s2") = 0
100 rmdir("/t/e") = -1 ENOTEMPTY (Directory not empty)
"#;
    let c = trace::convert_strace(log, None);
    assert!(c.malformed.is_empty(), "{:?}", c.malformed);
    let lines: Vec<&str> = c.trace.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "mkdir /t/d - 0",
            "mkdir /t/e - 0",
            "rmdir /t/d - 0",
            "unlink /t/f - ENOENT",
            "unlink /t/e/g - 0",
            "rename /t/a /t/b 0",
            "rename /t/e/x /t/y 0",
            "rename /t/y /t/z 0",
            "link /t/c /t/l 0",
            "link /t/c /t/m EEXIST",
            "symlink /t/s - 0",
            "symlink /t/s2 - 0",
            "rmdir /t/e - ENOTEMPTY",
        ]
    );
    assert_eq!(
        c.skipped
            .get("renameat2 with flags (RENAME_NOREPLACE, RENAME_EXCHANGE: not modelled)"),
        Some(&1)
    );
    // The lines parse back to the same operations.
    let ops = trace::parse(&c.trace).unwrap();
    assert_eq!(ops.len(), 13);
    assert_eq!(ops[5].to.as_deref(), Some("/t/b"));
}

/// A trace that makes, moves and removes names replays exactly on every
/// pass: each pass undoes its changes (a rename back, what it replaced
/// remade, what it removed remade, what it made removed), so the next one
/// meets the tree the recorded run started from.
#[test]
fn a_trace_that_moves_names_replays_exactly_on_every_pass() {
    let ops = trace::parse(
        "mkdir /b/out - 0
open /b/out/a.o.tmp O_WRONLY|O_CREAT 0
rename /b/out/a.o.tmp /b/out/a.o 0
stat /b/out/a.o.tmp - ENOENT
stat /b/out/a.o - 0
open /b/old.rlib O_RDONLY 0
rename /b/new.rlib /b/old.rlib 0
link /b/old.rlib /b/hard.rlib 0
unlink /b/stale - 0
stat /b/stale - ENOENT
rmdir /b/empty - 0
rmdir /b/full - ENOTEMPTY
rename /b/dir /b/moved 0
stat /b/moved/inside - 0
stat /b/dir/inside - ENOENT
symlink /b/latest - 0
open /b/latest O_RDONLY 0
unlink /b/out/a.o - 0
rmdir /b/out - 0
",
    )
    .unwrap();
    let cache = lockref_dcache::Dcache::new(Default::default());
    let tree = trace::populate(&cache, &ops).unwrap();
    assert!(tree.files.contains("/b/dir/inside"), "{tree:?}");
    assert!(tree.files.contains("/b/new.rlib") && tree.files.contains("/b/stale"));
    assert!(tree.dirs.contains("/b/empty") && tree.dirs.contains("/b/full"));
    assert!(!tree.dirs.contains("/b/out"), "made by the trace");
    for pass in 0..3 {
        let diff = trace::verify_pass(&cache, &ops);
        assert!(diff.is_empty(), "pass {pass}: {diff:?}");
    }
    cache.check_balanced().unwrap();
}

/// The shipped real build (`cargo build` of a crate with bundled C:
/// `libz-sys` with `static`, gcc compiling zlib), recorded with the
/// README's recipe: its trace is the conversion of its log, and every
/// pass reproduces all 26,228 recorded results.
#[test]
fn the_shipped_cargo_build_replays_exactly() {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/traces"));
    let log = trace::read_text(&dir.join("cargo-libz.strace.gz")).unwrap();
    let shipped = trace::read_text(&dir.join("cargo-libz.trace.gz")).unwrap();
    let converted = trace::convert_strace(&log, Some("/tmp/rb/zbuild"));
    assert!(converted.malformed.is_empty());
    assert_eq!(
        converted.trace, shipped,
        "the shipped trace is the log's conversion"
    );
    let ops = trace::parse(&shipped).unwrap();
    assert_eq!(ops.len(), 26_228);
    let moves = ops
        .iter()
        .filter(|o| !matches!(o.kind, trace::OpKind::Open(_) | trace::OpKind::Stat))
        .count();
    assert_eq!(moves, 293, "mkdir, unlink, rmdir, rename, link");
    let cache = lockref_dcache::Dcache::new(Default::default());
    trace::populate(&cache, &ops).unwrap();
    for pass in 0..2 {
        let diff = trace::verify_pass(&cache, &ops);
        assert!(diff.is_empty(), "pass {pass}: {diff:?}");
    }
    cache.check_balanced().unwrap();
}

/// A trace that does not replay exactly fails the replay unless
/// `--allow-differences` is given; the differences are listed either way.
#[test]
fn a_replay_that_differs_fails_unless_allowed() {
    let ops = trace::parse("stat /t/gone - ENOENT\nopen /t/gone O_RDONLY 0\n").unwrap();
    let mut opts = quick();
    opts.threads = vec![1];
    let mut out = Vec::new();
    let refused = run_replay(&ops, &opts, &mut out).unwrap_err().to_string();
    assert!(
        refused.contains("1 recorded results were not reproduced"),
        "{refused}"
    );
    assert!(String::from_utf8_lossy(&out).contains("recorded 0, replayed ENOENT"));
    opts.allow_differences = true;
    assert!(!run_replay(&ops, &opts, &mut Vec::new()).unwrap().is_empty());
}
