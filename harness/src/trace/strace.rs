//! Converting an `strace` log to a trace.

use lockref_dcache::OpenFlags;

use super::{errno_by_name, Op, OpKind};

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
