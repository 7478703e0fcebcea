//! The descriptor budget under a hostile user (issue: descriptor
//! exhaustion). With the limit on open descriptors at 1,024 (a common
//! service default), one user creates and lists 50,000 files in their own
//! directory while another user reads, creates and lists: with inodes
//! named by file handle every one of the other user's operations
//! succeeds, and the server's descriptors stay under the limit (the cache
//! under its budget). With inodes named by descriptor (the former scheme,
//! now `--inode-descriptors`), a few thousand files are enough to make the
//! other user's operations fail with `EMFILE`.
//!
//! Its own test binary: the limit is the process's, and the server runs in
//! this process. The soft limit is lowered after mounting (the mount
//! raises it to the hard one) and put back before the mount's own checks.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use lockref_fuse::{HostInodes, InodeTable, Options, Passthrough};
use nix::sys::resource::{getrlimit, setrlimit, Resource};

mod common;
use common::compare::*;
use common::*;

/// The limit the attack runs under.
const LIMIT: u64 = 1024;

/// This process's soft limit on open descriptors lowered to [`LIMIT`]
/// until dropped. Lowered after the mount (which raises the soft limit to
/// the hard one), so the server runs under it; put back before the
/// mount's checks, which need descriptors of their own.
struct SoftLimit(u64);

impl SoftLimit {
    fn lower() -> Self {
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        setrlimit(Resource::RLIMIT_NOFILE, LIMIT, hard).unwrap();
        SoftLimit(soft)
    }
}

impl Drop for SoftLimit {
    fn drop(&mut self) {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        setrlimit(Resource::RLIMIT_NOFILE, self.0, hard).unwrap();
    }
}

/// A child killed if the test fails before it ends.
struct Reaped(Option<std::process::Child>);

