//! Every descriptor the server holds is within its budget, and the budget
//! within the process's limit, whatever a user lists: inodes on a mount
//! inside the share are the budget's like the share's own (point 1 of the
//! third audit: one `ls -l` of a tmpfs in the share took the server to its
//! limit, and every user's next operation got `EMFILE`), and a budget
//! given past the limit is held below it (point 5: with one, one user's
//! listing took every descriptor, and others got `EMFILE` even after it
//! ended); descriptors that cannot be evicted (no descriptor of their
//! mount to reopen them by) take at most half of it. Its own test binary: each test lowers this process's limit on
//! descriptors to 1,024 (soft and hard), where a listing of 3,000 files
//! passes it.

use std::fs;

use lockref_fuse::InodeTable;

mod common;
use common::compare::python_as_nobody;
use common::volume::Volume;
use common::*;

/// The limit each test runs under.
const LIMIT: u64 = 1024;
/// Files listed: past the limit.
const FILES: usize = 3000;

fn lower_the_limit() {
    use nix::sys::resource::{setrlimit, Resource};
    setrlimit(Resource::RLIMIT_NOFILE, LIMIT, LIMIT).unwrap();
}

/// `FILES` empty files in `dir` (on the host).
fn fill(dir: &std::path::Path) {
    for i in 0..FILES {
        fs::File::create(dir.join(format!("f{i}"))).unwrap();
    }
}

/// Root and user 1000 open and read `mine`, a file of the share.
fn others_are_served<T: InodeTable>(m: &Mount<T>) {
    assert_eq!(
        fs::read(m.at("mine")).map_err(|e| e.raw_os_error()),
        Ok(b"served".to_vec()),
        "{}: root's read",
        T::NAME
    );
    let other = as_user(1000, "cat").arg(m.at("mine")).output().unwrap();
    assert!(
        other.status.success(),
        "{}: user 1000's read: {}",
        T::NAME,
        String::from_utf8_lossy(&other.stderr)
    );
}

/// User 65534 lists `dir` through the mount with every file's attributes;
/// then root and user 1000 still open and read a file of the share, and
/// the server's descriptors are within its budget.
fn list_then_others_are_served<T: InodeTable>(m: &Mount<T>, dir: &str) {
    fs::write(m.host("mine"), b"served").unwrap();
    let listed = sh_as_nobody(&format!("ls -l {} | wc -l", m.at(dir).display()));
    assert!(
        listed.status.success(),
        "{}: ls -l failed: {}",
        T::NAME,
        String::from_utf8_lossy(&listed.stderr)
    );
    let lines: usize = String::from_utf8_lossy(&listed.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(lines, FILES + 1, "{}: every file listed", T::NAME);
    others_are_served(m);
    let stats = m.fs.descriptor_stats();
    let open = open_fds();
    assert!(
        stats.cached + stats.pinned <= stats.budget,
        "{}: {stats:?}",
        T::NAME
    );
    assert!(
        (open as u64) < LIMIT - 64,
        "{}: {open} descriptors open, limit {LIMIT}: {stats:?}",
        T::NAME
    );
    eprintln!(
        "{}: {FILES} files listed in {dir}: {open} descriptors open (limit {LIMIT}), {stats:?}",
        T::NAME
    );
}

fn a_listing_on_a_mount_inside_the_share_stays_within_the_budget<T: InodeTable>() {
    lower_the_limit();
    with_mount::<T>(|m| {
        fs::create_dir(m.host("vol")).unwrap();
        let volume = Volume::tmpfs(&m.host("vol"));
        fill(&m.host("vol"));
        list_then_others_are_served(m, "vol");
        assert!(m.forget_all());
        // The server keeps a descriptor of the tmpfs to reopen its
        // inodes by until it stops: detached now, gone then.
        volume.detach();
    });
}

/// The fallback: a mount inside the share whose root the user who meets
/// it first may not read (a tmpfs of mode 0711) gets no descriptor to
/// reopen its inodes by, so their descriptors cannot be evicted: they take
/// at most half the budget, and past it a lookup of a new inode there
/// gets `ENFILE`, while everyone else is served.
fn unevictable_descriptors_take_at_most_half_the_budget<T: InodeTable>() {
    lower_the_limit();
    with_mount::<T>(|m| {
        fs::create_dir(m.host("locked")).unwrap();
        let volume = Volume::tmpfs_unreadable(&m.host("locked"));
        fill(&m.host("locked"));
        fs::write(m.host("mine"), b"served").unwrap();
        let script = format!(
            "import os\n\
             codes = {{}}\n\
             for i in range({FILES}):\n\
             \x20   try: os.stat('{dir}/f%d' % i); e = 0\n\
             \x20   except OSError as x: e = x.errno\n\
             \x20   codes[e] = codes.get(e, 0) + 1\n\
             print(sorted(codes.items()))\n",
            dir = m.at("locked").display()
        );
        let said = python_as_nobody(&script);
        assert!(
            said.contains(&format!("({}, ", libc::ENFILE)),
            "{}: the lookups past the half say ENFILE: {said}",
            T::NAME
        );
        others_are_served(m);
        let stats = m.fs.descriptor_stats();
        assert!(
            stats.pinned <= stats.budget / 2 + 4,
            "{}: {stats:?}",
            T::NAME
        );
        assert!(
            stats.cached + stats.pinned <= stats.budget,
            "{}: {stats:?}",
            T::NAME
        );
        assert!((open_fds() as u64) < LIMIT - 64, "{}: {stats:?}", T::NAME);
        eprintln!(
            "{}: {FILES} stats on a tmpfs nobody may read: {said}; {} descriptors open \
             (limit {LIMIT}), {stats:?}",
            T::NAME,
            open_fds()
        );
        assert!(m.forget_all());
        assert_eq!(
            m.fs.descriptor_stats().pinned,
            0,
            "each pinned one goes with its inode"
        );
        volume.unmount();
    });
}

fn a_budget_past_the_limit_is_held_below_it<T: InodeTable>() {
    lower_the_limit();
    with_mount_made::<T>(
        4,
        |source| with_descriptor_budget(source, 100_000),
        |m| {
            fs::create_dir(m.host("many")).unwrap();
            fill(&m.host("many"));
            list_then_others_are_served(m, "many");
            assert!(
                (m.fs.descriptor_stats().budget as u64) < LIMIT - 64,
                "{:?}",
                m.fs.descriptor_stats()
            );
            fs::remove_dir_all(m.host("many")).unwrap();
        },
    );
}

on_both_tables!(
    a_listing_on_a_mount_inside_the_share_stays_within_the_budget,
    unevictable_descriptors_take_at_most_half_the_budget,
    a_budget_past_the_limit_is_held_below_it,
);
