//! Kernel FUSE passthrough (`backing.rs`) mounted for real: which opens
//! the kernel serves from the host file and which through the page cache,
//! the one I/O mode an inode's open files share, and the round trips an
//! open and a close cost. Each fails, saying why, where `/dev/fuse` is
//! missing or the tests do not run as root.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{FileExt, PermissionsExt};

use lockref_fuse::InodeTable;

mod common;
use common::*;

/// Whether this kernel offers FUSE passthrough (Linux 6.9 and later).
fn offered() -> bool {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut n = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    (n.next().unwrap_or(0), n.next().unwrap_or(0)) >= (6, 9)
}

/// An existing file opened for writing only.
fn open_for_writing(path: &std::path::Path) -> fs::File {
    fs::OpenOptions::new().write(true).open(path).unwrap()
}

/// The `READ` and `WRITE` requests served so far.
fn served<T: InodeTable>(m: &Mount<T>) -> (u64, u64) {
    (m.fs.reads(), m.fs.writes())
}

/// With `Options::passthrough`, an open file is read and written by the
/// kernel from the host file, no `READ` or `WRITE` reaching the server,
/// where the kernel offers FUSE passthrough (Linux 6.9 and later); without
/// it, or where it is not offered, the server serves them. Every open of
/// an inode shares its backing (the kernel refuses any other open beside
/// a passthrough one): another user's open and a writable open beside a
/// held one work, and all see the same bytes; the backing goes with the
/// last release. (The file is larger than `PAGE_CACHE_MAX`: read-only
/// opens of it are passthrough too.)
fn open_files_skip_the_server_with_passthrough<T: InodeTable>() {
    for passthrough in [true, false] {
        with_mount_passthrough::<T>(2, passthrough, |m| {
            let data: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
            fs::write(m.host("big"), &data).unwrap();
            fs::set_permissions(m.host("big"), fs::Permissions::from_mode(0o666)).unwrap();
            assert_eq!(m.fs.kernel_passthrough(), passthrough && offered());
            let before = served(m);
            assert_eq!(fs::read(m.at("big")).unwrap(), data);
            let held = fs::File::open(m.at("big")).unwrap();
            let other = sh_as_nobody(&format!(
                "cmp {} {} && printf written | dd of={} conv=notrunc status=none",
                m.at("big").display(),
                m.host("big").display(),
                m.at("big").display()
            ));
            assert!(
                other.status.success(),
                "{}",
                String::from_utf8_lossy(&other.stderr)
            );
            let writer = open_for_writing(&m.at("big"));
            writer.write_all_at(b"WRITTEN", 4096).unwrap();
            drop(writer);
            let mut seen = [0; 7];
            held.read_exact_at(&mut seen, 0).unwrap();
            assert_eq!(
                &seen, b"written",
                "the held open sees the other user's write"
            );
            held.read_exact_at(&mut seen, 4096).unwrap();
            assert_eq!(&seen, b"WRITTEN");
            drop(held);
            let (reads, writes) = served(m);
            if m.fs.kernel_passthrough() {
                assert_eq!((reads, writes), before, "read and written by the kernel");
            } else {
                assert!(
                    reads > before.0 && writes > before.1,
                    "served by the server"
                );
            }
            let host = fs::read(m.host("big")).unwrap();
            assert_eq!(
                (&host[..7], &host[4096..4103]),
                (&b"written"[..], &b"WRITTEN"[..])
            );
            // A backing is registered as its own owner: three
            // switches per open that registers one (gid, uid and back;
            // an open whose inode's last RELEASE, sent in the
            // background, is still to come registers none) and at
            // most one more when the thread next serves a request (its
            // gid back); without passthrough, none beyond the threads'
            // gid put back.
            let switches = m.fs.credential_switches();
            // More opens than the switches that threads can have been
            // left owing (below), so that the two are told apart.
            let most = 2 * m.most_serving_threads();
            let opens = (most + 1).max(20);
            for _ in 0..opens {
                drop(fs::File::open(m.at("big")).unwrap());
            }
            let switches = m.fs.credential_switches() - switches;
            if m.fs.kernel_passthrough() {
                assert!(
                    (3..=4 * opens as u64).contains(&switches),
                    "{switches} switches for {opens} opens as root"
                );
            } else {
                // At most the gid and uid the other user left, per thread
                // that served one of its requests (root's requests keep a
                // thread's groups): which threads did varies from run to
                // run, so the bound is every thread's. Switching per
                // request would be at least one per open.
                assert!(
                    switches <= most as u64,
                    "{switches} switches for root's {opens} opens, {most} threads"
                );
            }
            // A program written through the mount runs once closed:
            // no backing holds it open for writing (`ETXTBSY`).
            fs::write(m.at("prog"), b"#!/bin/sh\necho ran\n").unwrap();
            fs::set_permissions(m.at("prog"), fs::Permissions::from_mode(0o755)).unwrap();
            let ran = std::process::Command::new(m.at("prog")).output().unwrap();
            assert_eq!(ran.stdout, b"ran\n");
        });
    }
}
on_both_tables!(open_files_skip_the_server_with_passthrough);

