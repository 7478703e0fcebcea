//! A real mount for the tests: the server runs in this process (so the
//! tests can look at its inode table), the kernel drives it, and the mount
//! is taken down even when a test fails.

#![allow(dead_code)]

pub mod compare;
pub mod volume;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockref_fuse::{InodeTable, MountConfig, Passthrough};

/// Why mounting cannot be tested here, if it cannot.
pub fn cannot_mount() -> Option<&'static str> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing");
    }
    if !nix::unistd::geteuid().is_root() {
        return Some("not root (the tests mount directly and switch credentials)");
    }
    None
}

/// Fails the calling test, saying why, where mounting is impossible: a
/// test that cannot run says so in its result, not in a line the run's
/// summary hides.
#[macro_export]
macro_rules! require_mount {
    () => {
        if let Some(why) = $crate::common::cannot_mount() {
            panic!(
                "cannot mount here: {why}. These tests mount FUSE filesystems; \
                 leave them out with `cargo test --workspace --exclude lockref-fuse`"
            );
        }
    };
}

/// Declares, for each generic test body `name::<T>()`, a module `name`
/// with one test per inode table (`name::lockref`, `name::virtiofsd`),
/// each failed, saying why, where mounting is impossible.
#[macro_export]
macro_rules! on_both_tables {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn lockref() {
                $crate::require_mount!();
                super::$name::<lockref_fuse::LockrefTable>();
            }

            #[test]
            fn virtiofsd() {
                $crate::require_mount!();
                super::$name::<lockref_fuse::VirtiofsdTable>();
            }
        }
    )+};
}

/// Whether the tests mount with FUSE over io_uring
/// (`LOCKREF_FUSE_TEST_IO_URING=1`, which `.ci/run` sets for a second run
/// of every mount test, with the fuse module's `enable_uring` on).
pub fn through_rings() -> bool {
    std::env::var_os("LOCKREF_FUSE_TEST_IO_URING").is_some_and(|v| v == "1")
}

