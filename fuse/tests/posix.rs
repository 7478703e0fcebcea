//! POSIX semantics through the mount, each held to what the host
//! filesystem does in the same test: the same steps run once through the
//! mount and once in a plain host directory, as root or as the
//! unprivileged user 65534 (`setpriv`), and what each observes (read from
//! the host side, where the kernel's attribute cache cannot hide a change)
//! must be the same. Both inode tables.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use lockref_fuse::{InodeTable, LockrefTable, VirtiofsdTable};

mod common;
use common::*;

/// The system's Python, which the unprivileged user can run (a per-user
/// install under `/root` it cannot); `.ci/run` installs it if missing.
const PYTHON: &str = "/usr/bin/python3";

/// Runs `script` (Python) with `A` the directory to act in and `S` the
/// one to observe, as root or as 65534; returns its output and status.
fn run(script: &str, act: &Path, observe: &Path, as_nobody: bool) -> String {
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", PYTHON]);
        c
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
fn same_as_host<T: InodeTable>(setup: impl Fn(&Path), script: &str, as_nobody: bool) -> String {
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

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
}

fn file(root: &Path, name: &str, mode: u32, owner: u32) {
    fs::write(root.join(name), "data\n").unwrap();
    chown(&root.join(name), owner);
    fs::set_permissions(root.join(name), fs::Permissions::from_mode(mode)).unwrap();
}

/// A write, a truncate and a chown by someone else than root clear the
/// set-user-ID and set-group-ID bits, as on the host; the write succeeds.
/// (Before, the kernel's SETATTR on the writer's behalf was refused: EPERM,
/// the bits kept.)
fn setid_bits_are_cleared_by_non_owners<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| {
            file(root, "suid", 0o4777, 0);
            file(root, "sgid", 0o2777, 0);
            file(root, "trunc", 0o6777, 0);
            file(root, "mine", 0o6777, 65534);
        },
        "def append(p):\n\
         \x20   with open(os.path.join(A, p), 'a') as f: f.write('more\\n')\n\
         print('write suid', attempt(lambda: append('suid')), mode('suid'))\n\
         print('write sgid', attempt(lambda: append('sgid')), mode('sgid'))\n\
         print('truncate', attempt(lambda: os.truncate(os.path.join(A, 'trunc'), 0)), mode('trunc'))\n\
         print('chown own', attempt(lambda: os.chown(os.path.join(A, 'mine'), 65534, 65534)), mode('mine'))\n",
        true,
    );
    assert!(seen.contains("write suid ok 0o777"), "{seen}");
}

#[test]
fn setid_bits_are_cleared_by_non_owners_lockref() {
    require_mount!();
    setid_bits_are_cleared_by_non_owners::<LockrefTable>();
}

#[test]
fn setid_bits_are_cleared_by_non_owners_virtiofsd() {
    require_mount!();
    setid_bits_are_cleared_by_non_owners::<VirtiofsdTable>();
}

/// open(2) of a directory needs read permission only: a directory the
/// caller may read but not search opens. (Before: EACCES, the server
/// reopened it with `openat(fd, ".")`, which needs search permission.)
fn a_readable_unsearchable_directory_opens<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| {
            fs::create_dir(root.join("d")).unwrap();
            chown(&root.join("d"), 65534);
            fs::set_permissions(root.join("d"), fs::Permissions::from_mode(0o600)).unwrap();
        },
        "print('open', attempt(lambda: os.close(os.open(os.path.join(A, 'd'), os.O_RDONLY))))\n\
         print('search', attempt(lambda: os.stat(os.path.join(A, 'd', 'x'))))\n",
        true,
    );
    assert!(seen.contains("open ok"), "{seen}");
}

#[test]
fn a_readable_unsearchable_directory_opens_lockref() {
    require_mount!();
    a_readable_unsearchable_directory_opens::<LockrefTable>();
}

#[test]
fn a_readable_unsearchable_directory_opens_virtiofsd() {
    require_mount!();
    a_readable_unsearchable_directory_opens::<VirtiofsdTable>();
}

