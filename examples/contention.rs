//! Shows which path a contended `LockRef` takes under each policy.
//!
//! Worker threads do `get` + `put_return` on one shared `LockRef` while one
//! thread takes the lock and holds it for a short slow-path section, the
//! dentry pattern. For each policy it prints the operations done and, from
//! the `stats` feature, how many completed lock-free, how many
//! compare-and-swaps failed, and how many fell back to the lock.
//!
//! ```text
//! cargo run --release --example contention --features std,stats [-- THREADS [MILLIS]]
//! ```
//!
//! The stats counters are extra atomic writes, so these figures show paths
//! taken, not speed; `benches/` measures speed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use lockref::policy::{ExpBackoff, KernelRetry, Policy, WaitUnlock};
use lockref::{CasWord, LockRef, StatsSnapshot};

fn run<P: Policy>(name: &str, threads: usize, time: Duration) {
    let r = LockRef::with_raw(0_u64, CasWord::<P>::new());
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let (ops, locks) = thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut ops = 0_u64;
                    while !stop.load(Ordering::Relaxed) {
                        r.get();
                        if r.put_return().is_err() {
                            r.lock().decrement().expect("we hold a reference");
                        }
                        ops += 1;
                    }
                    ops
                })
            })
            .collect();
        let holder = s.spawn(|| {
            let mut locks = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                let mut g = r.lock();
                // A slow-path section: some work under the lock.
                for i in 0..200 {
                    *g = g.wrapping_add(i);
                    std::hint::black_box(&mut *g);
                }
                drop(g);
                locks += 1;
                thread::sleep(Duration::from_micros(50));
            }
            locks
        });
        thread::sleep(time);
        stop.store(true, Ordering::Relaxed);
        let ops: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        (ops, holder.join().unwrap())
    });
    let secs = started.elapsed().as_secs_f64();
    let StatsSnapshot {
        operations,
        lockless,
        cas_failures,
        fallbacks,
        ..
    } = r.raw().stats();
    assert_eq!(r.count(), Some(1), "count must be exact after the run");
    let pct = |n: usize| 100.0 * n as f64 / operations.max(1) as f64;
    println!(
        "{name:<12} {threads:>2} threads  {:>8.2} M get+put/s  {locks:>6} lock holds  \
         lock-free {:>5.1}%  fallback {:>5.2}%  failed CAS per op {:>6.3}",
        ops as f64 / secs / 1e6,
        pct(lockless),
        pct(fallbacks),
        cas_failures as f64 / operations.max(1) as f64,
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads = match args.next().map(|a| a.parse::<usize>()) {
        None => thread::available_parallelism().map_or(2, |n| n.get()),
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: contention [THREADS>0 [MILLIS>0]]");
            std::process::exit(2);
        }
    };
    let millis = match args.next().map(|a| a.parse::<u64>()) {
        None => 500,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: contention [THREADS>0 [MILLIS>0]]");
            std::process::exit(2);
        }
    };
    let time = Duration::from_millis(millis);
    println!(
        "lockref contention demo: {threads} worker threads + 1 lock holder, {millis} ms per policy, lockless path: {}",
        lockref::LOCKLESS
    );
    run::<KernelRetry>("KernelRetry", threads, time);
    run::<WaitUnlock>("WaitUnlock", threads, time);
    run::<ExpBackoff>("ExpBackoff", threads, time);
    println!(
        "What to look for: the policies differ only when compare-and-swaps fail often, which takes \
         more threads than this machine's {cpus} CPUs can run at once on one cache line, and a \
         machine with many cores. On 2 to 4 CPUs every policy completes nearly all lock-free \
         and the rows match: that is the expected result here, not a broken demo. Where CASes \
         do fail often, look at two columns: failed CAS per op (ExpBackoff waits after each \
         failure, so it should fail least) and fallback (WaitUnlock waits out a held lock \
         instead of falling back). Run `harness/many-core.sh` there; `cargo bench -p \
         lockref-benches` and `wis -t lockref` measure the speed.",
        cpus = thread::available_parallelism().map_or(1, |n| n.get())
    );
}
