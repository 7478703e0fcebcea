//! The per-target checks of a probe's fast path.

use std::collections::BTreeSet;

use crate::flow::{
    is_call, is_exit, region, shortest_between, shortest_exit_path, successors, target,
};
use crate::listing::{Body, Insn};
use crate::Order;

/// The most instructions the shortest fast path of a probe may have on
/// x86_64 (entry to `ret`, success on the first compare-and-swap).
pub(crate) const X86_BUDGET: usize = 28;

pub(crate) fn is_locked(i: &Insn) -> bool {
    i.mnemonic.starts_with("lock ") || (i.mnemonic.starts_with("xchg") && i.operands.contains('('))
}

pub(crate) fn check_x86(body: &Body) -> Result<String, String> {
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

const AARCH64_ATOMICS: &[&str] = &[
    "ldxr", "ldaxr", "stxr", "stlxr", "ldadd", "swp", "ldset", "ldclr",
];

/// The most instructions of a table lookup's success path on x86_64
/// (entry to `ret`: the slot located, its id compared, one
/// compare-and-swap, the id compared again, the result written; 66 today,
/// 14 of them the saves and restores of the registers that the put back
/// off the success path needs).
pub(crate) const X86_LOOKUP_BUDGET: usize = 72;

/// What a path may reach before its first locked instruction: every
/// instruction from `from` without passing a call or a locked one.
fn before_locked(body: &Body, from: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at >= body.insns.len() || !seen.insert(at) || is_locked(&body.insns[at]) {
            continue;
        }
        queue.extend(successors(body, at));
    }
    seen
}

/// Whether an instruction is the epoch collector's (a pin's thread-local
/// handle, or a call into it).
fn is_epoch(i: &Insn) -> bool {
    i.text.contains("crossbeam_epoch")
}

/// A lookup of the safe table by id (`probe_table_get`): no epoch pin
/// (nothing of `crossbeam_epoch` before the compare-and-swap or on the
/// success path after it), only `lock cmpxchg` on the call-free part, and
/// a success path from entry through one compare-and-swap to a `ret` with
/// no other locked instruction. (The put back of a reference taken on a
/// slot's later entry, with the release that may follow it and its pin,
/// is off the success path.)
pub(crate) fn check_x86_lookup(body: &Body) -> Result<String, String> {
    let before = before_locked(body, 0);
    if let Some(&pin) = before.iter().find(|&&n| is_epoch(&body.insns[n])) {
        return Err(format!(
            "the epoch collector before the compare-and-swap: `{}`",
            body.insns[pin].text
        ));
    }
    let fast = region(body, 0);
    let mut best: Option<usize> = None;
    for &at in &fast {
        let i = &body.insns[at];
        if !is_locked(i) {
            continue;
        }
        if !i.mnemonic.starts_with("lock cmpxchg") {
            return Err(format!(
                "locked instruction other than cmpxchg: `{}`",
                i.text
            ));
        }
        let Some(branch) = body.insns.get(at + 1).filter(|b| b.mnemonic == "je") else {
            continue;
        };
        let Some(&success) = target(branch).and_then(|l| body.labels.get(l)) else {
            continue;
        };
        let (Some(to), Some(from)) = (
            shortest_between(body, 0, at),
            shortest_exit_path(body, success),
        ) else {
            continue;
        };
        if from.iter().any(|&n| is_locked(&body.insns[n])) {
            return Err("a second locked instruction on the success path".into());
        }
        if from.iter().any(|&n| is_epoch(&body.insns[n])) {
            return Err("the epoch collector on the success path".into());
        }
        let len = to + 2 + from.len();
        best = Some(best.map_or(len, |b| b.min(len)));
    }
    let len = best.ok_or("no call-free success path through a lock cmpxchg")?;
    if len > X86_LOOKUP_BUDGET {
        return Err(format!(
            "success path has {len} instructions, budget {X86_LOOKUP_BUDGET}"
        ));
    }
    Ok(format!(
        "no epoch pin, one `lock cmpxchg` on a call-free success path of {len} instructions \
         (budget {X86_LOOKUP_BUDGET})"
    ))
}

pub(crate) fn check_lse(body: &Body, order: Order) -> Result<String, String> {
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

pub(crate) fn check_outline(body: &Body, order: Order) -> Result<String, String> {
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

pub(crate) fn check_lock_only(body: &Body) -> Result<String, String> {
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

/// The fetch_add word's fast path on x86_64: one `lock xadd`, the only
/// locked instruction on the way to `ret`, and no compare-and-swap in the
/// function at all (its refusals are out of line).
pub(crate) fn check_x86_add(body: &Body) -> Result<String, String> {
    if let Some(bad) = body.insns.iter().find(|i| i.mnemonic.contains("cmpxchg")) {
        return Err(format!(
            "a compare-and-swap in the fetch_add fast path: `{}`",
            bad.text
        ));
    }
    let fast = region(body, 0);
    let locked: Vec<&Insn> = fast
        .iter()
        .map(|&n| &body.insns[n])
        .filter(|i| is_locked(i))
        .collect();
    match locked.as_slice() {
        [one] if one.mnemonic.starts_with("lock xadd") => {}
        other => {
            let texts: Vec<&str> = other.iter().map(|i| i.text.as_str()).collect();
            return Err(format!(
                "want exactly one `lock xadd` on the fast path, found {texts:?}"
            ));
        }
    }
    let path = shortest_exit_path(body, 0).ok_or("no call-free path from entry to ret")?;
    if path.len() > X86_BUDGET {
        return Err(format!(
            "fast path has {} instructions, budget {X86_BUDGET}",
            path.len()
        ));
    }
    Ok(format!(
        "one `lock xadd`, no compare-and-swap, call-free return in {} instructions",
        path.len()
    ))
}

/// The fetch_add word's fast path with LSE: one `ldadd` of the documented
/// ordering inline, no other atomic and no `cas`.
pub(crate) fn check_lse_add(body: &Body, order: Order) -> Result<String, String> {
    let want = order.lse_add();
    let fast = region(body, 0);
    let atomics: Vec<&str> = fast
        .iter()
        .map(|&n| body.insns[n].mnemonic.as_str())
        .filter(|m| m.starts_with("cas") || AARCH64_ATOMICS.iter().any(|a| m.starts_with(a)))
        .collect();
    if atomics != [want] {
        return Err(format!(
            "want exactly one inline `{want}` on the fast path, found {atomics:?}"
        ));
    }
    if !fast.iter().any(|&n| is_exit(&body.insns[n])) {
        return Err("no call-free return".into());
    }
    Ok(format!(
        "one inline `{want}`, no compare-and-swap, call-free return"
    ))
}

/// The fetch_add word without LSE: the add is a call to the matching
/// `__aarch64_ldadd8_*` helper, and no compare-and-swap helper is called.
pub(crate) fn check_outline_add(body: &Body, order: Order) -> Result<String, String> {
    let calls: Vec<&str> = body
        .insns
        .iter()
        .filter(|i| i.mnemonic == "bl")
        .filter_map(|i| i.operands.split_whitespace().next())
        .filter(|op| op.starts_with("__aarch64_"))
        .collect();
    let want = format!("__aarch64_ldadd8_{}", order.outline());
    if calls != [want.as_str()] {
        return Err(format!("want one call to `{want}`, found {calls:?}"));
    }
    Ok(format!(
        "outline atomics: one call to `{want}`, no compare-and-swap helper"
    ))
}
