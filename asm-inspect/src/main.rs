//! Compiles `lockref-asm-probes` to assembly for several targets and checks
//! the lockless fast paths, printing every listing for people to read.
//!
//! ```text
//! cargo run -p asm-inspect              # check
//! cargo run -p asm-inspect -- --quiet   # only the verdicts
//! cargo run -p asm-inspect -- --install # first `rustup target add` what is missing
//! ```
//!
//! Exit status: 0 when every fast path is as documented, 1 on a regression,
//! 2 when a target is not installed (a setup step: the message names the
//! `rustup target add` to run, or pass `--install`).
//!
//! Checks:
//! - x86_64: in the part of each probe reachable from its entry without a
//!   call (the fast path), every locked instruction is a `lock cmpxchg`;
//!   after each `lock cmpxchg` the success branch reaches a `ret` with no
//!   further locked instruction (one compare-and-swap per attempt, and per
//!   successful operation); the shortest call-free path from entry to `ret`
//!   has exactly one `lock cmpxchg` and at most `checks::X86_BUDGET`
//!   instructions.
//! - aarch64 with `+lse`: the fast path's only atomics are `cas` family
//!   instructions with exactly the documented ordering suffix (`cas`
//!   relaxed, `casa` acquire, `casl` release), and a call-free `ret` exists.
//! - aarch64 default (outline atomics): reported, and the helper called
//!   must carry the documented ordering (`__aarch64_cas8_relax`/`_acq`/
//!   `_rel`).
//! - thumbv7em (no 64-bit compare-and-swap): the lock-only build is
//!   reported: it has no `ldrexd`/`strexd` and calls the locked path.
//! - x86_64, the safe table's lookup by id (`lockref_table::Table::get`,
//!   built with the probes' `table` feature): no `crossbeam_epoch` code
//!   or call (no epoch pin), only `lock cmpxchg` on the call-free part,
//!   and a success path through one of them to a `ret` with no other
//!   locked instruction, within `checks::X86_LOOKUP_BUDGET`.

mod cargo_asm;
mod checks;
mod flow;
mod listing;

use std::path::Path;
use std::process::ExitCode;

use crate::cargo_asm::{build, host_target, BuildError};
use crate::checks::{
    check_lock_only, check_lse, check_lse_add, check_outline, check_outline_add, check_x86,
    check_x86_add, check_x86_lookup,
};
use crate::listing::{alias_of, function};

/// Each probe and the memory ordering its documentation promises.
const PROBES: &[(&str, Order)] = &[
    ("probe_get", Order::Relaxed),
    ("probe_get_not_zero", Order::Acquire),
    ("probe_get_not_dead", Order::Acquire),
    ("probe_put_return", Order::Release),
    ("probe_put_or_lock", Order::Release),
    ("probe_counted_clone", Order::Relaxed),
    ("probe_counted_drop", Order::Release),
    ("probe_put_many_and_kill", Order::AcqRel),
];

/// The experimental fetch_add word's probes (not in the lock-only build,
/// which has no such word).
const ADD_PROBES: &[(&str, Order)] = &[
    ("probe_add_get", Order::Relaxed),
    ("probe_add_get_not_dead", Order::Acquire),
    ("probe_add_put_owned", Order::Release),
    ("probe_add_counted_clone", Order::Relaxed),
    ("probe_add_counted_drop", Order::Release),
];

/// The build of the safe table's probe (std, the host only).
const TABLE_BUILD: &str = "x86_64 (lockref-table, feature table)";

/// The safe table's lookup by id: no epoch pin, one compare-and-swap.
fn check_table(asm: &str, quiet: bool, failures: &mut Vec<String>) {
    let probe = "probe_table_get";
    let Some(body) = function(asm, probe) else {
        failures.push(format!("{TABLE_BUILD}: {probe} not found in the listing"));
        return;
    };
    if !quiet {
        println!("\n--- {probe} (Acquire)");
        for i in &body.insns {
            println!("    {}", i.text);
        }
    }
    match check_x86_lookup(&body) {
        Ok(summary) => println!("ok   {probe}: {summary}"),
        Err(e) => {
            println!("FAIL {probe}: {e}");
            failures.push(format!("{TABLE_BUILD}: {probe}: {e}"));
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

impl Order {
    /// The LSE instruction for a 64-bit compare-and-swap of this ordering.
    pub(crate) fn lse(self) -> &'static str {
        match self {
            Order::Relaxed => "cas",
            Order::Acquire => "casa",
            Order::Release => "casl",
            Order::AcqRel => "casal",
        }
    }

    /// The LSE instruction for a 64-bit fetch_add of this ordering.
    pub(crate) fn lse_add(self) -> &'static str {
        match self {
            Order::Relaxed => "ldadd",
            Order::Acquire => "ldadda",
            Order::Release => "ldaddl",
            Order::AcqRel => "ldaddal",
        }
    }

    /// The outline-atomics helper suffix.
    pub(crate) fn outline(self) -> &'static str {
        match self {
            Order::Relaxed => "relax",
            Order::Acquire => "acq",
            Order::Release => "rel",
            Order::AcqRel => "acq_rel",
        }
    }
}

