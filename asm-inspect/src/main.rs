//! Compiles `lockref-asm-probes` to assembly for several targets and checks
//! the lockless fast paths, printing every listing for people to read.
//!
//! ```text
//! cargo run -p asm-inspect            # check; exit status 1 on a regression
//! cargo run -p asm-inspect -- --quiet # only the verdicts
//! ```
//!
//! Checks:
//! - x86_64: in the part of each probe reachable from its entry without a
//!   call (the fast path), every locked instruction is a `lock cmpxchg`;
//!   after each `lock cmpxchg` the success branch reaches a `ret` with no
//!   further locked instruction (one compare-and-swap per attempt, and per
//!   successful operation); the shortest call-free path from entry to `ret`
//!   has exactly one `lock cmpxchg` and at most [`X86_BUDGET`]
//!   instructions.
//! - aarch64 with `+lse`: the fast path's only atomics are `cas` family
//!   instructions with exactly the documented ordering suffix (`cas`
//!   relaxed, `casa` acquire, `casl` release), and a call-free `ret` exists.
//! - aarch64 default (outline atomics): reported, and the helper called
//!   must carry the documented ordering (`__aarch64_cas8_relax`/`_acq`/
//!   `_rel`).
//! - thumbv7em (no 64-bit compare-and-swap): the lock-only build is
//!   reported: it has no `ldrexd`/`strexd` and calls the locked path.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The most instructions the shortest fast path of a probe may have on
/// x86_64 (entry to `ret`, success on the first compare-and-swap).
const X86_BUDGET: usize = 28;

/// Each probe and the memory ordering its documentation promises.
const PROBES: &[(&str, Order)] = &[
    ("probe_get", Order::Relaxed),
    ("probe_get_not_zero", Order::Acquire),
    ("probe_get_not_dead", Order::Acquire),
    ("probe_put_return", Order::Release),
    ("probe_put_or_lock", Order::Release),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Relaxed,
    Acquire,
    Release,
}

impl Order {
    /// The LSE instruction for a 64-bit compare-and-swap of this ordering.
    fn lse(self) -> &'static str {
        match self {
            Order::Relaxed => "cas",
            Order::Acquire => "casa",
            Order::Release => "casl",
        }
    }

    /// The outline-atomics helper suffix.
    fn outline(self) -> &'static str {
        match self {
            Order::Relaxed => "relax",
            Order::Acquire => "acq",
            Order::Release => "rel",
        }
    }
}

/// One instruction of a listing.
#[derive(Clone, Debug)]
struct Insn {
    mnemonic: String,
    operands: String,
    text: String,
}

/// A function's body: instructions and where each label points.
struct Body {
    insns: Vec<Insn>,
    labels: HashMap<String, usize>,
}