/// A close costs no round trip: every open of a file, made by `OPEN` or
/// `CREATE`, with or without passthrough, asks for no `FLUSH`
/// (`FOPEN_NOFLUSH`, honoured since Linux 5.16), and what was written is
/// on the host all the same.
fn a_close_sends_no_flush<T: InodeTable>() {
    for passthrough in [true, false] {
        with_mount_passthrough::<T>(2, passthrough, |m| {
            fs::write(m.host("f"), b"data").unwrap();
            let before = m.fs.flushes();
            for _ in 0..10 {
                drop(fs::File::open(m.at("f")).unwrap());
            }
            let mut w = open_for_writing(&m.at("f"));
            w.write_all(b"more").unwrap();
            drop(w);
            fs::File::create(m.at("new"))
                .unwrap()
                .write_all(b"new")
                .unwrap();
            assert_eq!(m.fs.flushes(), before, "no FLUSH for 12 closes");
            assert_eq!(fs::read(m.host("f")).unwrap(), b"more");
            assert_eq!(fs::read(m.host("new")).unwrap(), b"new");
        });
    }
}
on_both_tables!(a_close_sends_no_flush);

/// With passthrough on, a read-only open of a small file goes through the
/// page cache (its reads served here: no `ioctl`s for an open+close), a
/// writable open or a read of a larger file is passthrough; and the open
/// files of an inode share one mode whichever came first, as the kernel
/// demands (`EIO` for an open in the other): a writable open beside a held
/// read-only open of a small file goes through the page cache too, and a
/// read-only open beside a held writable one shares its backing.
fn an_inodes_open_files_share_one_io_mode<T: InodeTable>() {
    with_mount_passthrough::<T>(2, true, |m| {
        assert!(
            m.fs.kernel_passthrough(),
            "this kernel does not offer FUSE passthrough (Linux 6.9+): nothing to test"
        );
        fs::write(m.host("small"), b"small file").unwrap();
        let big = vec![7u8; 1 << 20];
        fs::write(m.host("big"), &big).unwrap();

        let before = served(m);
        assert_eq!(fs::read(m.at("small")).unwrap(), b"small file");
        assert!(
            m.fs.reads() > before.0,
            "a small file's read is served here"
        );
        let before = served(m);
        assert_eq!(fs::read(m.at("big")).unwrap(), big);
        assert_eq!(served(m), before, "a large file is read by the kernel");
        wait_for_releases(m);

        // A small file held open read-only: a writable open beside it
        // follows it through the page cache.
        let held = fs::File::open(m.at("small")).unwrap();
        let before = served(m);
        let w = open_for_writing(&m.at("small"));
        w.write_all_at(b"SMALL", 0).unwrap();
        drop(w);
        assert!(m.fs.writes() > before.1, "written through the server");
        let mut seen = [0; 10];
        held.read_exact_at(&mut seen, 0).unwrap();
        assert_eq!(&seen, b"SMALL file");
        drop(held);
        wait_for_releases(m);

        // Held open for writing (passthrough): a read-only open beside it
        // shares the backing, read by the kernel.
        let w = open_for_writing(&m.at("small"));
        let before = served(m);
        assert_eq!(fs::read(m.at("small")).unwrap(), b"SMALL file");
        w.write_all_at(b"s", 0).unwrap();
        drop(w);
        assert_eq!(served(m), before, "read and written by the kernel");
        assert_eq!(fs::read(m.host("small")).unwrap(), b"sMALL file");
    });
}
on_both_tables!(an_inodes_open_files_share_one_io_mode);