/// Open descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// A mounted passthrough of a fresh temporary directory.
///
/// The shared directory and the mount point each sit one level inside a
/// temporary directory of their own (`…/share`, `…/mnt`), so that `..`
/// of the share's root names a host directory the mount cannot reach:
/// [`Mount::host`]`("../x")` is outside the share, and a relative symlink
/// that climbs out of it resolves elsewhere through the mount.
pub struct Mount<T: InodeTable> {
    pub fs: Arc<Passthrough<T>>,
    session: Option<lockref_fuse::mount::Mounted>,
    pub source: PathBuf,
    pub mnt: PathBuf,
    /// Whether [`Mount::unmount`] insists that a ring served a request
    /// (the run through rings, `LOCKREF_FUSE_TEST_IO_URING=1`).
    rings_expected: bool,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl<T: InodeTable> Mount<T> {
    /// Mounted with 4 serving threads.
    pub fn new() -> Self {
        Self::with_threads(4)
    }

    /// Mounted with `threads` serving threads.
    pub fn with_threads(threads: usize) -> Self {
        Self::with(threads, lockref_fuse::DEFAULT_TTL)
    }

    /// Mounted with `threads` serving threads, the kernel trusting entries
    /// and attributes for `ttl` (zero: every path walk reaches the server).
    pub fn with(threads: usize, ttl: Duration) -> Self {
        Self::made(threads, |source| {
            Passthrough::<T>::with_ttl(source, ttl).unwrap()
        })
    }

    /// Mounted with `threads` serving threads, serving what `make` makes
    /// of the share's host directory.
    pub fn made(threads: usize, make: impl FnOnce(&Path) -> Passthrough<T>) -> Self {
        Self::made_config(threads, true, make)
    }

    /// [`Mount::made`], the share shown through the root's alias or not
    /// (`MountConfig::root_alias`).
    pub fn made_config(
        threads: usize,
        root_alias: bool,
        make: impl FnOnce(&Path) -> Passthrough<T>,
    ) -> Self {
        Self::made_with(threads, root_alias, through_rings(), make)
    }

    /// [`Mount::made_config`], served over io_uring or not
    /// (`MountConfig::io_uring`).
    pub fn made_with(
        threads: usize,
        root_alias: bool,
        io_uring: bool,
        make: impl FnOnce(&Path) -> Passthrough<T>,
    ) -> Self {
        let src = tempfile::tempdir().unwrap();
        let mnt = tempfile::tempdir().unwrap();
        let (source, mountpoint) = (src.path().join("share"), mnt.path().join("mnt"));
        std::fs::create_dir(&source).unwrap();
        std::fs::create_dir(&mountpoint).unwrap();
        // Others must reach the mount point for the unprivileged tests.
        for d in [src.path(), mnt.path(), &source, &mountpoint] {
            std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let fs = Arc::new(make(&source));
        let config = MountConfig {
            fsname: "lockref-fuse-test".into(),
            threads,
            allow_other: true,
            root_alias,
            io_uring,
        };
        let session = lockref_fuse::mount::spawn(fs.clone(), &mountpoint, &config).unwrap();
        Mount {
            fs,
            session: Some(session),
            source,
            mnt: mountpoint,
            rings_expected: through_rings(),
            _dirs: (src, mnt),
        }
    }

    /// Requests answered through the io_uring rings so far.
    pub fn ring_requests(&self) -> u64 {
        self.session.as_ref().map_or(0, |s| s.ring_requests())
    }

    /// The most threads that may ever serve this mount's requests.
    pub fn most_serving_threads(&self) -> usize {
        self.session
            .as_ref()
            .map_or(0, |s| s.most_serving_threads())
    }

    /// The io_uring entries registered and made.
    pub fn ring_entries(&self) -> (usize, usize) {
        self.session.as_ref().map_or((0, 0), |s| s.ring_entries())
    }

    /// A path inside the mount.
    pub fn at(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// A path inside the mirrored host directory.
    pub fn host(&self, rel: &str) -> PathBuf {
        self.source.join(rel)
    }

    /// Makes the kernel give back every reference it can: evicts unused
    /// inodes (which sends their FORGETs), then waits for the table to
    /// hold only the root. Returns whether it did within the time.
    pub fn forget_all(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            std::fs::write("/proc/sys/vm/drop_caches", "2\n").unwrap();
            if self.fs.table().only_root() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Unmounts a mount that a test made sure `/dev/fuse` served (the
    /// kernel offered no rings), so no ring request is asked of it even in
    /// the run through rings.
    pub fn unmount_served_by_dev_fuse(mut self) -> Arc<Passthrough<T>> {
        assert_eq!(self.ring_requests(), 0, "served by /dev/fuse alone");
        self.rings_expected = false;
        self.unmount()
    }

    /// Unmounts and waits for the server threads.
    pub fn unmount(mut self) -> Arc<Passthrough<T>> {
        if self.rings_expected {
            assert!(
                self.ring_requests() > 0,
                "mounted for io_uring, but no request came through a ring \
                 (is the fuse module's enable_uring on?)"
            );
        }
        if let Some(s) = self.session.take() {
            s.umount_and_join().unwrap();
        }
        self.fs.clone()
    }
}

impl<T: InodeTable> Drop for Mount<T> {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            // A failed test: never leave the mount behind.
            if s.umount_and_join().is_err() {
                let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
            }
        }
    }
}

/// Holds `uid`'s lookups in the server (`Passthrough::hold_lookups_of`)
/// until the guard is dropped: released on every way out, so that a failed
/// check never leaves the serving threads held (the unmount waits for
/// them).
pub fn hold_lookups_of<T: InodeTable>(fs: &Passthrough<T>, uid: u32) -> ReleaseHeld<'_, T> {
    fs.hold_lookups_of(uid);
    ReleaseHeld(fs)
}

/// Releases the held lookups when dropped ([`hold_lookups_of`]).
pub struct ReleaseHeld<'a, T: InodeTable>(&'a Passthrough<T>);

impl<T: InodeTable> Drop for ReleaseHeld<'_, T> {
    fn drop(&mut self) {
        self.0.release_held();
    }
}

