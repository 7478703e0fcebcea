//! End to end through the kernel: N threads of `stat` and of open+close
//! on one file of a mounted passthrough, with each inode table, in one
//! run. Entries and attributes are mounted with a zero TTL, so every
//! `stat` reaches the server (a `LOOKUP` and a `GETATTR`) and every open a
//! `LOOKUP`, `OPEN`, `FLUSH` and `RELEASE`. Prints ops/s (the median of
//! the repetitions) and the ratio lockref / virtiofsd.
//!
//! ```text
//! cargo bench -p lockref-fuse --bench through_mount [-- THREADS... ]
//! ```
//!
//! Needs root and `/dev/fuse`; says so and exits otherwise.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockref_fuse::{InodeTable, LockrefTable, MountConfig, Passthrough, VirtiofsdTable};

const RUN: Duration = Duration::from_millis(700);
const REPEATS: usize = 5;

#[derive(Clone, Copy)]
enum Workload {
    Stat,
    OpenClose,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Stat => "stat",
            Workload::OpenClose => "open+close",
        }
    }

    fn once(self, path: &Path) {
        match self {
            Workload::Stat => drop(std::fs::metadata(path).expect("stat")),
            Workload::OpenClose => drop(std::fs::File::open(path).expect("open")),
        }
    }
}

/// Ops/s of `threads` threads running `w` on `path`, one run.
fn run(w: Workload, path: &Path, threads: usize) -> f64 {
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    w.once(path);
                    n += 1;
                }
                ops.fetch_add(n, Ordering::Relaxed);
            });
        }
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
    });
    ops.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A mounted passthrough of a directory holding `file`.
struct Mounted {
    session: lockref_fuse::mount::Mounted,
    path: std::path::PathBuf,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn mount<T: InodeTable>(server_threads: usize) -> Mounted {
    let src = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("file"), "x").unwrap();
    let fs = Arc::new(Passthrough::<T>::with_ttl(src.path(), Duration::ZERO).unwrap());
    let config = MountConfig {
        fsname: "lockref-fuse-bench".into(),
        threads: server_threads,
        allow_other: false,
        ..MountConfig::default()
    };
    let session = lockref_fuse::mount::spawn(fs, mnt.path(), &config).expect("mount");
    Mounted {
        session,
        path: mnt.path().join("file"),
        _dirs: (src, mnt),
    }
}

fn main() {
    if !Path::new("/dev/fuse").exists() || !nix::unistd::geteuid().is_root() {
        println!("through_mount: skipped (needs root and /dev/fuse)");
        return;
    }
    let threads: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let threads = if threads.is_empty() {
        vec![1, 2, 4]
    } else {
        threads
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let server_threads = 4;
    // Both mounted at once and measured alternately, so that drift
    // (frequency, other load) hits both alike.
    let base = mount::<VirtiofsdTable>(server_threads);
    let ours = mount::<LockrefTable>(server_threads);
    let mut results = Vec::new();
    for w in [Workload::Stat, Workload::OpenClose] {
        for &n in &threads {
            run(w, &base.path, n); // warm-up
            run(w, &ours.path, n);
            let (mut b, mut o) = (Vec::new(), Vec::new());
            for _ in 0..REPEATS {
                b.push(run(w, &base.path, n));
                o.push(run(w, &ours.path, n));
            }
            results.push((median(b), median(o)));
        }
    }
    base.session.umount_and_join().unwrap();
    ours.session.umount_and_join().unwrap();
    println!(
        "through the mount: {cpus} CPUs, {server_threads} server threads per mount, TTL 0, median of {REPEATS} alternating runs of {} ms",
        RUN.as_millis()
    );
    println!(
        "{:<11} {:>7} {:>12} {:>12} {:>7}",
        "workload", "threads", "virtiofsd", "lockref", "ratio"
    );
    let mut i = 0;
    for w in [Workload::Stat, Workload::OpenClose] {
        for &n in &threads {
            println!(
                "{:<11} {:>7} {:>12.0} {:>12.0} {:>6.2}x",
                w.name(),
                n,
                results[i].0,
                results[i].1,
                results[i].1 / results[i].0
            );
            i += 1;
        }
    }
}
