//! Converting an `strace` log to a trace.
//!
//! Relative paths are resolved as the kernel did: against the directory
//! fd of an `*at` call, or the process's working directory. The converter
//! follows each process's working directory (`chdir`, `fchdir`) and its
//! open directories (the results of earlier `open`/`openat`, forgotten at
//! `close`), both inherited by children (`clone`, `clone3`, `fork`,
//! `vfork`); with `strace -y` every fd also carries its path (`3</usr>`),
//! which is used directly. A call split by another process's output
//! (`<unfinished ...>`, then `<... openat resumed>`) is joined back. What
//! still cannot become a trace line is counted by reason.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use lockref_dcache::OpenFlags;

use super::strace_syntax::{parse_fd, parse_result, split_args, split_pid, string_arg, Fd, Ret};
use super::{errno_by_name, Op, OpKind, ParseError};

/// What [`convert_strace`] made of a log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Converted {
    /// The trace, in the format of [`super`].
    pub trace: String,
    /// Operations written.
    pub ops: usize,
    /// Lines not written, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// Lines that look like system calls but could not be read, with
    /// their line numbers.
    pub malformed: Vec<ParseError>,
    /// Of the operations written, those whose path was relative (to the
    /// working directory or a directory fd) and was resolved.
    pub resolved_relative: usize,
}

impl Converted {
    /// Lines skipped, all reasons.
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().sum()
    }

    /// A report for people: what was written, what was skipped and why,
    /// the first malformed lines.
    pub fn report(&self) -> String {
        let mut out = format!(
            "{} operations written ({} with a relative path, resolved); {} lines skipped, {} malformed\n",
            self.ops,
            self.resolved_relative,
            self.skipped_total(),
            self.malformed.len()
        );
        let mut reasons: Vec<(&String, &usize)> = self.skipped.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (reason, n) in reasons {
            let _ = writeln!(out, "  skipped {n:>7}  {reason}");
        }
        for e in self.malformed.iter().take(10) {
            let _ = writeln!(out, "  malformed: {e}");
        }
        if self.malformed.len() > 10 {
            let _ = writeln!(
                out,
                "  ... and {} more malformed lines",
                self.malformed.len() - 10
            );
        }
        out
    }

    fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }
}

/// A process's view of paths: its working directory and its open fds.
#[derive(Clone, Debug, Default)]
struct Process {
    cwd: Option<String>,
    fds: HashMap<i64, String>,
}

struct State<'a> {
    procs: HashMap<u32, Process>,
    /// Calls waiting for their `resumed` half, by pid.
    pending: HashMap<u32, String>,
    first_cwd: Option<&'a str>,
    first_pid_seen: bool,
}

impl State<'_> {
    fn process(&mut self, pid: u32) -> &mut Process {
        if !self.procs.contains_key(&pid) {
            // The first process is the traced command, started in the
            // given directory; any other that appears without a fork line
            // starts unknown.
            let cwd = if self.first_pid_seen {
                None
            } else {
                self.first_cwd.map(String::from)
            };
            self.first_pid_seen = true;
            self.procs.insert(
                pid,
                Process {
                    cwd,
                    fds: HashMap::new(),
                },
            );
        }
        self.procs.get_mut(&pid).expect("just inserted")
    }

    /// The absolute path `path` names relative to `dirfd` in `pid`.
    fn resolve(&mut self, pid: u32, dirfd: &Fd, path: &str) -> Result<String, &'static str> {
        if path.starts_with('/') {
            return Ok(path.into());
        }
        let proc = self.process(pid);
        let base = match dirfd {
            Fd::Cwd(Some(p)) | Fd::Num(_, Some(p)) => p.clone(),
            Fd::Cwd(None) => proc.cwd.clone().ok_or(
                "relative to an unknown working directory (give --cwd, or record with -y)",
            )?,
            Fd::Num(n, None) => proc
                .fds
                .get(n)
                .cloned()
                .ok_or("relative to a directory fd opened before the log or not traced")?,
        };
        Ok(join(&base, path))
    }
}

fn join(base: &str, rel: &str) -> String {
    if rel.is_empty() {
        return base.into();
    }
    if base.ends_with('/') {
        format!("{base}{rel}")
    } else {
        format!("{base}/{rel}")
    }
}

