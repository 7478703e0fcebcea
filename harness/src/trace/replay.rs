//! Replaying a trace through the dcache.

use lockref_dcache::{Dcache, Errno, OpenFlags};

use super::{Op, OpKind};

/// Builds the filesystem a trace expects: every directory on the way to a
/// path some operation reached successfully, and every file that was
/// opened or stat'ed successfully. Failed names stay absent. What cannot
/// repeat (an `O_CREAT | O_EXCL` of a temporary file succeeds only once)
/// differs on replay: [`first_pass_mismatches`] lists it.
///
/// # Errors
///
/// A dcache error while building (a path used both as a file and as a
/// directory).
pub fn populate(cache: &Dcache, ops: &[Op]) -> Result<(), Errno> {
    let mut dirs = std::collections::BTreeSet::new();
    // Names something looked through: directories if they exist at all.
    let mut through = std::collections::BTreeSet::new();
    let mut reached = Vec::new();
    for op in ops {
        // Resolve `.` and `..` lexically, as the dcache's walk does (no
        // symlinks here; `..` at the root stays at the root).
        let mut comps: Vec<&str> = Vec::new();
        for c in op.path.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    comps.pop();
                }
                c => comps.push(c),
            }
        }
        let mut p = String::new();
        for (i, c) in comps.iter().enumerate() {
            p.push('/');
            p.push_str(c);
            if i + 1 < comps.len() {
                through.insert(p.clone());
                // A successful operation went through it: it exists.
                if op.result.is_ok() {
                    dirs.insert(p.clone());
                }
            } else if op.result.is_ok() {
                reached.push((
                    p.clone(),
                    matches!(op.kind, OpKind::Open(f) if f.is_directory()),
                ));
            }
        }
    }
    let mut files = std::collections::BTreeSet::new();
    for (p, is_dir) in reached {
        if is_dir || through.contains(&p) {
            dirs.insert(p);
        } else {
            files.insert(p);
        }
    }
    for d in &dirs {
        files.remove(d);
        match cache.mkdir(d) {
            Ok(()) | Err(Errno::Exist) => {}
            Err(e) => return Err(e),
        }
    }
    for f in &files {
        match cache.open(f, OpenFlags::WRONLY.creat()) {
            Ok(file) => cache.close(file),
            Err(Errno::IsDir) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Replays one operation and returns its result.
pub fn replay(cache: &Dcache, op: &Op) -> Result<(), Errno> {
    match op.kind {
        OpKind::Open(flags) => cache.open(&op.path, flags).map(|f| cache.close(f)),
        OpKind::Stat => cache.stat(&op.path).map(drop),
    }
}

/// Replays one operation. Returns whether the result matched the trace.
pub fn replay_one(cache: &Dcache, op: &Op) -> bool {
    replay(cache, op) == op.result
}

/// One pass over the trace on a freshly populated cache: the operations
/// whose result differs from the recorded one, with the result replayed.
pub fn first_pass_mismatches(cache: &Dcache, ops: &[Op]) -> Vec<(Op, Result<(), Errno>)> {
    ops.iter()
        .filter_map(|op| {
            let got = replay(cache, op);
            (got != op.result).then(|| (op.clone(), got))
        })
        .collect()
}
