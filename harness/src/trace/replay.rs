//! Replaying a trace through the dcache, each pass from the same starting
//! state: the tree the trace found when it was recorded is built once
//! ([`populate`]), and what a pass changes is undone at the end of the
//! pass, in reverse ([`Pass::finish`]), so every pass meets the names as
//! the recorded run did.

use std::collections::BTreeMap;

use lockref_dcache::{Dcache, Errno, InodeKind, OpenFlags};

use super::{Op, OpKind, StartingTree};

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

pub(crate) fn normalized(path: &str) -> String {
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
    let to = || op.to.as_deref().ok_or(Errno::Inval);
    match op.kind {
        OpKind::Open(flags) => cache.open(&op.path, flags).map(|f| cache.close(f)),
        OpKind::Stat => cache.stat(&op.path).map(drop),
        OpKind::Mkdir => cache.mkdir(&op.path),
        OpKind::Unlink => cache.unlink(&op.path),
        OpKind::Rmdir => cache.rmdir(&op.path),
        OpKind::Rename => cache.rename(&op.path, to()?),
        OpKind::Link => cache.link(&op.path, to()?),
        // Made as a file: the walk follows no links.
        OpKind::Symlink => cache
            .open(&op.path, OpenFlags::WRONLY.creat().excl())
            .map(|f| cache.close(f)),
    }
}

/// What puts back one change a pass made.
#[derive(Debug)]
enum Undo {
    Unlink(String),
    Rmdir(String),
    MakeFile(String),
    MakeDir(String),
    /// Renames back (to, from).
    Rename(String, String),
}

/// One pass over a trace: remembers what it changed so that
/// [`finish`](Self::finish) can put the tree back.
#[derive(Default)]
pub struct Pass {
    undo: Vec<Undo>,
}

impl Pass {
    /// A pass from the tree the cache holds now.
    pub fn new() -> Self {
        Pass::default()
    }

    /// Replays `op`; returns its result.
    pub fn step(&mut self, cache: &Dcache, op: &Op) -> Result<(), Errno> {
        // What a change replaces, asked before it runs (only for the
        // operations that can replace or make a name without saying so).
        let before = |p: &str| cache.stat(p).ok().map(|st| st.kind);
        let replaced = match op.kind {
            OpKind::Open(f) if f.is_creat() && !f.is_excl() => Some(before(&op.path)),
            OpKind::Rename => op.to.as_deref().map(before),
            _ => None,
        };
        replay(cache, op)?;
        let p = normalized(&op.path);
        let to = op.to.as_deref().map(normalized);
        match op.kind {
            OpKind::Open(f) if f.is_creat() => {
                // Made, unless it was there (O_EXCL succeeds only on a new
                // name).
                if f.is_excl() || replaced.flatten().is_none() {
                    self.undo.push(Undo::Unlink(p));
                }
            }
            OpKind::Mkdir => self.undo.push(Undo::Rmdir(p)),
            OpKind::Unlink => self.undo.push(Undo::MakeFile(p)),
            OpKind::Rmdir => self.undo.push(Undo::MakeDir(p)),
            OpKind::Link | OpKind::Symlink => {
                self.undo.push(Undo::Unlink(to.unwrap_or(p)));
            }
            OpKind::Rename => {
                let to = to.unwrap_or_default();
                if to != p {
                    // Undone in reverse: rename back first, then remake
                    // what the rename replaced.
                    match replaced.flatten() {
                        Some(InodeKind::Dir) => self.undo.push(Undo::MakeDir(to.clone())),
                        Some(_) => self.undo.push(Undo::MakeFile(to.clone())),
                        None => {}
                    }
                    self.undo.push(Undo::Rename(to, p));
                }
            }
            OpKind::Open(_) | OpKind::Stat => {}
        }
        Ok(())
    }

    /// Undoes what the pass changed, last change first (the next pass
    /// starts as this one did).
    pub fn finish(&mut self, cache: &Dcache) {
        while let Some(u) = self.undo.pop() {
            // Already undone (another worker's pass overlapping) is fine.
            let _ = match u {
                Undo::Unlink(p) => cache.unlink(&p),
                Undo::Rmdir(p) => cache.rmdir(&p),
                Undo::MakeFile(p) => cache
                    .open(&p, OpenFlags::WRONLY.creat())
                    .map(|f| cache.close(f)),
                Undo::MakeDir(p) => cache.mkdir(&p),
                Undo::Rename(from, to) => cache.rename(&from, &to),
            };
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
pub fn verify_pass(cache: &Dcache, ops: &[Op]) -> Differences {
    let mut pass = Pass::new();
    let mut diff = Differences::new();
    for op in ops {
        let got = pass.step(cache, op);
        if got != op.result {
            let kind = match op.kind {
                OpKind::Open(f) if f.is_creat() => "open O_CREAT",
                k => k.name(),
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
