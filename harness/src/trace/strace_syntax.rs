//! The syntax of an strace line: the pid column, fd arguments and results
//! (with `-y`'s paths), top-level arguments, C-escaped strings.

/// A directory-fd argument or a returned fd, with `-y`'s path if shown.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Fd {
    Cwd(Option<String>),
    Num(i64, Option<String>),
}

/// Splits the pid column off (`[pid 12] ` or `12 `); pid 0 without one.
pub(super) fn split_pid(line: &str) -> (u32, &str) {
    let rest = line.trim_start();
    if let Some(r) = rest.strip_prefix("[pid") {
        if let Some((pid, r)) = r.split_once(']') {
            if let Ok(pid) = pid.trim().parse() {
                return (pid, r.trim_start());
            }
        }
    } else if let Some((pid, r)) = rest.split_once(char::is_whitespace) {
        if let Ok(pid) = pid.parse() {
            return (pid, r.trim_start());
        }
    }
    (0, rest)
}

/// A call's result: a number (with `-y`'s path), or an errno name.
#[derive(Debug)]
pub(super) enum Ret {
    Ok(i64, Option<String>),
    Err(String),
    Unknown,
}

pub(super) fn parse_result(s: &str) -> Result<Ret, String> {
    if s.starts_with('?') {
        return Ok(Ret::Unknown);
    }
    if let Some(e) = s.strip_prefix("-1 ") {
        let name = e.split_whitespace().next().ok_or("`-1` without an errno")?;
        return Ok(Ret::Err(name.into()));
    }
    // `3</a path>` may hold spaces: up to the last `>` then.
    let first = match (s.find('<'), s.rfind('>')) {
        (Some(lt), Some(gt)) if lt < gt => &s[..=gt],
        _ => s.split_whitespace().next().unwrap_or(""),
    };
    match parse_fd(first) {
        Some(Fd::Num(n, p)) => Ok(Ret::Ok(n, p)),
        _ => match i64::from_str_radix(first.trim_start_matches("0x"), 16) {
            Ok(n) if first.starts_with("0x") => Ok(Ret::Ok(n, None)),
            _ => Err(format!("result `{s}` is neither a number nor `-1 ERRNO`")),
        },
    }
}

/// `AT_FDCWD`, `AT_FDCWD</p>`, `3`, `3</p>`.
pub(super) fn parse_fd(s: &str) -> Option<Fd> {
    let (head, path) = match s.split_once('<') {
        Some((h, p)) => (h, Some(p.strip_suffix('>')?.to_string())),
        None => (s, None),
    };
    if head == "AT_FDCWD" {
        return Some(Fd::Cwd(path));
    }
    head.parse().ok().map(|n| Fd::Num(n, path))
}

/// Top-level arguments, split at commas outside quotes and brackets.
pub(super) fn split_args(s: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let (mut cur, mut depth, mut quoted, mut escaped) = (String::new(), 0i32, false, false);
    for c in s.chars() {
        if quoted {
            cur.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                quoted = true;
                cur.push(c);
            }
            '{' | '[' | '(' => {
                depth += 1;
                cur.push(c);
            }
            '}' | ']' | ')' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => args.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    if quoted {
        return Err("an unterminated string".into());
    }
    if depth != 0 {
        return Err("unbalanced brackets".into());
    }
    if !cur.trim().is_empty() || !args.is_empty() {
        args.push(cur.trim().to_string());
    }
    Ok(args)
}

/// A C-escaped string argument, unquoted; `None` if not a string
/// (strace's truncated `"..."...` strings are refused too).
pub(super) fn string_arg(arg: &str) -> Result<Option<String>, String> {
    let Some(body) = arg.strip_prefix('"') else {
        return Ok(None);
    };
    let body = body.strip_suffix('"').ok_or("a string cut short (`...`)")?;
    let mut out = Vec::new();
    let mut chars = body.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match chars.next().ok_or("a trailing backslash")? {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'x' => {
                let hex: String = (0..2)
                    .filter_map(|_| chars.next().map(char::from))
                    .collect();
                out.push(
                    u8::from_str_radix(&hex, 16).map_err(|_| format!("bad escape `\\x{hex}`"))?,
                );
            }
            d @ b'0'..=b'7' => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    match chars.peek() {
                        Some(&o @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(o - b'0');
                            chars.next();
                        }
                        _ => break,
                    }
                }
                out.push(u8::try_from(v).map_err(|_| "an octal escape past 255")?);
            }
            other => out.push(other),
        }
    }
    String::from_utf8(out)
        .map(Some)
        .map_err(|_| "a path that is not UTF-8".into())
}
