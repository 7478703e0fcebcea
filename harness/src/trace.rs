//! Recorded traces of path operations: the format, its parser, a converter
//! from `strace` logs, and the replay through the dcache.
//!
//! # Format
//!
//! One operation per line; blank lines and lines starting with `#` are
//! ignored:
//!
//! ```text
//! <op> <path> <flags> <result>
//! open /usr/include/stdio.h O_RDONLY 0
//! open /usr/local/include/stdio.h O_RDONLY ENOENT
//! open /tmp/out.o O_WRONLY|O_CREAT 0
//! stat /usr/lib - 0
//! ```
//!
//! - `op`: `open` or `stat`;
//! - `path`: absolute (relative paths resolve from the root), no spaces;
//! - `flags`: for `open`, `|`-joined `O_RDONLY`, `O_WRONLY`, `O_RDWR`,
//!   `O_CREAT`, `O_EXCL`, `O_DIRECTORY`; for `stat`, `-`;
//! - `result`: `0` for success, or the errno name (`ENOENT`, `ENOTDIR`,
//!   `EEXIST`, `EISDIR`, `ENAMETOOLONG`, `EINVAL`).

use std::fmt;

use lockref_dcache::{Dcache, Errno, OpenFlags};

/// One traced operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// What it does.
    pub kind: OpKind,
    /// The path.
    pub path: String,
    /// The recorded result: `Ok` or the errno.
    pub result: Result<(), Errno>,
}

/// The operations a trace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `open(2)` with these flags (then `close`).
    Open(OpenFlags),
    /// `stat(2)`.
    Stat,
}

/// A trace line that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl std::error::Error for ParseError {}

const ERRNOS: [Errno; 7] = [
    Errno::NoEnt,
    Errno::Exist,
    Errno::NotDir,
    Errno::IsDir,
    Errno::NameTooLong,
    Errno::Inval,
    Errno::NotEmpty,
];

fn errno_by_name(name: &str) -> Option<Errno> {
    ERRNOS.into_iter().find(|e| e.name() == name)
}

/// Parses `open` flags in the trace's notation (`O_WRONLY|O_CREAT`).
fn parse_flags(s: &str) -> Result<OpenFlags, String> {
    let mut bits = 0;
    for f in s.split('|') {
        bits |= OpenFlags::bits_named(f).ok_or_else(|| format!("unknown open flag `{f}`"))?;
    }
    OpenFlags::from_bits(bits).map_err(|e| format!("flags `{s}`: {e}"))
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (op, flags) = match self.kind {
            OpKind::Open(fl) => ("open", fl.to_string()),
            OpKind::Stat => ("stat", "-".into()),
        };
        let result = match self.result {
            Ok(()) => "0",
            Err(e) => e.name(),
        };
        write!(f, "{op} {} {flags} {result}", self.path)
    }
}

/// Parses a trace.
///
/// # Errors
///
/// The first malformed line, with its number.
pub fn parse(text: &str) -> Result<Vec<Op>, ParseError> {
    let mut ops = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |what: String| ParseError { line: i + 1, what };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [op, path, flags, result] = fields[..] else {
            return Err(err(format!(
                "expected 4 fields `<op> <path> <flags> <result>`, found {}",
                fields.len()
            )));
        };
        let kind = match op {
            "open" => OpKind::Open(parse_flags(flags).map_err(err)?),
            "stat" if flags == "-" => OpKind::Stat,
            "stat" => return Err(err(format!("stat takes `-` as flags, not `{flags}`"))),
            other => return Err(err(format!("unknown operation `{other}` (open or stat)"))),
        };
        let result = match result {
            "0" => Ok(()),
            name => Err(errno_by_name(name)
                .ok_or_else(|| err(format!("unknown result `{name}` (0 or an errno name)")))?),
        };
        ops.push(Op {
            kind,
            path: path.into(),
            result,
        });
    }
    Ok(ops)
}

/// What [`convert_strace`] made of a log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Converted {
    /// The trace, in the format above.
    pub trace: String,
    /// Operations written.
    pub ops: usize,
    /// Lines skipped: other syscalls, signals, split (`unfinished` /
    /// `resumed`) calls, errors the dcache does not model, paths with
    /// spaces.
    pub skipped: usize,
}

/// Converts an `strace -f -e trace=open,openat,stat,lstat,newfstatat,statx`
/// log to a trace. Relative paths are kept (they replay from the root).
pub fn convert_strace(log: &str) -> Converted {
    let mut out = Converted {
        trace: String::from("# converted from an strace log: <op> <path> <flags> <result>\n"),
        ..Converted::default()
    };
    for line in log.lines() {
        match convert_line(line) {
            Some(op) => {
                out.trace.push_str(&op.to_string());
                out.trace.push('\n');
                out.ops += 1;
            }
            None => out.skipped += 1,
        }
    }
    out
}

/// One strace line to an operation, if it is one the trace models.
fn convert_line(line: &str) -> Option<Op> {
    // Strip `[pid 123] `, or a leading pid column (`strace -f -o`).
    let mut rest = line.trim_start();
    if let Some(r) = rest.strip_prefix("[pid") {
        rest = r.split_once(']')?.1.trim_start();
    } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
        let (pid, r) = rest.split_once(char::is_whitespace)?;
        if pid.chars().all(|c| c.is_ascii_digit()) {
            rest = r.trim_start();
        }
    }
    if rest.contains("<unfinished") || rest.starts_with("<...") {
        return None;
    }
    let (name, args) = rest.split_once('(')?;
    let (args, result) = args.rsplit_once(") = ")?;
    let path = quoted(args)?;
    if path.contains(char::is_whitespace) || path.is_empty() {
        return None;
    }
    let result = result.trim();
    let result = if result.starts_with("-1 ") {
        let errno = result.split_whitespace().nth(1)?;
        Err(errno_by_name(errno)?)
    } else if result.starts_with(|c: char| c.is_ascii_digit()) {
        Ok(())
    } else {
        return None;
    };
    let kind = match name {
        "open" | "openat" => OpKind::Open(strace_flags(args.rsplit_once("\", ")?.1)?),
        "stat" | "lstat" | "newfstatat" | "statx" | "fstatat64" | "stat64" | "lstat64" => {
            OpKind::Stat
        }
        _ => return None,
    };
    Some(Op {
        kind,
        path: path.into(),
        result,
    })
}

/// The first double-quoted string in `args`.
fn quoted(args: &str) -> Option<&str> {
    let start = args.find('"')? + 1;
    let len = args[start..].find('"')?;
    Some(&args[start..start + len])
}

/// The modelled flags of strace's `O_RDONLY|O_CLOEXEC, 0644` notation;
/// flags the cache does not model (`O_CLOEXEC`, `O_NOCTTY`) are ignored.
fn strace_flags(s: &str) -> Option<OpenFlags> {
    let flags = s.split(',').next()?.trim();
    let bits = flags
        .split('|')
        .filter_map(OpenFlags::bits_named)
        .fold(0, |acc, b| acc | b);
    OpenFlags::from_bits(bits).ok()
}

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