/// Converts an `strace -f` log (`-y` recommended) to a trace. `cwd` is the
/// directory the traced command started in, for relative paths before any
/// `chdir` (unknown without it or `-y`).
pub fn convert_strace(log: &str, cwd: Option<&str>) -> Converted {
    let mut out = Converted {
        trace: String::from("# converted from an strace log: <op> <path> <flags> <result>\n"),
        ..Converted::default()
    };
    let mut state = State {
        procs: HashMap::new(),
        pending: HashMap::new(),
        first_cwd: cwd,
        first_pid_seen: false,
    };
    for (i, line) in log.lines().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Err(what) = convert_line(&mut state, &mut out, line) {
            out.malformed.push(ParseError { line: number, what });
        }
    }
    for _ in state.pending.drain() {
        out.skip("unfinished call never resumed");
    }
    out
}

fn convert_line(state: &mut State<'_>, out: &mut Converted, line: &str) -> Result<(), String> {
    let (pid, rest) = split_pid(line);
    if rest.starts_with("---") || rest.starts_with("+++") {
        out.skip("signal or exit");
        return Ok(());
    }
    let joined;
    let call = if let Some(start) = rest.strip_suffix("<unfinished ...>") {
        state.pending.insert(pid, start.trim_end().to_string());
        return Ok(());
    } else if let Some(resumed) = rest.strip_prefix("<... ") {
        let (_, tail) = resumed
            .split_once("resumed>")
            .ok_or("`<...` without `resumed>`")?;
        let start = state
            .pending
            .remove(&pid)
            .ok_or_else(|| format!("a resumed call of pid {pid} that never started"))?;
        joined = format!("{start}{}", tail.trim_start_matches(' '));
        joined.as_str()
    } else {
        rest
    };
    let (name, after) = call
        .split_once('(')
        .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .ok_or("not a system call line (`name(args) = result`)")?;
    // `) = 3`, padded by strace to a column: `)        = 0`.
    let eq = after.rfind(" = ").ok_or("no `) = result` at the end")?;
    let args = after[..eq]
        .trim_end()
        .strip_suffix(')')
        .ok_or("no `) = result` at the end")?;
    let result = &after[eq + 3..];
    let args = split_args(args)?;
    let result = parse_result(result.trim())?;
    convert_call(state, out, pid, name, &args, result)
}

