//! Cache lines. Per-thread lockrefs packed adjacent (false sharing: eight
//! 8-byte lockrefs to a line) vs each in its own `CachePadded` line vs one
//! shared lockref; and the dentry layout: the lockref in the same cache
//! line as the fields a lookup reads vs on a line of its own (the kernel
//! moved `d_lockref` out of the lookup line for +55% on stat2), under
//! concurrent lookups plus get/put. The dcache's `Dentry` uses the split
//! layout, asserted at compile time in `dcache/src/dentry.rs`. The two
//! layouts are `lockref_measure::layout`'s, the ones the harness's stat2
//! runs.
//!
//! `cargo bench -p lockref-benches --bench cachelines`

use criterion::Criterion;
use crossbeam_utils::CachePadded;
use lockref::LockRef;
use lockref_benches::{contended, criterion, machine, mops, ratio, Registry, Table};
use lockref_measure::get_put::lockref_get_put as get_put;
use lockref_measure::layout::{DentryLayout, LookupLine, OwnLine};

static REG: Registry = Registry::new();

/// Runs `op(thread index)` on `threads` threads and records the tally.
fn run(c: &mut Criterion, id: &str, threads: usize, op: impl Fn(usize) + Sync) {
    c.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let (elapsed, per_thread) = contended(threads, iters, &op);
            REG.tally(id, &per_thread);
            elapsed
        })
    });
}

fn sharing(c: &mut Criterion) {
    for threads in [2, 4] {
        let packed: Vec<LockRef<()>> = (0..threads).map(|_| LockRef::new(())).collect();
        run(c, &format!("packed x{threads}"), threads, |i| {
            get_put(&packed[i])
        });
        let padded: Vec<CachePadded<LockRef<()>>> = (0..threads)
            .map(|_| CachePadded::new(LockRef::new(())))
            .collect();
        run(c, &format!("padded x{threads}"), threads, |i| {
            get_put(&padded[i])
        });
        let one = LockRef::new(());
        run(c, &format!("shared x{threads}"), threads, |_| get_put(&one));
    }
}

fn layout(c: &mut Criterion) {
    let same = LookupLine::new();
    let split = OwnLine::new();
    // Half the threads look up, half get + put; the tally's per-thread
    // rates are split the same way in the report.
    let threads = 4;
    run(c, "layout same-line x4", threads, |i| {
        if i % 2 == 0 {
            assert!(same.lookup());
        } else {
            same.get_put();
        }
    });
    run(c, "layout split-line x4", threads, |i| {
        if i % 2 == 0 {
            assert!(split.lookup());
        } else {
            split.get_put();
        }
    });
}

fn report() {
    let mut t = Table::new(
        &format!("Cache lines: per-thread lockrefs packed vs padded vs one shared ({}), total M get+put/s", machine()),
        &["threads", "packed (false sharing)", "CachePadded", "one shared", "padded / packed"],
    );
    for threads in [2, 4] {
        let total = |k: &str| {
            REG.tally_of(&format!("{k} x{threads}"))
                .map_or(f64::NAN, |t| t.total())
        };
        t.row(vec![
            threads.to_string(),
            mops(total("packed")),
            mops(total("padded")),
            mops(total("shared")),
            ratio(total("padded") / total("packed")),
        ]);
    }
    t.emit("cachelines");
    let mut l = Table::new(
        "Dentry layout under 2 lookup threads + 2 get/put threads: M ops/s by role",
        &["layout", "lookups Mops/s", "get+put Mops/s"],
    );
    let role = |id: &str| {
        // Even thread indices look up, odd ones get + put.
        let r = REG.tally_of(id).map(|t| t.rates()).unwrap_or_default();
        let sum = |parity: usize| {
            r.iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == parity)
                .map(|(_, x)| x)
                .sum::<f64>()
        };
        (sum(0), sum(1))
    };
    let (same_l, same_g) = role("layout same-line x4");
    let (split_l, split_g) = role("layout split-line x4");
    l.row(vec![
        "lockref in the lookup line".into(),
        mops(same_l),
        mops(same_g),
    ]);
    l.row(vec![
        "lockref on its own line (dcache's choice)".into(),
        mops(split_l),
        mops(split_g),
    ]);
    l.emit("dentry-layout");
    println!("split/same lookups: {}", ratio(split_l / same_l));
}

fn main() {
    let mut c = criterion(200, 800, 10);
    sharing(&mut c);
    layout(&mut c);
    c.final_summary();
    if REG.tally_of("packed x2").is_some() {
        report();
    }
}