/// `chown(f, -1, -1)` updates the ctime, as ext4 does. (Before, the
/// server did nothing for a SETATTR with only the ctime.)
fn chown_to_nobody_changes_the_ctime<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| file(root, "f", 0o644, 0),
        "before = os.stat(os.path.join(S, 'f')).st_ctime_ns\n\
         time.sleep(0.02)\n\
         os.chown(os.path.join(A, 'f'), -1, -1)\n\
         print('ctime moved', os.stat(os.path.join(S, 'f')).st_ctime_ns > before)\n",
        false,
    );
    assert!(seen.contains("ctime moved True"), "{seen}");
}

#[test]
fn chown_to_nobody_changes_the_ctime_lockref() {
    require_mount!();
    chown_to_nobody_changes_the_ctime::<LockrefTable>();
}

#[test]
fn chown_to_nobody_changes_the_ctime_virtiofsd() {
    require_mount!();
    chown_to_nobody_changes_the_ctime::<VirtiofsdTable>();
}

/// A sticky directory protects others' files; a rename over an empty
/// directory replaces it and over a full one fails; hard links count.
fn sticky_dirs_renames_over_dirs_and_link_counts<T: InodeTable>() {
    same_as_host::<T>(
        |root| {
            fs::create_dir(root.join("tmp")).unwrap();
            fs::set_permissions(root.join("tmp"), fs::Permissions::from_mode(0o1777)).unwrap();
            file(&root.join("tmp"), "roots", 0o666, 0);
            for d in ["a", "empty", "full", "full/x"] {
                fs::create_dir(root.join(d)).unwrap();
            }
            for d in ["a", "empty", "full", "full/x", ""] {
                chown(&root.join(d), 65534);
            }
            file(root, "f", 0o644, 65534);
        },
        "print('sticky unlink', attempt(lambda: os.unlink(os.path.join(A, 'tmp', 'roots'))))\n\
         print('sticky rename', attempt(lambda: os.rename(os.path.join(A, 'tmp', 'roots'), os.path.join(A, 'tmp', 'r2'))))\n\
         print('over empty', attempt(lambda: os.rename(os.path.join(A, 'a'), os.path.join(A, 'empty'))))\n\
         print('over full', attempt(lambda: os.rename(os.path.join(A, 'empty'), os.path.join(A, 'full'))))\n\
         print('dir over file', attempt(lambda: os.rename(os.path.join(A, 'full'), os.path.join(A, 'f'))))\n\
         print('link', attempt(lambda: os.link(os.path.join(A, 'f'), os.path.join(A, 'g'))))\n\
         print('nlink', os.stat(os.path.join(S, 'f')).st_nlink, os.stat(os.path.join(A, 'g')).st_nlink)\n\
         print('dir nlink', os.stat(os.path.join(S, 'full')).st_nlink)\n",
        true,
    );
}

#[test]
fn sticky_dirs_renames_over_dirs_and_link_counts_lockref() {
    require_mount!();
    sticky_dirs_renames_over_dirs_and_link_counts::<LockrefTable>();
}

#[test]
fn sticky_dirs_renames_over_dirs_and_link_counts_virtiofsd() {
    require_mount!();
    sticky_dirs_renames_over_dirs_and_link_counts::<VirtiofsdTable>();
}

/// Times before 1970 are stored exactly, nanoseconds included, as on the
/// host. (Before, they were clamped to 1970.)
fn times_before_1970_are_exact<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| file(root, "old", 0o644, 0),
        "t = -315619199876543211\n\
         os.utime(os.path.join(A, 'old'), ns=(t, t + 1))\n\
         st = os.stat(os.path.join(S, 'old'))\n\
         print('atime', st.st_atime_ns, 'mtime', st.st_mtime_ns)\n\
         print('through', os.stat(os.path.join(A, 'old')).st_mtime_ns)\n",
        false,
    );
    assert!(
        seen.contains("atime -315619199876543211 mtime -315619199876543210"),
        "{seen}"
    );
}

#[test]
fn times_before_1970_are_exact_lockref() {
    require_mount!();
    times_before_1970_are_exact::<LockrefTable>();
}

#[test]
fn times_before_1970_are_exact_virtiofsd() {
    require_mount!();
    times_before_1970_are_exact::<VirtiofsdTable>();
}
