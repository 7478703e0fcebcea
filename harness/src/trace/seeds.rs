//! Which seed's change a trace's operations reach, counted on one pass:
//! the explanation of a replay's gain, seed by seed.
//!
//! | seed | its change runs on | so in a trace |
//! |---|---|---|
//! | 000 | every open that succeeds (the file consumes the walk's reference) | opens with result `0` |
//! | 001 | every open that fails after the file was allocated (its release through the token) | opens with an errno |
//! | 002 | allocating and freeing a pseudo file's dentry (pipes, sockets) | none: a trace holds no pipe or socket |
//! | 003 | `O_CREAT` of a name that exists (looked up, no directory write lock) | `O_CREAT` opens whose name is there when they run |
//! | 004 | `try_lookup_noperm` (not revalidating) | none: neither the walk nor open calls it |
//!
//! `stat` runs the same code before and after every seed, and so does the
//! rest of each operation (the walk, the lookups, the counts): a seed's
//! change saves a few atomic operations or one lock on the operations it
//! reaches, so its gain on a trace is at most its share of the operations
//! times its own testcase's gain.

use lockref_dcache::{Dcache, Variants};

use super::{Op, OpKind, Pass};

/// One seed's reach in a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedShare {
    /// The seed's number (`000`..`004`).
    pub seed: &'static str,
    /// Its change, in a few words.
    pub change: &'static str,
    /// The operations it reaches, in a few words.
    pub reaches: &'static str,
    /// How many of the trace's operations it reaches.
    pub ops: usize,
    /// The dcache variants with only this seed applied.
    pub alone: Variants,
}

/// Each seed's share of one pass over `ops` on `cache` (built by
/// [`super::populate`]); the pass puts the tree back.
pub fn seed_shares(cache: &Dcache, ops: &[Op]) -> Vec<SeedShare> {
    let (mut opened, mut failed, mut creat_existing) = (0, 0, 0);
    let mut pass = Pass::new();
    for op in ops {
        // Whether the name is there, asked before the operation runs.
        let existed =
            matches!(op.kind, OpKind::Open(f) if f.is_creat()) && cache.stat(&op.path).is_ok();
        let got = pass.step(cache, op);
        if let OpKind::Open(_) = op.kind {
            if got.is_ok() {
                opened += 1;
            } else {
                failed += 1;
            }
            if existed {
                creat_existing += 1;
            }
        }
    }
    pass.finish(cache);
    let b = Variants::BEFORE;
    vec![
        SeedShare {
            seed: "000",
            change: "the open consumes the walk's reference",
            reaches: "opens that succeed",
            ops: opened,
            alone: Variants {
                open_consume: true,
                ..b
            },
        },
        SeedShare {
            seed: "001",
            change: "a failed open's file released at once",
            reaches: "opens that fail",
            ops: failed,
            alone: Variants {
                failed_open_token: true,
                ..b
            },
        },
        SeedShare {
            seed: "002",
            change: "pseudo dentries are their own parent",
            reaches: "pipes and sockets (none traced)",
            ops: 0,
            alone: Variants {
                pseudo_self_parent: true,
                ..b
            },
        },
        SeedShare {
            seed: "003",
            change: "O_CREAT looks the name up first",
            reaches: "O_CREAT of an existing name",
            ops: creat_existing,
            alone: Variants {
                creat_lookup_first: true,
                ..b
            },
        },
        SeedShare {
            seed: "004",
            change: "try_lookup_noperm skips revalidation",
            reaches: "try_lookup_noperm (open and stat never call it)",
            ops: 0,
            alone: Variants {
                try_lookup_skips_revalidate: true,
                ..b
            },
        },
    ]
}

/// The shares as a table, for the report.
pub fn shares_table(shares: &[SeedShare], total: usize) -> String {
    let mut out = format!(
        "seeds' reach: of the trace's {total} operations (one pass), the ones each seed's change runs on\n"
    );
    for s in shares {
        let pct = 100.0 * s.ops as f64 / total.max(1) as f64;
        out.push_str(&format!(
            "  {} {:<40} {:<48} {:>9} {:>6.1}%{}\n",
            s.seed,
            s.change,
            s.reaches,
            s.ops,
            pct,
            if s.ops == 0 {
                "  (not timed alone)"
            } else {
                ""
            }
        ));
    }
    out.push_str(
        "  stat, and the walk of every operation, run the same code before and after every seed\n",
    );
    out
}
