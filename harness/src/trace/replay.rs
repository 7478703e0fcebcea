//! Replaying a trace through the dcache, each pass from the same starting
//! state: the tree the trace found when it was recorded is built once
//! ([`populate`]), and what a pass creates is removed at the end of the
//! pass ([`Pass::finish`]), so every pass meets the names as the recorded
//! run did.

use std::collections::{BTreeMap, BTreeSet};

use lockref_dcache::{Dcache, Errno, OpenFlags};

use super::{Op, OpKind};

/// `path` with `.` and `..` resolved lexically, as the dcache's walk
/// does (no symlinks here; `..` at the root stays at the root).
fn components(path: &str) -> Vec<&str> {
    let mut comps: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                comps.pop();
            }
            c => comps.push(c),
        }
    }
    comps
}

fn normalized(path: &str) -> String {
    let mut p = String::new();
    for c in components(path) {
        p.push('/');
        p.push_str(c);
    }
    if p.is_empty() {
        p.push('/');
    }
    p
}

fn creates(op: &Op) -> bool {
    matches!(op.kind, OpKind::Open(f) if f.is_creat())
}

/// The tree the recorded run started from: the directories every
/// successful operation went through, and the files whose first
/// appearance in the trace found them (succeeded without creating them).
/// A name first seen missing, or first seen created, is not there.
#[derive(Debug, Default)]
pub struct StartingTree {
    /// Directories, outermost first.
    pub dirs: BTreeSet<String>,
    /// Files.
    pub files: BTreeSet<String>,
}

impl StartingTree {
    /// Reads it off a trace.
    pub fn of(ops: &[Op]) -> StartingTree {
        let mut tree = StartingTree::default();
        let mut first_seen: BTreeMap<String, &Op> = BTreeMap::new();
        let mut through = BTreeSet::new();
        for op in ops {
            let comps = components(&op.path);
            let mut p = String::new();
            for (i, c) in comps.iter().enumerate() {
                p.push('/');
                p.push_str(c);
                if i + 1 < comps.len() {
                    through.insert(p.clone());
                    if op.result.is_ok() {
                        tree.dirs.insert(p.clone());
                    }
                }
            }
            if !comps.is_empty() {
                first_seen.entry(p).or_insert(op);
            }
        }
        for (p, op) in first_seen {
            let found = op.result.is_ok() && !creates(op);
            if !found || tree.dirs.contains(&p) {
                continue;
            }
            let is_dir =
                matches!(op.kind, OpKind::Open(f) if f.is_directory()) || through.contains(&p);
            if is_dir {
                tree.dirs.insert(p);
            } else {
                tree.files.insert(p);
            }
        }
        tree
    }
}

/// Builds the starting tree in `cache`.
///
/// # Errors
///
/// A dcache error while building (a path used both as a file and as a
/// directory).
pub fn populate(cache: &Dcache, ops: &[Op]) -> Result<StartingTree, Errno> {
    let tree = StartingTree::of(ops);
    for d in &tree.dirs {
        match cache.mkdir(d) {
            Ok(()) | Err(Errno::Exist) => {}
            Err(e) => return Err(e),
        }
    }
    for f in &tree.files {
        match cache.open(f, OpenFlags::WRONLY.creat()) {
            Ok(file) => cache.close(file),
            // A name the tree also holds as a directory.
            Err(Errno::IsDir) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(tree)
}

/// Replays one operation and returns its result.
pub fn replay(cache: &Dcache, op: &Op) -> Result<(), Errno> {
    match op.kind {
        OpKind::Open(flags) => cache.open(&op.path, flags).map(|f| cache.close(f)),
        OpKind::Stat => cache.stat(&op.path).map(drop),
    }
}

/// One pass over a trace: remembers what it created so that
/// [`finish`](Self::finish) can put the tree back.
pub struct Pass<'t> {
    tree: &'t StartingTree,
    created: Vec<String>,
}

impl<'t> Pass<'t> {
    /// A pass from `tree`.
    pub fn new(tree: &'t StartingTree) -> Self {
        Pass {
            tree,
            created: Vec::new(),
        }
    }

    /// Replays `op`; returns its result.
    pub fn step(&mut self, cache: &Dcache, op: &Op) -> Result<(), Errno> {
        let got = replay(cache, op);
        if got.is_ok() && creates(op) {
            let p = normalized(&op.path);
            if !self.tree.files.contains(&p) && !self.tree.dirs.contains(&p) {
                self.created.push(p);
            }
        }
        got
    }

    /// Removes what the pass created (the next pass starts as this one
    /// did).
    pub fn finish(&mut self, cache: &Dcache) {
        for p in self.created.drain(..) {
            // Already gone (another worker's pass removed it) is fine.
            let _ = cache.unlink(&p);
        }
    }
}

/// Recorded results a pass did not reproduce, grouped: per (operation,
/// recorded result, replayed result), how many and the first path.
pub type Differences = BTreeMap<(String, String, String), (usize, String)>;

fn result_name(r: Result<(), Errno>) -> String {
    r.map_or_else(|e| e.name().to_string(), |()| "0".into())
}

/// One pass over the whole trace on `cache` (built by [`populate`]), then
/// its reset: the differences from the recorded results.
pub fn verify_pass(cache: &Dcache, tree: &StartingTree, ops: &[Op]) -> Differences {
    let mut pass = Pass::new(tree);
    let mut diff = Differences::new();
    for op in ops {
        let got = pass.step(cache, op);
        if got != op.result {
            let kind = match op.kind {
                OpKind::Open(f) if f.is_creat() => "open O_CREAT",
                OpKind::Open(_) => "open",
                OpKind::Stat => "stat",
            };
            let e = diff
                .entry((kind.into(), result_name(op.result), result_name(got)))
                .or_insert((0, op.path.clone()));
            e.0 += 1;
        }
    }
    pass.finish(cache);
    diff
}

/// Why a recorded result can differ on replay, for the report.
pub fn difference_reason(recorded: &str, replayed: &str) -> &'static str {
    match (recorded, replayed) {
        ("ENOENT", "0") => "the name exists on replay: the recorded run had removed or not yet made it by a call the trace does not hold (unlink, rename, mkdir)",
        ("0", "ENOENT") => "the name is missing on replay: made by a call the trace does not hold",
        ("0", "EEXIST") | ("EEXIST", "0") => "O_EXCL on a name the trace's other calls made or removed",
        (_, "ENOTDIR") | ("ENOTDIR", _) | (_, "EISDIR") | ("EISDIR", _) => {
            "a name used as a file and as a directory (a symlink, or a name replaced during the run)"
        }
        _ => "a result the dcache's model of the filesystem gives otherwise",
    }
}
