//! Whose credentials a request runs with. A serving thread takes each
//! caller's filesystem uid, gid and groups, switching only what differs
//! from the last caller's and keeping them after the request
//! (`creds.rs`). So the tests here hold, with few threads that serve
//! every user in turn (a mount of one serving thread reads requests with
//! two: `MountConfig::fuser`): what each caller makes is its own, the
//! server's own work (reopening a file handle) has the server's rights
//! whoever was served last, a request that needs nobody's rights works
//! whoever was, and a run of one user's requests switches nothing.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use lockref_fuse::InodeTable;

mod common;
use common::*;

/// Runs `script` with `sh -c` as `uid` (gid the same, no groups),
/// asserting success; returns its stdout.
fn sh_as(uid: u32, script: &str) -> String {
    let mut cmd = if uid == 0 {
        std::process::Command::new("sh")
    } else {
        as_user(uid, "sh")
    };
    output_of(cmd.arg("-c").arg(script))
}

/// A run of requests from one caller other than root switches its
/// filesystem uid, gid and groups once per serving thread, not per
/// request, and reads its groups once per thread and second: 200 opens
/// by one process, of a file it may read only through a supplementary
/// group (so the groups are in effect), on two serving threads (three
/// reading requests). Before, every
/// request switched the filesystem uid to the caller's and back (400
/// switches here, and 15-20 us of a user's 35-55 us open+close on the
/// 2-CPU VM). A root request after them makes a file that is root's,
/// group included: the thread's identity was switched back.
fn a_callers_credentials_are_switched_only_when_they_change<T: InodeTable>() {
    with_mount_passthrough::<T>(2, false, |m| {
        fs::write(m.host("group-only"), b"secret\n").unwrap();
        std::os::unix::fs::chown(m.host("group-only"), Some(0), Some(4242)).unwrap();
        fs::set_permissions(m.host("group-only"), fs::Permissions::from_mode(0o640)).unwrap();
        let (switches, reads) = (m.fs.credential_switches(), m.fs.group_reads());
        let opens = 200;
        output_of(
            std::process::Command::new("setpriv")
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--groups=4242",
                    "sh",
                    "-c",
                ])
                .arg(format!(
                    "i=0; while [ $i -lt {opens} ]; do read -r x < '{}' || exit 1; i=$((i+1)); done",
                    m.at("group-only").display()
                )),
        );
        let switches = m.fs.credential_switches() - switches;
        let reads = m.fs.group_reads() - reads;
        // Each serving thread's first request of the user: groups, gid
        // and uid (fuser's threads, and with rings every queue's).
        let threads = m.most_serving_threads() as u64;
        assert!(
            switches <= 3 * threads,
            "{switches} switches for {opens} opens, {threads} threads"
        );
        assert!(
            reads <= threads.max(8),
            "{reads} reads of the groups for {opens} opens"
        );
        fs::write(m.at("roots"), b"").unwrap();
        let made = fs::metadata(m.host("roots")).unwrap();
        assert_eq!((made.uid(), made.gid()), (0, 0));
    });
}
on_both_tables!(a_callers_credentials_are_switched_only_when_they_change);

/// One serving thread (two reading), callers in turn: each file is made as its own
/// caller, whoever the thread served before (a thread that kept the last
/// user's identity must not make root's file as that user, nor one
/// user's file as another).
fn each_caller_makes_its_own_files<T: InodeTable>() {
    with_mount_threads::<T>(1, |m| {
        fs::create_dir(m.host("open")).unwrap();
        fs::set_permissions(m.host("open"), fs::Permissions::from_mode(0o777)).unwrap();
        let turns = [65534, 0, 1000, 65534, 1000, 0, 0, 65534];
        for (i, uid) in turns.into_iter().enumerate() {
            let path = m.at(&format!("open/f{i}"));
            sh_as(uid, &format!("echo {uid} > '{}'", path.display()));
            let made = fs::metadata(m.host(&format!("open/f{i}"))).unwrap();
            assert_eq!(
                (made.uid(), made.gid()),
                (uid, uid),
                "file {i}, made by uid {uid}"
            );
        }
        sh(&format!("rm -r '{}'", m.at("open").display()));
    });
}
on_both_tables!(each_caller_makes_its_own_files);

/// With a descriptor budget of two, nearly every request reopens its
/// inode by file handle (`open_by_handle_at`, which needs
/// `CAP_DAC_READ_SEARCH`, gone from a thread at another user's filesystem
/// uid). On two threads that keep the last user's identity, the
/// reopens still work: the server switches back to its own rights first,
/// then to the caller's for the request itself.
fn a_users_requests_reopen_inodes_with_the_servers_rights<T: InodeTable>() {
    with_mount_made::<T>(
        1,
        |source| with_descriptor_budget(source, 2),
        |m| {
            for i in 0..8 {
                fs::write(m.host(&format!("f{i}")), format!("{i}\n")).unwrap();
            }
            let before = m.fs.descriptor_stats().reopens;
            let mnt = m.mnt.display();
            let read = format!(
                "for r in 1 2 3; do for i in 0 1 2 3 4 5 6 7; do cat {mnt}/f$i; done; done"
            );
            let expected: String = (0..3)
                .flat_map(|_| (0..8).map(|i| format!("{i}\n")))
                .collect();
            for uid in [65534, 1000, 0] {
                assert_eq!(sh_as(uid, &read), expected, "read by uid {uid}");
            }
            let reopens = m.fs.descriptor_stats().reopens - before;
            assert!(reopens >= 8, "{reopens} reopens: the budget held");
            for i in 0..8 {
                fs::remove_file(m.host(&format!("f{i}"))).unwrap();
            }
        },
    );
}
on_both_tables!(a_users_requests_reopen_inodes_with_the_servers_rights);

/// `fsync` of a directory by its owner, whose directory no one else may
/// read, right after another user's request on the same two threads:
/// it syncs through the handle the owner opened, with nobody's
/// rights needed. Before, `FSYNCDIR` opened the directory again, which
/// needs read permission, and so failed with `EACCES` when the thread
/// still had the other user's identity.
fn a_directory_is_synced_whoever_was_served_before<T: InodeTable>() {
    with_mount_threads::<T>(1, |m| {
        fs::create_dir(m.host("private")).unwrap();
        std::os::unix::fs::chown(m.host("private"), Some(1000), Some(1000)).unwrap();
        fs::set_permissions(m.host("private"), fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(m.host("public"), b"x").unwrap();
        let public = m.at("public").display().to_string();
        let sync = format!(
            "import os\nfd = os.open('{}', os.O_RDONLY | os.O_DIRECTORY)\nos.fsync(fd)\nos.close(fd)\nprint('synced')",
            m.at("private").display()
        );
        for _ in 0..3 {
            sh_as(65534, &format!("cat {public} > /dev/null"));
            let out = as_user(1000, common::compare::PYTHON)
                .arg("-c")
                .arg(&sync)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                "synced",
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        fs::remove_dir(m.host("private")).unwrap();
        fs::remove_file(m.host("public")).unwrap();
    });
}
on_both_tables!(a_directory_is_synced_whoever_was_served_before);