impl Reaped {
    fn output(mut self) -> std::process::Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A user's directory `u{uid}` in the share, private to them.
fn private_dir(m: &Mount<impl InodeTable>, uid: u32) {
    let d = m.host(&format!("u{uid}"));
    fs::create_dir(&d).unwrap();
    chown(&d, uid);
    fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
}

/// As `uid`: creates `files` files in `u{uid}` of the mount, then lists
/// them with their attributes (`ls -l`'s requests); prints how many of
/// each failed.
fn attacker(mnt: &str, uid: u32, files: u32) -> std::process::Child {
    as_user(uid, PYTHON)
        .arg("-c")
        .arg(format!(
            "import os\n\
             d = '{mnt}/u{uid}'\n\
             failed = 0\n\
             for i in range({files}):\n\
             \x20   try: os.close(os.open('%s/f%d' % (d, i), os.O_CREAT | os.O_WRONLY, 0o644))\n\
             \x20   except OSError: failed += 1\n\
             listed = 0\n\
             try:\n\
             \x20   for e in os.scandir(d):\n\
             \x20       try: e.stat(follow_symlinks=False); listed += 1\n\
             \x20       except OSError: failed += 1\n\
             except OSError: failed += 1\n\
             print(listed, failed)"
        ))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// As `uid`, until its standard input closes: one round is a create, a
/// write, a read back, a listing and a read of an older file, then a
/// millisecond's pause (the machine has two CPUs); prints the rounds and
/// the failed operations.
fn bystander(mnt: &str, uid: u32) -> std::process::Child {
    as_user(uid, PYTHON)
        .arg("-c")
        .arg(format!(
            "import os, select, sys, time\n\
             d = '{mnt}/u{uid}'\n\
             rounds = failed = 0\n\
             open(d + '/old', 'w').write('old')\n\
             while not select.select([sys.stdin], [], [], 0)[0]:\n\
             \x20   p = '%s/n%d' % (d, rounds)\n\
             \x20   try:\n\
             \x20       with open(p, 'w') as f: f.write('x' * 100)\n\
             \x20       assert open(p).read() == 'x' * 100\n\
             \x20       assert len(os.listdir(d)) == rounds + 2\n\
             \x20       assert open(d + '/old').read() == 'old'\n\
             \x20   except (OSError, AssertionError) as e:\n\
             \x20       failed += 1\n\
             \x20       if failed == 1: print('first failure:', repr(e))\n\
             \x20   rounds += 1\n\
             \x20   time.sleep(0.001)\n\
             print(rounds, failed)"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The two numbers on the last line of a user's output.
fn last_counts(out: &str) -> (&str, &str) {
    out.lines()
        .last()
        .and_then(|l| l.split_once(' '))
        .unwrap_or(("?", "?"))
}

/// What the two users saw, and the most descriptors the process held.
struct Outcome {
    attacker: String,
    bystander: String,
    most_fds: usize,
}

/// The attack: user 65534 creates and lists `files` files while user 1000
/// works beside them; this thread samples the process's descriptors.
fn attack<T: InodeTable>(m: &Mount<T>, files: u32) -> Outcome {
    private_dir(m, 65534);
    private_dir(m, 1000);
    let mnt = m.mnt.display().to_string();
    let limit = SoftLimit::lower();
    let mut by = Reaped(Some(bystander(&mnt, 1000)));
    let most = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let attacker_out = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                // At the limit, counting needs a descriptor it cannot get.
                let held = std::fs::read_dir("/proc/self/fd").map_or(LIMIT as usize, |d| d.count());
                most.fetch_max(held, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let out = Reaped(Some(attacker(&mnt, 65534, files))).output();
        done.store(true, Ordering::Relaxed);
        out
    });
    // Closing its input (no new descriptor needed) stops the bystander.
    drop(by.0.as_mut().and_then(|c| c.stdin.take()));
    let by_out = by.output();
    drop(limit);
    for d in ["u65534", "u1000"] {
        fs::remove_dir_all(m.host(d)).unwrap();
    }
    Outcome {
        attacker: String::from_utf8_lossy(&attacker_out.stdout)
            .trim()
            .to_string(),
        bystander: String::from_utf8_lossy(&by_out.stdout).trim().to_string(),
        most_fds: most.load(Ordering::Relaxed),
    }
}

/// By file handle: 50,000 files created and listed by one user, every
/// operation of the other user's succeeds, and the descriptors stay under
/// the limit.
fn many_files_cost_other_users_nothing<T: InodeTable>() {
    const FILES: u32 = 50_000;
    with_mount_made::<T>(
        4,
        |source| {
            Passthrough::with_options(
                source,
                Options {
                    host_inodes: HostInodes::ByFileHandle,
                    // Half the limit, as the default is half the
                    // hard limit the mount raises the soft one to.
                    descriptor_budget: Some(LIMIT as usize / 2),
                    ..Options::default()
                },
            )
            .unwrap()
        },
        |m| {
            let seen = attack(m, FILES);
            let stats = m.fs.descriptor_stats();
            eprintln!(
                "{} by file handle, limit {LIMIT}: attacker listed/failed {}, bystander rounds/failed {}, most descriptors {}, cache {stats:?}",
                T::NAME, seen.attacker, seen.bystander, seen.most_fds
            );
            assert_eq!(
                seen.attacker,
                format!("{FILES} 0"),
                "the attacker's own work"
            );
            let (rounds, failed) = last_counts(&seen.bystander);
            assert_eq!(
                failed, "0",
                "the other user's operations failed: {}",
                seen.bystander
            );
            assert!(rounds.parse::<u32>().unwrap() > 0);
            // The cache's budget, plus what the process holds besides it
            // (the /dev/fuse clones, the test harness, requests in flight).
            let budget = LIMIT as usize / 2;
            assert!(
                seen.most_fds <= budget + 64,
                "{} descriptors, the budget {budget}",
                seen.most_fds
            );
            assert!(stats.cached <= stats.budget);
            assert!(stats.evictions > 0, "the budget was reached: {stats:?}");
        },
    );
}

/// By descriptor (the former scheme): a few thousand files held by the
/// kernel exhaust the server's descriptors, and the other user's
/// operations fail. This is what file handles fix; the option stays for
/// filesystems without them.
fn without_file_handles_one_user_exhausts_the_descriptors<T: InodeTable>() {
    with_mount_made::<T>(
        4,
        |source| {
            Passthrough::with_options(
                source,
                Options {
                    host_inodes: HostInodes::ByDescriptor,
                    ..Options::default()
                },
            )
            .unwrap()
        },
        |m| {
            let seen = attack(m, 3_000);
            eprintln!(
                "{} by descriptor, limit {LIMIT}: attacker listed/failed {}, bystander rounds/failed {}, most descriptors {}",
                T::NAME, seen.attacker, seen.bystander, seen.most_fds
            );
            let (_, failed) = last_counts(&seen.bystander);
            assert_ne!(failed, "0", "expected the other user to hit EMFILE");
        },
    );
}

/// With a budget of two descriptors, nearly every request reopens its
/// inode by handle: a tree copied, compared, listed, renamed and removed,
/// and a file used through its descriptor after it was unlinked and its
/// cached descriptor evicted, all as on the host.
fn a_budget_of_two_serves_everything<T: InodeTable>() {
    with_mount_made::<T>(
        4,
        |source| with_descriptor_budget(source, 2),
        |m| {
            let (mnt, src) = (m.mnt.display(), m.source.display());
            sh(&format!(
                "mkdir -p {mnt}/a/b/c && for i in 1 2 3 4 5 6 7 8; do echo $i > {mnt}/a/f$i; echo $i > {mnt}/a/b/c/g$i; done && ln -s f1 {mnt}/a/l && ln {mnt}/a/f2 {mnt}/a/hard"
            ));
            sh(&format!("cp -a {mnt}/a {mnt}/copy && diff -r {src}/a {src}/copy && diff -r {mnt}/a {mnt}/copy"));
            let through = sh(&format!(
                "cd {mnt} && find . | sort && ls -lR --time-style=+ a | sort"
            ));
            let direct = sh(&format!(
                "cd {src} && find . | sort && ls -lR --time-style=+ a | sort"
            ));
            assert_eq!(through, direct);
            sh(&format!("mv {mnt}/copy/b {mnt}/moved && test -e {src}/moved/c/g3 && rm -r {mnt}/copy {mnt}/moved"));
            let script = "p = os.path.join(A, 'a', 'f1')\n\
                          fd = os.open(p, os.O_RDWR)\n\
                          os.unlink(p)\n\
                          for n in range(1, 9): os.stat(os.path.join(A, 'a', 'b', 'c', 'g%d' % n))\n\
                          os.write(fd, b'after unlink')\n\
                          os.fchmod(fd, 0o600)\n\
                          os.ftruncate(fd, 5)\n\
                          st = os.fstat(fd)\n\
                          print('unlinked', st.st_size, oct(st.st_mode & 0o777), st.st_nlink, os.pread(fd, 5, 0))\n\
                          os.close(fd)\n";
            let reference = tempfile::tempdir().unwrap();
            sh(&format!("cp -a {src}/a {}/a", reference.path().display()));
            let seen = run(script, &m.mnt, &m.source, false);
            assert_eq!(seen, run(script, reference.path(), reference.path(), false));
            assert!(seen.contains("unlinked 5 0o600 0 b'after'"), "{seen}");
            sh(&format!("rm -r {mnt}/a"));
            let stats = m.fs.descriptor_stats();
            eprintln!("{}: budget 2: {stats:?}", T::NAME);
            assert!(stats.reopens > 20, "requests reopened inodes: {stats:?}");
            assert!(stats.cached <= 2);
        },
    );
}

/// N1 of the second audit: each open file or directory holds a host
/// descriptor, and one user's opens used to take them all (under a limit
/// of 1,024, 961 opens failed every user's `cat`, `touch` and `ls`, root's
/// included). Now a user holds at most their share: user 65534 opens its
/// files until the server refuses, at the share (40 here) with `EMFILE`,
/// while user 1000 and root go on opening, creating and listing; once
/// 65534's files close, it opens again, and no handle is left.
fn one_users_open_files_leave_the_others_theirs<T: InodeTable>() {
    const SHARE: usize = 40;
    with_mount_made::<T>(
        4,
        |source| {
            Passthrough::with_options(
                source,
                Options {
                    handles_per_user: Some(SHARE),
                    ..Options::default()
                },
            )
            .unwrap()
        },
        |m| {
            use std::io::{BufRead, BufReader};
            private_dir(m, 65534);
            private_dir(m, 1000);
            for i in 0..2 * SHARE {
                let f = m.host(&format!("u65534/f{i}"));
                fs::write(&f, b"x").unwrap();
                chown(&f, 65534);
            }
            let mnt = m.mnt.display();
            let mut holder = as_user(65534, PYTHON)
                .arg("-c")
                .arg(format!(
                    "import os, sys\n\
                     fds = []\n\
                     try:\n\
                     \x20   for i in range({}): fds.append(os.open('{mnt}/u65534/f%d' % i, os.O_RDONLY))\n\
                     \x20   print(len(fds), 0, flush=True)\n\
                     except OSError as e: print(len(fds), e.errno, flush=True)\n\
                     sys.stdin.read()\n",
                    2 * SHARE
                ))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(holder.stdout.as_mut().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(
                line.trim(),
                format!("{SHARE} {}", libc::EMFILE),
                "the holder's opens"
            );
            let others = as_user(1000, "sh")
                .arg("-c")
                .arg(format!(
                    "cd {mnt}/u1000 && for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > f$i && cat f$i >/dev/null; done && ls | wc -l"
                ))
                .output()
                .unwrap();
            assert!(
                others.status.success(),
                "{}",
                String::from_utf8_lossy(&others.stderr)
            );
            assert_eq!(String::from_utf8_lossy(&others.stdout).trim(), "10");
            assert_eq!(fs::read(m.at("u65534/f0")).unwrap(), b"x", "root reads");
            drop(holder.stdin.take());
            assert!(holder.wait().unwrap().success());
            let again = sh_as_nobody(&format!(
                "cat {mnt}/u65534/f0 {mnt}/u65534/f{}",
                2 * SHARE - 1
            ));
            assert!(
                again.status.success(),
                "{}",
                String::from_utf8_lossy(&again.stderr)
            );
            assert_eq!(m.fs.open_handles(), 0, "every handle released");
        },
    );
}

on_both_tables!(
    one_users_open_files_leave_the_others_theirs,
    a_budget_of_two_serves_everything,
    many_files_cost_other_users_nothing,
    without_file_handles_one_user_exhausts_the_descriptors,
);