fn main() -> ExitCode {
    let quiet = std::env::args().any(|a| a == "--quiet");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut failures = Vec::new();
    let builds: &[(&str, &str, &[&str])] = &[
        ("x86_64", host_target(), &[]),
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
    for &(name, target, flags) in builds {
        println!("\n======== {name} ({target})");
        let asm = match build(&root, target, flags, name) {
            Ok(asm) => asm,
            Err(e) => {
                failures.push(format!("{name}: build failed: {e}"));
                continue;
            }
        };
        for &(probe, order) in PROBES {
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
            let verdict = match name {
                "x86_64" => check_x86(&body),
                "aarch64 +lse" => check_lse(&body, order),
                n if n.starts_with("aarch64 default") => check_outline(&body, order),
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
    if failures.is_empty() {
        println!("\nasm-inspect: all fast paths as documented");
        ExitCode::SUCCESS
    } else {
        println!("\nasm-inspect: {} regression(s):", failures.len());
        for f in &failures {
            println!("  {f}");
        }
        ExitCode::FAILURE
    }
}

fn host_target() -> &'static str {
    "x86_64-unknown-linux-gnu"
}

/// Compiles the probes for `target` and returns the assembly text.
fn build(root: &Path, target: &str, flags: &[&str], name: &str) -> Result<String, String> {
    let dir: PathBuf = root
        .join("target/asm-inspect")
        .join(name.replace([' ', '(', ')', '+'], "_"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &dir)
        .env_remove("RUSTFLAGS")
        .args([
            "rustc",
            "-q",
            "-p",
            "lockref-asm-probes",
            "--release",
            "--lib",
            "--target",
            target,
            "--",
        ])
        .args(["--emit", "asm", "-C", "codegen-units=1"])
        .args(flags)
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("cargo rustc exited with {status}"));
    }
    let deps = dir.join(target).join("release/deps");
    let newest = std::fs::read_dir(&deps)
        .map_err(|e| format!("{}: {e}", deps.display()))?
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("lockref_asm_probes") && n.ends_with(".s")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .ok_or("no .s file produced")?;
    std::fs::read_to_string(newest.path()).map_err(|e| e.to_string())
}

/// The symbol `name` is set to, when the listing defines it as an alias.
fn alias_of<'a>(asm: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("{name} = ");
    asm.lines()
        .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
}

/// The instructions of `name` in an assembly listing.
fn function(asm: &str, name: &str) -> Option<Body> {
    let mut lines = asm
        .lines()
        .skip_while(|l| l.trim_end() != format!("{name}:"));
    lines.next()?;
    let mut insns = Vec::new();
    let mut labels = HashMap::new();
    for line in lines {
        let t = line.trim();
        if t.starts_with(".Lfunc_end") || t.starts_with(".size") || t.starts_with(".section") {
            break;
        }
        if let Some(label) = t.strip_suffix(':') {
            labels.insert(label.to_string(), insns.len());
            continue;
        }
        if t.is_empty()
            || t.starts_with('.')
            || t.starts_with('#')
            || t.starts_with("//")
            || t.starts_with('@')
        {
            continue;
        }
        let t = t
            .split(" //")
            .next()
            .unwrap_or(t)
            .split(" @")
            .next()
            .unwrap_or(t)
            .trim();
        let mut parts = t.splitn(2, char::is_whitespace);
        let mut mnemonic = parts.next().unwrap_or("").to_string();
        let mut operands = parts.next().unwrap_or("").trim().to_string();
        if mnemonic == "lock" {
            // `lock cmpxchgq ...` is one instruction.
            let mut rest = operands.splitn(2, char::is_whitespace);
            mnemonic = format!("lock {}", rest.next().unwrap_or(""));
            operands = rest.next().unwrap_or("").trim().to_string();
        }
        insns.push(Insn {
            mnemonic,
            operands,
            text: t.to_string(),
        });
    }
    Some(Body { insns, labels })
}

/// Whether an instruction ends the function here (return or tail call).
fn is_exit(i: &Insn) -> bool {
    matches!(i.mnemonic.as_str(), "ret" | "retq")
}

fn is_call(i: &Insn) -> bool {
    let m = i.mnemonic.as_str();
    m.starts_with("call")
        || m == "bl"
        || m == "blx"
        || ((m == "jmp" || m == "jmpq" || m == "b") && !i.operands.starts_with(".L"))
}

fn is_unconditional_jump(i: &Insn) -> bool {
    matches!(i.mnemonic.as_str(), "jmp" | "jmpq" | "b")
}

fn is_branch(i: &Insn) -> bool {
    let m = i.mnemonic.as_str();
    (m.starts_with('j')
        || m.starts_with("b.")
        || m.starts_with("cb")
        || m.starts_with("tb")
        || m == "b")
        && !is_call(i)
}

/// The label a branch jumps to.
fn target(i: &Insn) -> Option<&str> {
    i.operands
        .split(',')
        .map(str::trim)
        .find(|o| o.starts_with(".L"))
}

/// Successors of instruction `at` (none for exits and calls).
fn successors(body: &Body, at: usize) -> Vec<usize> {
    let i = &body.insns[at];
    if is_exit(i) || is_call(i) {
        return Vec::new();
    }
    let mut next = Vec::new();
    if is_branch(i) {
        if let Some(t) = target(i).and_then(|l| body.labels.get(l)) {
            next.push(*t);
        }
    }
    if !is_unconditional_jump(i) && at + 1 < body.insns.len() {
        next.push(at + 1);
    }
    next
}

/// Instructions reachable from `from` without passing a call.
fn region(body: &Body, from: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at >= body.insns.len() || !seen.insert(at) {
            continue;
        }
        queue.extend(successors(body, at));
    }
    seen
}

/// The shortest call-free path from `from` to an exit, as indices.
fn shortest_exit_path(body: &Body, from: usize) -> Option<Vec<usize>> {
    let mut prev: HashMap<usize, usize> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(at) = queue.pop_front() {
        if is_exit(&body.insns[at]) {
            let mut path = vec![at];
            let mut cur = at;
            while let Some(&p) = prev.get(&cur) {
                path.push(p);
                cur = p;
            }
            path.reverse();
            return Some(path);
        }
        for n in successors(body, at) {
            if n < body.insns.len() && seen.insert(n) {
                prev.insert(n, at);
                queue.push_back(n);
            }
        }
    }
    None
}

fn is_locked(i: &Insn) -> bool {
    i.mnemonic.starts_with("lock ") || (i.mnemonic.starts_with("xchg") && i.operands.contains('('))
}

