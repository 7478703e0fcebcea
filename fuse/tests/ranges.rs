//! Byte ranges and locks through the mount: `fallocate` (reserve, keep
//! size, punch a hole, zero a range), `SEEK_DATA`/`SEEK_HOLE`,
//! `copy_file_range`, held to what the host does; `cp --sparse=always`
//! keeping the holes (`du`); `flock` and `fcntl` locks excluding each
//! other between processes; and an SQLite database (locks and fsync)
//! written by two processes at once. Both inode tables. Before the server
//! served them, `fallocate` and `copy_file_range` failed with
//! `EOPNOTSUPP` and a seek for data answered as if the file had no holes.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lockref_fuse::InodeTable;

mod common;
use common::compare::*;
use common::*;

/// `fallocate(1)`'s modes and the seeks for data and holes.
fn fallocate_and_seeks<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |_| {},
        "import subprocess\n\
         MiB = 1 << 20\n\
         def falloc(*args):\n\
         \x20   r = subprocess.run(['fallocate', *args, os.path.join(A, 'f')], capture_output=True)\n\
         \x20   return r.returncode\n\
         def show(what):\n\
         \x20   st = os.stat(os.path.join(S, 'f'))\n\
         \x20   print(what, 'size', st.st_size, 'KiB on disk', st.st_blocks // 2)\n\
         print('reserve', falloc('-l', '8MiB')); show('reserved')\n\
         print('keep size', falloc('--keep-size', '-o', '8MiB', '-l', '1MiB')); show('kept')\n\
         print('punch', falloc('-p', '-o', '1MiB', '-l', '2MiB')); show('punched')\n\
         print('zero', falloc('-z', '-o', '4MiB', '-l', '1MiB')); show('zeroed')\n\
         p = os.path.join(A, 's')\n\
         fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)\n\
         os.pwrite(fd, b'x' * 4096, 0)\n\
         os.pwrite(fd, b'y' * 4096, 3 * MiB)\n\
         os.pwrite(fd, b'z' * 10, 6 * MiB)\n\
         os.fsync(fd)\n\
         def seek(off, how):\n\
         \x20   try: return os.lseek(fd, off, how)\n\
         \x20   except OSError as e: return errno.errorcode[e.errno]\n\
         for off in [0, 4096, MiB, 3 * MiB + 100, 5 * MiB, 6 * MiB + 10, 7 * MiB]:\n\
         \x20   print('at', off, 'data', seek(off, os.SEEK_DATA), 'hole', seek(off, os.SEEK_HOLE))\n\
         print('read in a hole', os.pread(fd, 4, MiB))\n\
         os.close(fd)\n",
        false,
    );
    assert!(
        seen.contains("keep size 0") && seen.contains("punch 0"),
        "{seen}"
    );
    assert!(seen.contains("at 4096 data 3145728 hole 4096"), "{seen}");
}

/// `copy_file_range` between handles of the mount: ranges, offsets past
/// the end, a destination opened read-only, an overlapping copy within one
/// file.
fn copy_file_range_calls<T: InodeTable>() {
    same_as_host::<T>(
        |root| {
            let body: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 251) as u8).collect();
            fs::write(root.join("from"), body).unwrap();
        },
        "import hashlib\n\
         src = os.open(os.path.join(A, 'from'), os.O_RDONLY)\n\
         dst = os.open(os.path.join(A, 'to'), os.O_RDWR | os.O_CREAT, 0o644)\n\
         print('copied', os.copy_file_range(src, dst, 200000, 1000, 5000))\n\
         print('past the end', os.copy_file_range(src, dst, 100, 400000, 0))\n\
         print('rest', os.copy_file_range(src, dst, 1 << 20, 201000, 205000))\n\
         ro = os.open(os.path.join(A, 'to'), os.O_RDONLY)\n\
         print('to read-only', attempt(lambda: os.copy_file_range(src, ro, 10)))\n\
         print('overlapping', attempt(lambda: os.copy_file_range(dst, dst, 100, 0, 50)))\n\
         for fd in (src, dst, ro): os.close(fd)\n\
         with open(os.path.join(S, 'to'), 'rb') as f: data = f.read()\n\
         print('size', len(data), hashlib.sha256(data).hexdigest())\n",
        false,
    );
}

