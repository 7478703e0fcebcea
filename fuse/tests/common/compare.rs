//! Holding the mount to what the host does: the same steps (a Python
//! script) run once through the mount and once in a plain host directory,
//! as root or as the unprivileged user 65534, and what each observes must
//! be the same.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use lockref_fuse::InodeTable;

use super::Mount;

/// The system's Python, which the unprivileged user can run (a per-user
/// install under `/root` it cannot); `.ci/run` installs it if missing.
pub const PYTHON: &str = "/usr/bin/python3";

/// Runs `script` (Python) as user 65534, asserting that it succeeds;
/// returns what it printed.
pub fn python_as_nobody(script: &str) -> String {
    let out = super::as_user(65534, PYTHON)
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

/// Runs `script` (Python) with `A` the directory to act in and `S` the
/// one to observe, as root or as 65534; returns its output and status.
pub fn run(script: &str, act: &Path, observe: &Path, as_nobody: bool) -> String {
    let mut cmd = if as_nobody {
        super::as_user(65534, PYTHON)
    } else {
        Command::new(PYTHON)
    };
    let prelude = "import os, sys, stat, errno, time\n\
                   A, S = sys.argv[1], sys.argv[2]\n\
                   def attempt(f):\n\
                   \x20   try:\n\
                   \x20       f(); return 'ok'\n\
                   \x20   except OSError as e:\n\
                   \x20       return errno.errorcode[e.errno]\n\
                   def mode(p):\n\
                   \x20   return oct(os.stat(os.path.join(S, p)).st_mode & 0o7777)\n";
    let out = cmd
        .arg("-c")
        .arg(format!("{prelude}{script}"))
        .arg(act)
        .arg(observe)
        .output()
        .unwrap();
    format!(
        "{}{}[{}]",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        out.status
    )
}

/// Sets up the same tree in the mount's host directory and in a plain
/// host directory (`setup` gets the root), runs `script` against each, and
/// asserts that both observe the same.
pub fn same_as_host<T: InodeTable>(setup: impl Fn(&Path), script: &str, as_nobody: bool) -> String {
    let _serial = super::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = Mount::<T>::new();
    let reference = tempfile::tempdir().unwrap();
    fs::set_permissions(reference.path(), fs::Permissions::from_mode(0o755)).unwrap();
    setup(&m.source);
    setup(reference.path());
    let through_mount = run(script, &m.mnt, &m.source, as_nobody);
    let on_host = run(script, reference.path(), reference.path(), as_nobody);
    assert_eq!(
        through_mount,
        on_host,
        "{}: the mount answered unlike the host",
        T::NAME
    );
    assert!(m.forget_all(), "{}: inodes left after drop_caches", T::NAME);
    drop(m.unmount());
    on_host
}

/// Gives `path` to `uid` (its gid too).
pub fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
}

/// `root/name`, holding a line, owned by `owner` (uid and gid), with `mode`.
pub fn file(root: &Path, name: &str, mode: u32, owner: u32) {
    fs::write(root.join(name), "data\n").unwrap();
    chown(&root.join(name), owner);
    fs::set_permissions(root.join(name), fs::Permissions::from_mode(mode)).unwrap();
}
