//! Control flow over a function body: branches, successors, the call-free
//! region from an entry, and shortest paths.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::listing::{Body, Insn};

/// Whether an instruction ends the function here (return or tail call).
pub(crate) fn is_exit(i: &Insn) -> bool {
    matches!(i.mnemonic.as_str(), "ret" | "retq")
}

pub(crate) fn is_call(i: &Insn) -> bool {
    let m = i.mnemonic.as_str();
    m.starts_with("call")
        || m == "bl"
        || m == "blx"
        || ((m == "jmp" || m == "jmpq" || m == "b") && !i.operands.starts_with(".L"))
}

pub(crate) fn is_unconditional_jump(i: &Insn) -> bool {
    matches!(i.mnemonic.as_str(), "jmp" | "jmpq" | "b")
}

pub(crate) fn is_branch(i: &Insn) -> bool {
    let m = i.mnemonic.as_str();
    (m.starts_with('j')
        || m.starts_with("b.")
        || m.starts_with("cb")
        || m.starts_with("tb")
        || m == "b")
        && !is_call(i)
}

/// The label a branch jumps to.
pub(crate) fn target(i: &Insn) -> Option<&str> {
    i.operands
        .split(',')
        .map(str::trim)
        .find(|o| o.starts_with(".L"))
}

/// Successors of instruction `at` (none for exits and calls).
pub(crate) fn successors(body: &Body, at: usize) -> Vec<usize> {
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
pub(crate) fn region(body: &Body, from: usize) -> BTreeSet<usize> {
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
pub(crate) fn shortest_exit_path(body: &Body, from: usize) -> Option<Vec<usize>> {
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

/// Instructions on the shortest call-free path from `from` up to (not
/// including) `to`.
pub(crate) fn shortest_between(body: &Body, from: usize, to: usize) -> Option<usize> {
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