/// One instruction of a listing.
fn main() -> ExitCode {
    let quiet = std::env::args().any(|a| a == "--quiet");
    let install = std::env::args().any(|a| a == "--install");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut failures = Vec::new();
    let builds: &[(&str, &str, &[&str])] = &[
        ("x86_64", host_target(), &[]),
        (TABLE_BUILD, host_target(), &[]),
        (
            "aarch64 +lse",
            "aarch64-unknown-linux-gnu",
            &["-C", "target-feature=+lse"],
        ),
        (
            "aarch64 default (outline atomics)",
            "aarch64-unknown-linux-gnu",
            &[],
        ),
        ("thumbv7em (lock-only)", "thumbv7em-none-eabihf", &[]),
    ];
    if install {
        let targets: Vec<&str> = builds.iter().map(|b| b.1).collect();
        if let Err(e) = cargo_asm::install(&targets) {
            println!("asm-inspect: {e}");
            return ExitCode::from(2);
        }
    }
    let mut missing = Vec::new();
    for &(name, target, flags) in builds {
        println!("\n======== {name} ({target})");
        let features: &[&str] = if name == TABLE_BUILD { &["table"] } else { &[] };
        let asm = match build(&root, target, flags, features, name) {
            Ok(asm) => asm,
            Err(BuildError::TargetMissing(fix)) => {
                println!("not installed: run `{fix}` (or pass --install)");
                missing.push(fix);
                continue;
            }
            Err(BuildError::Failed(e)) => {
                failures.push(format!("{name}: build failed: {e}"));
                continue;
            }
        };
        if name == TABLE_BUILD {
            check_table(&asm, quiet, &mut failures);
            continue;
        }
        let lock_only = name.starts_with("thumbv7em");
        let add_probes = if lock_only { &[][..] } else { ADD_PROBES };
        for (&(probe, order), add_word) in PROBES
            .iter()
            .map(|p| (p, false))
            .chain(add_probes.iter().map(|p| (p, true)))
        {
            let Some(body) = function(&asm, probe) else {
                // The compiler may emit a probe as an alias of an identical
                // function (`probe = symbol`).
                if let Some(alias) = alias_of(&asm, probe) {
                    if name.starts_with("thumbv7em") {
                        println!("ok   {probe}: lock-only: an alias of `{alias}` (the locked path itself)");
                        continue;
                    }
                    failures.push(format!(
                        "{name}: {probe} is an alias of `{alias}`, not a fast path"
                    ));
                    continue;
                }
                failures.push(format!("{name}: {probe} not found in the listing"));
                continue;
            };
            if !quiet {
                println!("\n--- {probe} ({order:?})");
                for i in &body.insns {
                    println!("    {}", i.text);
                }
            }
            let verdict = match (name, add_word) {
                ("x86_64", false) => check_x86(&body),
                ("x86_64", true) => check_x86_add(&body),
                ("aarch64 +lse", false) => check_lse(&body, order),
                ("aarch64 +lse", true) => check_lse_add(&body, order),
                (n, false) if n.starts_with("aarch64 default") => check_outline(&body, order),
                (n, true) if n.starts_with("aarch64 default") => check_outline_add(&body, order),
                _ => check_lock_only(&body),
            };
            match verdict {
                Ok(summary) => println!("ok   {probe}: {summary}"),
                Err(e) => {
                    println!("FAIL {probe}: {e}");
                    failures.push(format!("{name}: {probe}: {e}"));
                }
            }
        }
    }
    if !failures.is_empty() {
        println!("\nasm-inspect: {} regression(s):", failures.len());
        for f in &failures {
            println!("  {f}");
        }
        ExitCode::FAILURE
    } else if !missing.is_empty() {
        missing.dedup();
        println!("\nasm-inspect: not checked, targets not installed; run:");
        for fix in &missing {
            println!("  {fix}");
        }
        println!("or `cargo run -p asm-inspect -- --install`");
        ExitCode::from(2)
    } else {
        println!("\nasm-inspect: all fast paths as documented");
        ExitCode::SUCCESS
    }
}
