//! Recorded traces of path operations: the format and its parser (here),
//! the converter from `strace` logs ([`convert_strace`]), and the replay
//! through the dcache ([`replay()`], [`Pass`], [`verify_pass`]).
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
//! - `op`: `open`, `stat`, or one of the calls that make, remove and
//!   move names: `mkdir`, `unlink`, `rmdir`, `rename`, `link`, `symlink`;
//! - `path`: absolute (relative paths resolve from the root), no spaces;
//! - `flags`: for `open`, `|`-joined `O_RDONLY`, `O_WRONLY`, `O_RDWR`,
//!   `O_CREAT`, `O_EXCL`, `O_DIRECTORY`; for `rename` and `link`, the new
//!   path; for the others, `-`;
//! - `result`: `0` for success, or the errno name (`ENOENT`, `ENOTDIR`,
//!   `EEXIST`, `EISDIR`, `ENAMETOOLONG`, `EINVAL`, `ENOTEMPTY`, `EPERM`,
//!   `EBUSY`).
//!
//! ```text
//! mkdir /tmp/build - 0
//! rename /tmp/build/out.tmp /tmp/build/out 0
//! rmdir /tmp/build ENOTEMPTY
//! ```
//!
//! `symlink` makes its name as a file: the dcache's walk follows no
//! links, so a build that walks through a symlink it made replays
//! otherwise (the replay names each such result).

use std::fmt;

use lockref_dcache::{Errno, OpenFlags};

mod replay;
mod seeds;
mod starting_tree;
mod strace;
mod strace_syntax;

use replay::normalized;
pub use replay::{difference_reason, populate, replay, verify_pass, Differences, Pass};
pub use seeds::{seed_shares, shares_table, SeedShare};
pub use starting_tree::StartingTree;
pub use strace::{convert_strace, Converted};

/// One traced operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// What it does.
    pub kind: OpKind,
    /// The path (for `rename` and `link`, the old one).
    pub path: String,
    /// The new path of a `rename` or `link`.
    pub to: Option<String>,
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
    /// `mkdir(2)`.
    Mkdir,
    /// `unlink(2)`.
    Unlink,
    /// `rmdir(2)`.
    Rmdir,
    /// `rename(2)` to [`Op::to`].
    Rename,
    /// `link(2)` as [`Op::to`].
    Link,
    /// `symlink(2)` at the path (made as a file: see the format).
    Symlink,
}

impl OpKind {
    /// The operation's name in the format.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Open(_) => "open",
            OpKind::Stat => "stat",
            OpKind::Mkdir => "mkdir",
            OpKind::Unlink => "unlink",
            OpKind::Rmdir => "rmdir",
            OpKind::Rename => "rename",
            OpKind::Link => "link",
            OpKind::Symlink => "symlink",
        }
    }

    /// Whether the operation names a second path (the new one).
    pub fn has_to(self) -> bool {
        matches!(self, OpKind::Rename | OpKind::Link)
    }
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

const ERRNOS: [Errno; 10] = [
    Errno::NoEnt,
    Errno::Exist,
    Errno::NotDir,
    Errno::IsDir,
    Errno::NameTooLong,
    Errno::Inval,
    Errno::XDev,
    Errno::NotEmpty,
    Errno::Perm,
    Errno::Busy,
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
        let flags = match (self.kind, &self.to) {
            (OpKind::Open(fl), _) => fl.to_string(),
            (_, Some(to)) => to.clone(),
            (_, None) => "-".into(),
        };
        let op = self.kind.name();
        let result = match self.result {
            Ok(()) => "0",
            Err(e) => e.name(),
        };
        write!(f, "{op} {} {flags} {result}", self.path)
    }
}

/// Reads a trace or an strace log, decompressing a `.gz` file.
///
/// # Errors
///
/// The file's error, or a gzip stream that does not decompress to UTF-8.
pub fn read_text(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let bytes = std::fs::read(path)?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut text)?;
        Ok(text)
    } else {
        String::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
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
            "stat" => OpKind::Stat,
            "mkdir" => OpKind::Mkdir,
            "unlink" => OpKind::Unlink,
            "rmdir" => OpKind::Rmdir,
            "rename" => OpKind::Rename,
            "link" => OpKind::Link,
            "symlink" => OpKind::Symlink,
            other => {
                return Err(err(format!(
                    "unknown operation `{other}` (open, stat, mkdir, unlink, rmdir, rename, link, symlink)"
                )))
            }
        };
        let to = match (kind, flags) {
            (OpKind::Open(_), _) => None,
            (k, "-") if k.has_to() => {
                return Err(err(format!("{op} needs the new path as its third field")))
            }
            (k, new) if k.has_to() => Some(new.to_string()),
            (_, "-") => None,
            (_, other) => {
                return Err(err(format!("{op} takes `-` as flags, not `{other}`")));
            }
        };
        let result = match result {
            "0" => Ok(()),
            name => Err(errno_by_name(name)
                .ok_or_else(|| err(format!("unknown result `{name}` (0 or an errno name)")))?),
        };
        ops.push(Op {
            kind,
            path: path.into(),
            to,
            result,
        });
    }
    Ok(ops)
}
