//! The server run by an ordinary user: mounted through `fusermount3` (the
//! set-user-ID helper mounts and hands the connection's descriptor back),
//! served by the server's own `/dev/fuse` loop, and ended by the user's
//! own `fusermount3 -u`.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{as_user, sh_as_nobody};

const NOBODY: u32 = 65534;

/// Puts back what the test changed, and takes down what it left, even
/// when it fails: the mount, the server, `/dev/fuse`'s mode.
struct Cleanup {
    mountpoint: PathBuf,
    server: Option<Child>,
    fuse_mode: u32,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if mounted(&self.mountpoint) {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&self.mountpoint)
                .status();
        }
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
        let _ =
            std::fs::set_permissions("/dev/fuse", std::fs::Permissions::from_mode(self.fuse_mode));
    }
}

fn mounted(at: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(at.to_str().unwrap()))
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_ordinary_user_mounts_serves_and_unmounts_through_fusermount3() {
    require_mount!();
    let helper_present = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| dir.join("fusermount3").is_file())
    });
    assert!(
        helper_present,
        "fusermount3 is missing (Debian's fuse3): an ordinary user's mount cannot be tested"
    );
    let dir = tempfile::Builder::new()
        .prefix("lockref-fuse-user")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (share, mountpoint) = (dir.path().join("share"), dir.path().join("mnt"));
    for d in [&share, &mountpoint] {
        std::fs::create_dir(d).unwrap();
        std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    // `fusermount3` opens `/dev/fuse` as the user: the device is 0666 as
    // distributions ship it, 0600 on some machines (this one's CI VM).
    let fuse_mode = std::fs::metadata("/dev/fuse").unwrap().mode() & 0o7777;
    let mut cleanup = Cleanup {
        mountpoint: mountpoint.clone(),
        server: None,
        fuse_mode,
    };
    std::fs::set_permissions("/dev/fuse", std::fs::Permissions::from_mode(0o666)).unwrap();

    // An ordinary user cannot reopen file handles: one descriptor per
    // inode instead (the server says so and stops without it).
    let server = as_user(NOBODY, env!("CARGO_BIN_EXE_lockref-fuse"))
        .arg("--inode-descriptors")
        .arg(&share)
        .arg(&mountpoint)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let server = cleanup.server.insert(server);
    wait_until("the user's mount", || {
        assert!(
            server.try_wait().unwrap().is_none(),
            "the server ended before mounting"
        );
        mounted(&mountpoint)
    });

    let m = mountpoint.display();
    let out = sh_as_nobody(&format!(
        "echo hi > {m}/f && cat {m}/f && mkdir {m}/d && ls {m}"
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\nd\nf\n");
    let made = std::fs::metadata(share.join("f")).unwrap();
    assert_eq!(
        (made.uid(), made.len()),
        (NOBODY, 3),
        "made on the host as the user"
    );
    // Without allow_other the kernel lets no one else in, root included.
    let refused = std::fs::metadata(mountpoint.join("f")).unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(libc::EACCES));

    let unmounted = as_user(NOBODY, "fusermount3")
        .arg("-u")
        .arg(&mountpoint)
        .status()
        .unwrap();
    assert!(unmounted.success(), "the user's own unmount");
    let server = cleanup.server.as_mut().unwrap();
    wait_until("the server's end with its connection", || {
        server.try_wait().unwrap().is_some()
    });
    let status = server.wait().unwrap();
    assert!(status.success(), "the server ended with {status}");
    cleanup.server = None;
    assert!(!mounted(&mountpoint));
}
