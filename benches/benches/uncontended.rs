//! Uncontended, one thread: each LockRef operation against the physical
//! floor (`fetch_add`/`fetch_sub`) and against the peers a user would pick
//! instead. Prints ratio tables from the same run's samples.
//!
//! `cargo bench -p lockref-benches --bench uncontended`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::Criterion;
use lockref::policy::DefaultPolicy;
use lockref::{CasWord, LockRef};
use lockref_benches::{contenders, criterion, machine, ratio, Registry, Table};

static REG: Registry = Registry::new();

fn bench(c: &mut Criterion, id: &str, mut op: impl FnMut()) {
    c.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = std::time::Instant::now();
            for _ in 0..iters {
                op();
            }
            let elapsed = start.elapsed();
            REG.sample(id, iters, elapsed);
            elapsed
        })
    });
}

fn single_ops(c: &mut Criterion) {
    let floor = AtomicU64::new(1 << 40);
    bench(c, "floor fetch_add", || {
        black_box(&floor).fetch_add(1, Ordering::Relaxed);
    });
    bench(c, "floor fetch_sub", || {
        black_box(&floor).fetch_sub(1, Ordering::Release);
    });
    let r = LockRef::with_raw((), CasWord::<DefaultPolicy>::with_count(1 << 28).unwrap());
    bench(c, "LockRef get", || black_box(&r).get());
    bench(c, "LockRef get_not_dead", || {
        black_box(black_box(&r).get_not_dead());
    });
    bench(c, "LockRef get_not_zero", || {
        black_box(black_box(&r).get_not_zero());
    });
    bench(c, "LockRef put_return", || {
        let _ = black_box(black_box(&r).put_return());
    });
    bench(c, "LockRef put_or_lock", || {
        drop(black_box(black_box(&r).put_or_lock()));
    });
    bench(c, "LockRef lock+unlock", || drop(black_box(&r).lock()));
}

fn pairs(c: &mut Criterion) {
    for (name, contender) in contenders() {
        bench(c, &format!("{name} get+put"), || {
            black_box(&contender).get_put()
        });
    }
}

fn report() {
    let ns = |id: &str| REG.median_ns(id).unwrap_or(f64::NAN);
    let add = ns("floor fetch_add");
    let sub = ns("floor fetch_sub");
    let mut t = Table::new(
        &format!("Uncontended single operations, 1 thread ({}): median ns/op, and the floor's time over the operation's", machine()),
        &["operation", "ns/op", "floor", "vs floor"],
    );
    for (id, floor) in [
        ("floor fetch_add", add),
        ("floor fetch_sub", sub),
        ("LockRef get", add),
        ("LockRef get_not_dead", add),
        ("LockRef get_not_zero", add),
        ("LockRef put_return", sub),
        ("LockRef put_or_lock", sub),
        ("LockRef lock+unlock", add + sub),
    ] {
        t.row(vec![
            id.into(),
            format!("{:.2}", ns(id)),
            format!("{floor:.2}"),
            ratio(floor / ns(id)),
        ]);
    }
    t.emit("uncontended-ops");

    let base = ns("floor fetch_add+fetch_sub get+put");
    let lr = ns("LockRef<KernelRetry> get+put");
    let pl = ns("parking_lot::Mutex<u32> get+put");
    let mut t = Table::new(
        "Uncontended get + put (or lock, +1, unlock, lock, -1, unlock), 1 thread: median ns/op and speed relative to the floor and to LockRef",
        &["contender", "ns/op", "speed vs floor", "LockRef speedup over it"],
    );
    for (name, _) in contenders() {
        let id = format!("{name} get+put");
        t.row(vec![
            name.into(),
            format!("{:.2}", ns(&id)),
            ratio(base / ns(&id)),
            ratio(ns(&id) / lr),
        ]);
    }
    t.emit("uncontended-pairs");
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "target: LockRef get+put >= 0.9x the floor: {} ({}); >= 2x parking_lot: {} ({})",
        ratio(base / lr),
        verdict(base / lr >= 0.9),
        ratio(pl / lr),
        verdict(pl / lr >= 2.0)
    );
}

fn main() {
    let mut c = criterion(300, 700, 20);
    single_ops(&mut c);
    pairs(&mut c);
    c.final_summary();
    if REG.median_ns("floor fetch_add").is_some() {
        report();
    }
}