fn convert_call(
    state: &mut State<'_>,
    out: &mut Converted,
    pid: u32,
    name: &str,
    args: &[String],
    result: Ret,
) -> Result<(), String> {
    let arg = |i: usize| -> Result<&str, String> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("{name}: argument {} missing", i + 1))
    };
    match name {
        "clone" | "clone3" | "fork" | "vfork" => {
            if let Ret::Ok(child, _) = result {
                let parent = state.process(pid).clone();
                let child = u32::try_from(child).map_err(|_| format!("{name}: pid {child}"))?;
                state.procs.insert(child, parent);
            }
            out.skip("process creation (followed, not traced)");
            return Ok(());
        }
        "chdir" | "fchdir" => {
            if let Ret::Ok(..) = result {
                let dir = if name == "chdir" {
                    let path = string_arg(arg(0)?)?.ok_or("chdir: no path")?;
                    state.resolve(pid, &Fd::Cwd(None), &path)
                } else {
                    let fd = parse_fd(arg(0)?).ok_or("fchdir: not an fd")?;
                    state.resolve(pid, &fd, "")
                };
                state.process(pid).cwd = dir.ok();
            }
            out.skip("working directory change (followed, not traced)");
            return Ok(());
        }
        "close" => {
            if let Some(Fd::Num(n, _)) = parse_fd(arg(0)?) {
                state.process(pid).fds.remove(&n);
            }
            out.skip("close (followed, not traced)");
            return Ok(());
        }
        _ => {}
    }
    // What the call is, and its path arguments: (dirfd, path index).
    let fd_at = |i: usize| -> Result<Fd, String> {
        parse_fd(arg(i)?).ok_or_else(|| format!("{name}: bad dirfd"))
    };
    let open_flags = |i: usize| -> Result<Option<OpKind>, String> {
        Ok(strace_flags(arg(i)?).map(OpKind::Open))
    };
    let (kind, paths): (Option<OpKind>, Vec<(Fd, usize)>) = match name {
        "open" => (open_flags(1)?, vec![(Fd::Cwd(None), 0)]),
        "openat" => (open_flags(2)?, vec![(fd_at(0)?, 1)]),
        "stat" | "lstat" | "stat64" | "lstat64" => (Some(OpKind::Stat), vec![(Fd::Cwd(None), 0)]),
        "newfstatat" | "fstatat64" | "statx" => (Some(OpKind::Stat), vec![(fd_at(0)?, 1)]),
        "mkdir" => (Some(OpKind::Mkdir), vec![(Fd::Cwd(None), 0)]),
        "mkdirat" => (Some(OpKind::Mkdir), vec![(fd_at(0)?, 1)]),
        "unlink" => (Some(OpKind::Unlink), vec![(Fd::Cwd(None), 0)]),
        "unlinkat" => {
            let kind = if arg(2)?.contains("AT_REMOVEDIR") {
                OpKind::Rmdir
            } else {
                OpKind::Unlink
            };
            (Some(kind), vec![(fd_at(0)?, 1)])
        }
        "rmdir" => (Some(OpKind::Rmdir), vec![(Fd::Cwd(None), 0)]),
        "rename" => (
            Some(OpKind::Rename),
            vec![(Fd::Cwd(None), 0), (Fd::Cwd(None), 1)],
        ),
        "renameat" | "renameat2" => {
            if name == "renameat2" && arg(4)? != "0" {
                out.skip("renameat2 with flags (RENAME_NOREPLACE, RENAME_EXCHANGE: not modelled)");
                return Ok(());
            }
            (Some(OpKind::Rename), vec![(fd_at(0)?, 1), (fd_at(2)?, 3)])
        }
        "link" => (
            Some(OpKind::Link),
            vec![(Fd::Cwd(None), 0), (Fd::Cwd(None), 1)],
        ),
        "linkat" => (Some(OpKind::Link), vec![(fd_at(0)?, 1), (fd_at(2)?, 3)]),
        "symlink" => (Some(OpKind::Symlink), vec![(Fd::Cwd(None), 1)]),
        "symlinkat" => (Some(OpKind::Symlink), vec![(fd_at(1)?, 2)]),
        other => {
            out.skip(format!("other system call `{other}`"));
            return Ok(());
        }
    };
    let is_open = matches!(name, "open" | "openat");
    let mut resolved = Vec::with_capacity(paths.len());
    let mut relative = false;
    for (dirfd, at) in &paths {
        if arg(*at)? == "NULL" {
            out.skip("a NULL path (a probe for the call)");
            return Ok(());
        }
        let Some(path) = string_arg(arg(*at)?)? else {
            return Err(format!("{name}: the path is not a string"));
        };
        if path.is_empty() && !matches!(dirfd, Fd::Num(..)) {
            out.skip("empty path");
            return Ok(());
        }
        match state.resolve(pid, dirfd, &path) {
            Ok(p) => resolved.push(p),
            Err(reason) => {
                out.skip(reason);
                return Ok(());
            }
        }
        relative |= !path.starts_with('/');
    }
    let result = match result {
        Ret::Ok(fd, decorated) => {
            if is_open {
                let at = decorated.unwrap_or_else(|| resolved[0].clone());
                state.process(pid).fds.insert(fd, at);
            }
            Ok(())
        }
        Ret::Err(e) => match errno_by_name(&e) {
            Some(errno) => Err(errno),
            None => {
                out.skip(format!("errno {e} (not modelled)"));
                return Ok(());
            }
        },
        Ret::Unknown => {
            out.skip("no result (the process exited in the call)");
            return Ok(());
        }
    };
    if resolved.iter().any(|p| p.contains(char::is_whitespace)) {
        out.skip("path with whitespace (the trace format splits on it)");
        return Ok(());
    }
    let Some(kind) = kind else {
        out.skip("open flags the dcache refuses together");
        return Ok(());
    };
    let mut resolved = resolved.into_iter();
    let op = Op {
        kind,
        path: resolved.next().ok_or("no path")?,
        to: resolved.next(),
        result,
    };
    out.trace.push_str(&op.to_string());
    out.trace.push('\n');
    out.ops += 1;
    out.resolved_relative += usize::from(relative);
    Ok(())
}

/// The modelled flags of strace's `O_RDONLY|O_CLOEXEC` notation; flags
/// the cache does not model (`O_CLOEXEC`, `O_NOCTTY`, ...) are dropped.
fn strace_flags(s: &str) -> Option<OpenFlags> {
    let bits = s
        .split('|')
        .filter_map(|f| OpenFlags::bits_named(f.trim()))
        .fold(0, |acc, b| acc | b);
    OpenFlags::from_bits(bits).ok()
}
