//! The share shown through an alias of the FUSE root (`root_alias.rs`):
//! the kernel caches the ACL of the mount's root like any other inode's,
//! and the mount shows the share exactly, nothing of the alias.

use std::fs;
use std::os::unix::fs::MetadataExt;

use lockref_fuse::{InodeTable, Passthrough, ROOT_ALIAS_NAME};

mod common;
use common::*;

/// `stat`s of a file by absolute path, as user 65534 (not the owner of
/// the share's root), in one process; returns the server's ACL reads
/// they cost.
fn acl_reads_of_stats<T: InodeTable>(m: &Mount<T>, stats: usize) -> u64 {
    fs::write(m.host("f"), b"x").unwrap();
    let before = m.fs.acl_reads();
    let script = format!(
        "import os\nfor i in range({stats}): os.stat('{}')",
        m.at("f").display()
    );
    output_of(
        as_user(65534, common::compare::PYTHON)
            .arg("-c")
            .arg(&script),
    );
    fs::remove_file(m.host("f")).unwrap();
    m.fs.acl_reads() - before
}

/// 100 `stat`s of `/mnt/f` by a user who does not own the share's root:
/// the root's ACL is read once (then the kernel caches it), not once per
/// path walk. Without the alias the kernel never caches the root's ACL
/// (it made the root inode before `INIT` negotiated ACLs), which this
/// test prints: 100 reads for 100 `stat`s on Linux 6.18.
fn the_roots_acl_is_read_once_not_per_path_walk<T: InodeTable>() {
    const STATS: usize = 100;
    with_mount::<T>(|m| {
        let reads = acl_reads_of_stats(m, STATS);
        assert!(
            reads <= 2,
            "{reads} ACL reads for {STATS} stats through the alias"
        );
    });
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let plain = Mount::<T>::made_config(4, false, |s| Passthrough::new(s).unwrap());
    let reads = acl_reads_of_stats(&plain, STATS);
    plain.unmount();
    eprintln!(
        "{}: without the alias, {reads} ACL reads for {STATS} stats",
        T::NAME
    );
}
on_both_tables!(the_roots_acl_is_read_once_not_per_path_walk);

/// The mount point shows the share and nothing else: the same names, a
/// host file that has the alias's name read as itself (the name means the
/// alias only in node id 1), the share's inode number, and `..` of the mount's
/// root is the mount point's parent, as for any mount. No private mount
/// is left behind, before or after the unmount.
fn the_mount_shows_the_share_and_nothing_of_the_alias<T: InodeTable>() {
    let privates = || {
        fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .filter(|l| l.contains("/lockref-fuse."))
            .count()
    };
    with_mount::<T>(|m| {
        assert_eq!(privates(), 0, "the private mount is detached");
        fs::write(m.host("a"), b"a").unwrap();
        fs::create_dir(m.host("d")).unwrap();
        fs::write(m.host(ROOT_ALIAS_NAME), b"a file of the share").unwrap();
        let names = |dir: &std::path::Path| {
            let mut v: Vec<_> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&m.mnt), names(&m.source));
        assert_eq!(
            fs::read(m.at(ROOT_ALIAS_NAME)).unwrap(),
            b"a file of the share"
        );
        let (mnt, share) = (
            fs::metadata(&m.mnt).unwrap(),
            fs::metadata(&m.source).unwrap(),
        );
        assert_eq!(mnt.ino(), share.ino(), "the share's inode number");
        let parent = fs::metadata(m.mnt.parent().unwrap()).unwrap();
        let dotdot = fs::metadata(m.at("d/../..")).unwrap();
        assert_eq!((dotdot.dev(), dotdot.ino()), (parent.dev(), parent.ino()));
        for name in ["a", "d", ROOT_ALIAS_NAME] {
            let p = m.host(name);
            if p.is_dir() {
                fs::remove_dir(p).unwrap();
            } else {
                fs::remove_file(p).unwrap();
            }
        }
    });
    // Under the lock the descriptor counts are taken under: reading
    // mountinfo holds a descriptor for a moment.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(privates(), 0);
}
on_both_tables!(the_mount_shows_the_share_and_nothing_of_the_alias);