/// `drop_caches` and the descriptor count are process- and machine-wide:
/// the tests that assert on them run one at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `body` on a fresh mount, then checks that the kernel gave every
/// reference back (the table holds only the root), that no handle is left
/// open, that every FORGET matched, and that no host descriptor leaked.
pub fn with_mount<T: InodeTable>(body: impl FnOnce(&Mount<T>)) {
    with_mount_threads(4, body);
}

/// [`with_mount`] with `threads` serving threads.
pub fn with_mount_threads<T: InodeTable>(threads: usize, body: impl FnOnce(&Mount<T>)) {
    with_mount_options(threads, lockref_fuse::DEFAULT_TTL, body);
}

/// [`with_mount`] on [`Mount::with`]`(threads, ttl)`.
pub fn with_mount_options<T: InodeTable>(
    threads: usize,
    ttl: Duration,
    body: impl FnOnce(&Mount<T>),
) {
    with_mount_made(
        threads,
        |source| Passthrough::<T>::with_ttl(source, ttl).unwrap(),
        body,
    );
}

/// [`with_mount`] on [`Mount::made`]`(threads, make)`.
pub fn with_mount_made<T: InodeTable>(
    threads: usize,
    make: impl FnOnce(&Path) -> Passthrough<T>,
    body: impl FnOnce(&Mount<T>),
) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fds_before = open_fds();
    let m = Mount::<T>::made(threads, make);
    body(&m);
    assert!(
        m.forget_all(),
        "{}: {} inodes left after drop_caches, expected only the root",
        T::NAME,
        m.fs.table().inodes()
    );
    assert_eq!(m.fs.open_handles(), 0, "handles left open");
    let fs = m.unmount();
    assert_eq!(fs.refused_forgets(), 0, "the kernel's FORGETs all matched");
    drop(fs);
    assert_eq!(open_fds(), fds_before, "host descriptors leaked");
}

/// [`with_mount`] with `threads` serving threads and kernel passthrough
/// asked for or not (`Options::passthrough`).
pub fn with_mount_passthrough<T: InodeTable>(
    threads: usize,
    passthrough: bool,
    body: impl FnOnce(&Mount<T>),
) {
    let options = lockref_fuse::Options {
        passthrough,
        ..lockref_fuse::Options::default()
    };
    with_mount_made(
        threads,
        |source| Passthrough::<T>::with_options(source, options).unwrap(),
        body,
    );
}

/// A server of `source` that keeps at most `budget` reopened descriptors
/// of inodes named by file handle (`Options::descriptor_budget`): with a
/// small one, nearly every request reopens its inode.
pub fn with_descriptor_budget<T: InodeTable>(source: &Path, budget: usize) -> Passthrough<T> {
    let options = lockref_fuse::Options {
        descriptor_budget: Some(budget),
        ..lockref_fuse::Options::default()
    };
    Passthrough::with_options(source, options).unwrap()
}

/// Waits (up to 10 s) until the server has every `RELEASE`: the kernel
/// sends them in the background after a close, so until then the closed
/// files still count (their handles, their inode's I/O mode, their host
/// descriptors).
pub fn wait_for_releases<T: InodeTable>(m: &Mount<T>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while m.fs.open_handles() > 0 {
        assert!(Instant::now() < deadline, "a RELEASE never came");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `cmd` (with `sh -c`), asserting success; returns its stdout.
pub fn sh(cmd: &str) -> String {
    output_of(Command::new("sh").arg("-c").arg(cmd))
}

/// Runs `cmd`, asserting success; returns its stdout.
pub fn output_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A command running `program` as user `uid` (its gid the same), with no
/// supplementary groups (`setpriv`).
pub fn as_user(uid: u32, program: &str) -> Command {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(program);
    c
}

/// Runs `cmd` as the unprivileged user 65534 (nobody), no groups.
pub fn sh_as_nobody(cmd: &str) -> std::process::Output {
    as_user(65534, "sh").arg("-c").arg(cmd).output().unwrap()
}