/// `cp --sparse=always` through the mount keeps a file's holes: the copy
/// takes the blocks of its data, not of its size (`du` on the host).
fn cp_keeps_holes<T: InodeTable>() {
    with_mount::<T>(|m| {
        let mnt = m.mnt.display();
        sh(&format!(
            "printf head > {mnt}/sparse && truncate -s 64M {mnt}/sparse && printf tail >> {mnt}/sparse"
        ));
        sh(&format!(
            "cp --sparse=always {mnt}/sparse {mnt}/copy && cmp {mnt}/sparse {mnt}/copy"
        ));
        let kib = |p: &str| -> u64 {
            let out = sh(&format!("du -k '{}'", m.host(p).display()));
            out.split_whitespace().next().unwrap().parse().unwrap()
        };
        assert_eq!(
            fs::metadata(m.host("copy")).unwrap().size(),
            64 * 1024 * 1024 + 4
        );
        assert!(
            kib("copy") <= 64,
            "the copy filled its holes: {} KiB",
            kib("copy")
        );
        sh(&format!(
            "fallocate -l 16M {mnt}/full && cp --sparse=always {mnt}/full {mnt}/full.copy"
        ));
        assert!(
            kib("full") >= 16 * 1024,
            "fallocate reserved {} KiB",
            kib("full")
        );
        fs::remove_file(m.at("sparse")).unwrap();
        fs::remove_file(m.at("copy")).unwrap();
        fs::remove_file(m.at("full")).unwrap();
        fs::remove_file(m.at("full.copy")).unwrap();
    });
}

/// Waits for `path` to appear (the holder saying it holds the lock).
fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `sh -c cmd` in the background.
fn spawn_sh(cmd: &str) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Two processes' `flock` and `fcntl` locks on a file of the mount
/// exclude each other: while one holds the lock, the other's non-blocking
/// attempt is refused; once it lets go, the attempt succeeds. (The kernel
/// keeps these locks: the server negotiates neither lock capability.)
fn locks_exclude_each_other<T: InodeTable>() {
    with_mount::<T>(|m| {
        let mnt = m.mnt.display();
        let (held, release) = (m.at("held"), m.at("release"));
        fs::write(m.at("lock"), "").unwrap();
        let fcntl_try = format!(
            "{PYTHON} -c \"import fcntl, sys\nf = open('{mnt}/lock', 'r+')\ntry:\n    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n    sys.exit(1)\""
        );
        let holders = [
            format!(
                "flock {mnt}/lock sh -c 'touch {mnt}/held; while [ ! -e {mnt}/release ]; do sleep 0.02; done'"
            ),
            format!(
                "{PYTHON} -c \"import fcntl, os, time\nf = open('{mnt}/lock', 'r+')\nfcntl.lockf(f, fcntl.LOCK_EX)\nopen('{mnt}/held', 'w').close()\nwhile not os.path.exists('{mnt}/release'): time.sleep(0.02)\""
            ),
        ];
        let attempts = [format!("flock -n {mnt}/lock true"), fcntl_try];
        for (holder, attempt) in holders.iter().zip(&attempts) {
            let mut h = spawn_sh(holder);
            wait_for(&held);
            let refused = Command::new("sh").arg("-c").arg(attempt).status().unwrap();
            assert!(
                !refused.success(),
                "a second process took a held lock: {attempt}"
            );
            fs::write(&release, "").unwrap();
            assert!(h.wait().unwrap().success());
            sh(attempt);
            fs::remove_file(&held).unwrap();
            fs::remove_file(&release).unwrap();
        }
        fs::remove_file(m.at("lock")).unwrap();
    });
}

/// An SQLite database in the mount, in both journal modes: two processes
/// insert at once (SQLite's locks keep them apart, each commit fsyncs),
/// and every row is there and the database whole.
fn sqlite_in_the_mount<T: InodeTable>() {
    let found = {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        Command::new("sqlite3").arg("-version").output().is_ok()
    };
    assert!(
        found,
        "sqlite3 is not installed: this test drives it (Debian: apt-get install sqlite3)"
    );
    with_mount::<T>(|m| {
        let mnt = m.mnt.display();
        for mode in ["delete", "wal"] {
            let db = format!("{mnt}/{mode}.db");
            sh(&format!(
                "sqlite3 {db} 'PRAGMA journal_mode={mode}; CREATE TABLE t(who TEXT, n INTEGER);'"
            ));
            let writer = |who: &str| {
                let inserts: String = (0..200)
                    .map(|n| format!("BEGIN; INSERT INTO t VALUES('{who}', {n}); COMMIT;"))
                    .collect();
                spawn_sh(&format!("sqlite3 -cmd '.timeout 20000' {db} \"{inserts}\""))
            };
            let (mut a, mut b) = (writer("a"), writer("b"));
            assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
            let out = sh(&format!(
                "sqlite3 {db} 'SELECT who, count(*), sum(n) FROM t GROUP BY who; PRAGMA integrity_check;'"
            ));
            assert_eq!(out, "a|200|19900\nb|200|19900\nok\n", "{mode}");
        }
        sh(&format!("rm -f {mnt}/*.db*"));
    });
}

on_both_tables!(
    fallocate_and_seeks,
    copy_file_range_calls,
    cp_keeps_holes,
    locks_exclude_each_other,
    sqlite_in_the_mount,
);