fn check_x86(body: &Body) -> Result<String, String> {
    let fast = region(body, 0);
    let mut cmpxchgs = Vec::new();
    for &at in &fast {
        let i = &body.insns[at];
        if is_locked(i) {
            if !i.mnemonic.starts_with("lock cmpxchg") {
                return Err(format!(
                    "locked instruction other than cmpxchg on the fast path: `{}`",
                    i.text
                ));
            }
            cmpxchgs.push(at);
        }
    }
    if cmpxchgs.is_empty() {
        return Err("no lock cmpxchg on the fast path".into());
    }
    for &at in &cmpxchgs {
        // The branch on the compare-and-swap's ZF; the compiler may
        // schedule flag-preserving moves in between.
        let mut b = at + 1;
        while body
            .insns
            .get(b)
            .is_some_and(|i| i.mnemonic.starts_with("mov") || i.mnemonic.starts_with("lea"))
        {
            b += 1;
        }
        let branch = body.insns.get(b).ok_or("cmpxchg at the end")?;
        let success = match branch.mnemonic.as_str() {
            "je" => target(branch).and_then(|l| body.labels.get(l)).copied(),
            "jne" => Some(b + 1),
            _ => {
                return Err(format!(
                    "cmpxchg's result not branched on, but `{}`",
                    branch.text
                ))
            }
        }
        .ok_or("success target not found")?;
        let after = region(body, success);
        if let Some(&bad) = after.iter().find(|&&n| is_locked(&body.insns[n])) {
            return Err(format!(
                "a second locked instruction after a successful cmpxchg: `{}`",
                body.insns[bad].text
            ));
        }
        if !after.iter().any(|&n| is_exit(&body.insns[n])) {
            return Err("no call-free return after a successful cmpxchg".into());
        }
    }
    let path = shortest_exit_path(body, 0).ok_or("no call-free path from entry to ret")?;
    let on_path = path.iter().filter(|&&n| is_locked(&body.insns[n])).count();
    // The shortest exit may be a refusal (no write); the success path is
    // entry -> cmpxchg -> ret.
    let success_len = cmpxchgs
        .iter()
        .filter_map(|&c| {
            let to = shortest_between(body, 0, c)?;
            let from = shortest_exit_path(body, c)?;
            Some(to + from.len())
        })
        .min()
        .ok_or("no path through a cmpxchg")?;
    if success_len > X86_BUDGET {
        return Err(format!(
            "fast path has {success_len} instructions, budget {X86_BUDGET}"
        ));
    }
    Ok(format!(
        "one `lock cmpxchg` per attempt ({} copies after unrolling), no call, no other locked instruction; \
         success path {success_len} instructions (budget {X86_BUDGET}); shortest exit {} instructions with {on_path} locked",
        cmpxchgs.len(),
        path.len()
    ))
}

/// Instructions on the shortest call-free path from `from` up to (not
/// including) `to`.
fn shortest_between(body: &Body, from: usize, to: usize) -> Option<usize> {
    let mut dist: HashMap<usize, usize> = HashMap::from([(from, 0)]);
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            return dist.get(&at).copied();
        }
        let d = dist[&at];
        for n in successors(body, at) {
            if n < body.insns.len() && !dist.contains_key(&n) {
                dist.insert(n, d + 1);
                queue.push_back(n);
            }
        }
    }
    None
}

const AARCH64_ATOMICS: &[&str] = &[
    "ldxr", "ldaxr", "stxr", "stlxr", "ldadd", "swp", "ldset", "ldclr",
];

fn check_lse(body: &Body, order: Order) -> Result<String, String> {
    let fast = region(body, 0);
    let mut cas = 0;
    for &at in &fast {
        let m = body.insns[at].mnemonic.as_str();
        if m.starts_with("cas") {
            if m != order.lse() {
                return Err(format!(
                    "`{m}` on the fast path; documented ordering {order:?} is `{}`",
                    order.lse()
                ));
            }
            cas += 1;
        }
        if AARCH64_ATOMICS.iter().any(|a| m.starts_with(a)) {
            return Err(format!(
                "other atomic on the fast path: `{}`",
                body.insns[at].text
            ));
        }
    }
    if cas == 0 {
        return Err(format!("no inline `{}` on the fast path", order.lse()));
    }
    if !fast.iter().any(|&n| is_exit(&body.insns[n])) {
        return Err("no call-free return".into());
    }
    Ok(format!(
        "inline `{}` ({cas} copies after unrolling), no other atomic, call-free return",
        order.lse()
    ))
}

fn check_outline(body: &Body, order: Order) -> Result<String, String> {
    let helpers: BTreeSet<&str> = body
        .insns
        .iter()
        .filter(|i| i.mnemonic == "bl")
        .filter_map(|i| i.operands.split_whitespace().next())
        .filter(|op| op.starts_with("__aarch64_cas8"))
        .collect();
    if helpers.is_empty() {
        return Err("no call to an __aarch64_cas8_* helper".into());
    }
    let want = format!("__aarch64_cas8_{}", order.outline());
    if let Some(bad) = helpers.iter().find(|h| **h != want) {
        return Err(format!("calls `{bad}`; documented ordering wants `{want}`"));
    }
    Ok(format!(
        "outline atomics: the compare-and-swap is a call to `{want}` (LSE `cas` or LL/SC picked at run time); build with `-C target-feature=+lse` for it inline"
    ))
}

fn check_lock_only(body: &Body) -> Result<String, String> {
    let count = |m: &str| {
        body.insns
            .iter()
            .filter(|i| i.mnemonic.starts_with(m))
            .count()
    };
    if count("ldrexd") + count("strexd") > 0 {
        return Err("64-bit exclusive access in the lock-only build".into());
    }
    let calls = body.insns.iter().filter(|i| is_call(i)).count();
    Ok(format!(
        "lock-only: {} instructions, {calls} call(s) into the locked path, {} ldrex / {} strex / {} dmb inline",
        body.insns.len(),
        count("ldrex"),
        count("strex"),
        count("dmb")
    ))
}
