//! The filesystem mounted for real and driven by the kernel, `std::fs` and
//! real programs, with each inode table. Every test ends with the kernel's
//! references given back (the table holds only the root) and no host
//! descriptor leaked. Each fails, saying why, where `/dev/fuse` is
//! missing or the tests do not run as root.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirEntryExt, FileTypeExt, MetadataExt, PermissionsExt};

use lockref_fuse::InodeTable;

mod common;
use common::*;

fn populate(root: &std::path::Path) {
    fs::create_dir_all(root.join("tree/src/deep/er")).unwrap();
    fs::create_dir_all(root.join("tree/empty")).unwrap();
    for (i, dir) in ["tree", "tree/src", "tree/src/deep", "tree/src/deep/er"]
        .iter()
        .enumerate()
    {
        for j in 0..5 {
            let body: Vec<u8> = (0..(i * 1000 + j * 37))
                .map(|k| (k * 7 + j) as u8)
                .collect();
            fs::write(root.join(dir).join(format!("f{j}.txt")), body).unwrap();
        }
    }
    // Larger than one FUSE read or write: several requests per copy.
    let big: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|k: u32| (k * 31 % 251) as u8)
        .collect();
    fs::write(root.join("tree/big.bin"), big).unwrap();
    std::os::unix::fs::symlink("src/f0.txt", root.join("tree/link")).unwrap();
    fs::hard_link(root.join("tree/f1.txt"), root.join("tree/hard")).unwrap();
}

fn real_programs<T: InodeTable>() {
    with_mount::<T>(|m| {
        populate(&m.source);
        let (mnt, src) = (m.mnt.display(), m.source.display());
        // cp -r through the mount, compared on the host.
        sh(&format!("cp -a {mnt}/tree {mnt}/copy"));
        sh(&format!("diff -r {src}/tree {src}/copy"));
        sh(&format!("diff -r {mnt}/tree {src}/tree"));
        // find and ls -lR see every entry.
        let found = sh(&format!("cd {mnt} && find tree | sort"));
        let host = sh(&format!("cd {src} && find tree | sort"));
        assert_eq!(found, host);
        let listing = sh(&format!("ls -lR {mnt}/tree"));
        assert!(listing.contains("link -> src/f0.txt"), "{listing}");
        // sha256sum reads the same bytes.
        let through = sh(&format!(
            "cd {mnt}/tree && sha256sum big.bin f*.txt src/deep/er/*"
        ));
        let direct = sh(&format!(
            "cd {src}/tree && sha256sum big.bin f*.txt src/deep/er/*"
        ));
        assert_eq!(through, direct);
        // tar out and back in.
        sh(&format!(
            "mkdir {mnt}/untar && tar c -C {mnt} tree | tar x -C {mnt}/untar"
        ));
        sh(&format!("diff -r {src}/tree {src}/untar/tree"));
        // mv across directories.
        sh(&format!("mv {mnt}/copy/src/deep {mnt}/untar/moved"));
        assert!(m.host("untar/moved/er/f4.txt").exists());
        assert!(!m.host("copy/src/deep").exists());
        // The hard link is one inode through the mount too.
        let a = fs::metadata(m.at("tree/f1.txt")).unwrap();
        let b = fs::metadata(m.at("tree/hard")).unwrap();
        assert_eq!(a.ino(), b.ino());
        assert_eq!(a.nlink(), 2);
        // gcc builds and runs a program inside the mount.
        assert!(
            std::process::Command::new("gcc")
                .arg("--version")
                .output()
                .is_ok(),
            "gcc is not installed: this test builds a program in the mount (Debian: apt-get install gcc)"
        );
        fs::write(
            m.at("hello.c"),
            "#include <stdio.h>\nint main(void) { puts(\"hello from fuse\"); return 0; }\n",
        )
        .unwrap();
        sh(&format!("cd {mnt} && gcc -O1 -o hello hello.c"));
        assert_eq!(sh(&format!("{mnt}/hello")), "hello from fuse\n");
        sh(&format!("rm -r {mnt}/copy {mnt}/untar {mnt}/hello.c"));
        let _ = fs::remove_file(m.at("hello"));
    });
}

on_both_tables!(real_programs);

fn std_fs_operations<T: InodeTable>() {
    with_mount::<T>(|m| {
        // create, write, read back, append
        let mut f = fs::File::create(m.at("a")).unwrap();
        f.write_all(b"hello").unwrap();
        drop(f);
        fs::OpenOptions::new()
            .append(true)
            .open(m.at("a"))
            .unwrap()
            .write_all(b" world")
            .unwrap();
        let mut s = String::new();
        fs::File::open(m.at("a"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "hello world");
        assert_eq!(fs::read(m.host("a")).unwrap(), b"hello world");
        // setattr: mode, size, times
        fs::set_permissions(m.at("a"), fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(fs::metadata(m.host("a")).unwrap().mode() & 0o777, 0o640);
        fs::OpenOptions::new()
            .write(true)
            .open(m.at("a"))
            .unwrap()
            .set_len(3)
            .unwrap();
        assert_eq!(fs::read(m.at("a")).unwrap(), b"hel");
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        fs::File::options()
            .write(true)
            .open(m.at("a"))
            .unwrap()
            .set_modified(when)
            .unwrap();
        assert_eq!(fs::metadata(m.host("a")).unwrap().mtime(), 1_000_000_000);
        // rename, and rename that must not replace
        fs::rename(m.at("a"), m.at("b")).unwrap();
        assert!(m.host("b").exists() && !m.host("a").exists());
        fs::write(m.at("c"), "c").unwrap();
        let noreplace = nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &m.at("b"),
            nix::fcntl::AT_FDCWD,
            &m.at("c"),
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        );
        assert_eq!(noreplace, Err(nix::errno::Errno::EEXIST));
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &m.at("b"),
            nix::fcntl::AT_FDCWD,
            &m.at("c"),
            nix::fcntl::RenameFlags::RENAME_EXCHANGE,
        )
        .unwrap();
        assert_eq!(fs::read(m.host("b")).unwrap(), b"c");
        // symlink, readlink, hard link
        std::os::unix::fs::symlink("c", m.at("l")).unwrap();
        assert_eq!(fs::read_link(m.at("l")).unwrap().to_str(), Some("c"));
        assert_eq!(fs::read(m.at("l")).unwrap(), b"hel");
        fs::hard_link(m.at("c"), m.at("c2")).unwrap();
        assert_eq!(fs::metadata(m.at("c")).unwrap().nlink(), 2);
        // mknod: a FIFO and a socket node
        nix::unistd::mkfifo(
            &m.at("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        assert!(fs::symlink_metadata(m.host("fifo"))
            .unwrap()
            .file_type()
            .is_fifo());
        nix::sys::stat::mknod(
            &m.at("sock"),
            nix::sys::stat::SFlag::S_IFSOCK,
            nix::sys::stat::Mode::from_bits_truncate(0o600),
            0,
        )
        .unwrap();
        assert!(fs::symlink_metadata(m.at("sock"))
            .unwrap()
            .file_type()
            .is_socket());
        // directories: mkdir, readdir, rmdir (not empty: ENOTEMPTY)
        fs::create_dir(m.at("d")).unwrap();
        fs::write(m.at("d/x"), "x").unwrap();
        let mut names: Vec<_> = fs::read_dir(m.at("d"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["x"]);
        assert_eq!(
            fs::remove_dir(m.at("d")).unwrap_err().raw_os_error(),
            Some(libc::ENOTEMPTY)
        );
        fs::remove_file(m.at("d/x")).unwrap();
        fs::remove_dir(m.at("d")).unwrap();
        // errors pass through as the host's errno
        assert_eq!(
            fs::read(m.at("missing")).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
        let long = "n".repeat(256);
        assert_eq!(
            fs::write(m.at(&long), "x").unwrap_err().raw_os_error(),
            Some(libc::ENAMETOOLONG)
        );
        // statfs answers from the host
        let st = nix::sys::statvfs::statvfs(&m.mnt).unwrap();
        assert!(st.blocks() > 0);
        // fsync on a file and a directory
        let f = fs::File::options().write(true).open(m.at("c")).unwrap();
        f.sync_all().unwrap();
        f.sync_data().unwrap();
        fs::File::open(&m.mnt).unwrap().sync_all().unwrap();
        for name in ["b", "c", "c2", "l", "fifo", "sock"] {
            fs::remove_file(m.at(name)).unwrap();
        }
    });
}

on_both_tables!(std_fs_operations);

fn many_threads<T: InodeTable>() {
    with_mount::<T>(|m| {
        fs::create_dir(m.at("shared")).unwrap();
        fs::write(m.at("shared/hot"), "hot").unwrap();
        let iters = 300;
        std::thread::scope(|s| {
            for t in 0..6 {
                s.spawn(move || {
                    for i in 0..iters {
                        let mine = m.at(&format!("shared/t{t}"));
                        let moved = m.at(&format!("shared/t{t}-moved"));
                        fs::write(&mine, format!("{i}")).unwrap();
                        assert_eq!(fs::read(m.at("shared/hot")).unwrap(), b"hot");
                        assert!(fs::metadata(&mine).unwrap().is_file());
                        fs::rename(&mine, &moved).unwrap();
                        assert_eq!(fs::read(&moved).unwrap(), format!("{i}").as_bytes());
                        if i % 3 == 0 {
                            fs::remove_file(&moved).unwrap();
                        }
                        let _ = fs::metadata(m.at("shared/none"));
                    }
                });
            }
        });
        sh(&format!("rm -r {}/shared", m.mnt.display()));
    });
}

on_both_tables!(many_threads);

fn caller_credentials<T: InodeTable>() {
    with_mount::<T>(|m| {
        fs::write(m.host("secret"), "root only").unwrap();
        fs::set_permissions(m.host("secret"), fs::Permissions::from_mode(0o600)).unwrap();
        fs::create_dir(m.host("pub")).unwrap();
        fs::set_permissions(m.host("pub"), fs::Permissions::from_mode(0o777)).unwrap();
        let mnt = m.mnt.display();
        // Root reads it through the mount; nobody does not.
        assert_eq!(fs::read(m.at("secret")).unwrap(), b"root only");
        let out = sh_as_nobody(&format!("cat {mnt}/secret"));
        assert!(!out.status.success(), "nobody read a root-only file");
        assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
        // Nobody's new file and directory belong to nobody on the host.
        let out = sh_as_nobody(&format!("echo mine > {mnt}/pub/f && mkdir {mnt}/pub/d"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for p in ["pub/f", "pub/d"] {
            let md = fs::metadata(m.host(p)).unwrap();
            assert_eq!((md.uid(), md.gid()), (65534, 65534), "{p}");
        }
        // Nobody cannot chown its file to root, nor delete root's.
        let out = sh_as_nobody(&format!("chown 0 {mnt}/pub/f"));
        assert!(!out.status.success());
        let out = sh_as_nobody(&format!("rm -f {mnt}/secret"));
        assert!(!out.status.success());
        assert!(m.host("secret").exists());
        sh(&format!("rm -r {mnt}/pub {mnt}/secret"));
    });
}

on_both_tables!(caller_credentials);

/// A `READDIRPLUS` that fails part-way (a lookup error injected in the
/// host layer after five entries) still hands the kernel every lookup it
/// counted: what was gathered is sent, so after `drop_caches` the table
/// holds only the root (`with_mount` checks). Before, the error reply
/// dropped the counted entries, which stayed in the table for good.
fn a_listing_broken_part_way_gives_back_every_lookup<T: InodeTable>() {
    with_mount::<T>(|m| {
        fs::create_dir(m.host("d")).unwrap();
        for i in 0..40 {
            fs::write(m.host(&format!("d/f{i}")), "x").unwrap();
        }
        fs::metadata(m.at("d")).unwrap();
        m.fs.fail_lookups_after(5, libc::EIO);
        let ls = std::process::Command::new("ls")
            .arg("-l")
            .arg(m.at("d"))
            .output()
            .unwrap();
        m.fs.heal();
        // The listing stops at the error, after what was sent.
        assert!(
            !ls.status.success(),
            "the injected error reaches the caller"
        );
        assert!(String::from_utf8_lossy(&ls.stderr).contains("Input/output error"));
    });
}

on_both_tables!(a_listing_broken_part_way_gives_back_every_lookup);

/// This process's resident memory, in bytes (the server runs in it).
fn resident_bytes() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// 100 handles open at once on a 100,000-entry directory, each read part
/// way, cost the server next to nothing: a handle streams the listing from
/// the host at each request and keeps none of it. Before, every `OPENDIR`
/// copied the whole listing into its handle (100 handles took the server
/// from a few MB to gigabytes, most of it kept after they closed).
fn directory_handles_keep_no_listing<T: InodeTable>() {
    const ENTRIES: usize = 100_000;
    const HANDLES: usize = 100;
    with_mount::<T>(|m| {
        fs::create_dir(m.host("big")).unwrap();
        for i in 0..ENTRIES {
            fs::File::create(m.host(&format!("big/entry-with-a-longish-name-{i:06}"))).unwrap();
        }
        let before = resident_bytes();
        let mut handles = Vec::new();
        for _ in 0..HANDLES {
            let mut dir = fs::read_dir(m.at("big")).unwrap();
            // The first batch: the kernel's first READDIR(PLUS) on it.
            assert!(dir.next().unwrap().is_ok());
            handles.push(dir);
        }
        let open = resident_bytes();
        // One handle listed to the end, through every offset cookie.
        let all = fs::read_dir(m.at("big")).unwrap().count();
        assert_eq!(all, ENTRIES);
        drop(handles);
        let closed = resident_bytes();
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        println!(
            "{} handles on {ENTRIES} entries: resident {:.1} MiB before, {:.1} MiB open, {:.1} MiB after closing",
            HANDLES,
            mib(before),
            mib(open),
            mib(closed)
        );
        assert!(
            open.saturating_sub(before) < 64 << 20,
            "the handles took {:.1} MiB",
            mib(open.saturating_sub(before))
        );
        assert!(
            closed.saturating_sub(before) < 16 << 20,
            "{:.1} MiB kept after closing",
            mib(closed.saturating_sub(before))
        );
    });
}

on_both_tables!(directory_handles_keep_no_listing);

/// Mounting raises the soft descriptor limit to the hard one: the
/// server's descriptors (one per remembered inode and per handle) are
/// what a user with many files exhausts first, and the soft default
/// (often 1,024) is far below what the administrator allows.
#[test]
fn mounting_raises_the_descriptor_limit_to_the_hard_one() {
    require_mount!();
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    // Lowered first (never below what the other tests need), so that the
    // raise shows wherever the hard limit allows one.
    let low = hard.min(4096);
    setrlimit(Resource::RLIMIT_NOFILE, low, hard).unwrap();
    with_mount::<lockref_fuse::LockrefTable>(|_| {
        let (soft, now_hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!((soft, now_hard), (hard, hard));
    });
}

/// A name that does not exist is cached as a negative entry for the entry
/// timeout: failed opens of it after the first are answered by the kernel
/// (seed 001's workload), and a create through the mount drops the
/// negative entry at once.
fn a_missing_name_is_cached_as_a_negative_entry<T: InodeTable>() {
    with_mount_options::<T>(2, std::time::Duration::from_secs(60), |m| {
        let missing = m.at("no-such-file");
        assert!(fs::File::open(&missing).is_err());
        let served = m.fs.lookups();
        for _ in 0..10 {
            let e = fs::File::open(&missing).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        }
        assert_eq!(m.fs.lookups(), served, "no LOOKUP reached the server");
        fs::write(&missing, b"made").unwrap();
        assert_eq!(
            fs::read(&missing).unwrap(),
            b"made",
            "the create dropped it"
        );
        fs::remove_file(&missing).unwrap();
    });
}
on_both_tables!(a_missing_name_is_cached_as_a_negative_entry);

/// An inode the kernel forgot is kept by the lockref table (named by file
/// handle, born at a known time): found again by the next `LOOKUP` with
/// one `statx`, nothing opened (`found_known`), with the host's inode
/// number. A file unlinked or renamed over through the mount is not kept:
/// no descriptor holds it once forgotten, so the host frees its blocks.
/// Before, every forgotten inode died, and each `LOOKUP` after a
/// `drop_caches` opened its name again.
#[test]
fn a_forgotten_inode_is_kept_and_found_again_by_name_with_nothing_opened() {
    require_mount!();
    with_mount::<lockref_fuse::LockrefTable>(|m| {
        fs::create_dir(m.host("d")).unwrap();
        for i in 0..10 {
            fs::write(m.host(&format!("d/f{i}")), b"kept").unwrap();
        }
        let host_ino = |name: &str| fs::symlink_metadata(m.host(name)).unwrap().ino();
        for i in 0..10 {
            fs::symlink_metadata(m.at(&format!("d/f{i}"))).unwrap();
        }
        fs::write(m.at("gone"), vec![7u8; 1 << 20]).unwrap();
        fs::remove_file(m.at("gone")).unwrap();
        fs::write(m.at("replaced"), vec![7u8; 1 << 20]).unwrap();
        fs::write(m.at("new"), b"new").unwrap();
        fs::metadata(m.at("replaced")).unwrap();
        fs::rename(m.at("new"), m.at("replaced")).unwrap();
        assert!(m.forget_all(), "the kernel forgot every inode");
        let kept = m.fs.table().kept();
        assert!(kept >= 11, "d and its ten files kept: {kept}");
        let deleted: Vec<String> = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
            .map(|target| target.display().to_string())
            .filter(|target| target.ends_with("(deleted)"))
            .collect();
        assert!(
            deleted.is_empty(),
            "no descriptor holds a file unlinked or renamed over: {deleted:?}"
        );
        let known = m.fs.found_known();
        let lookups = m.fs.lookups();
        for i in 0..10 {
            let name = format!("d/f{i}");
            let st = fs::symlink_metadata(m.at(&name)).unwrap();
            assert_eq!(st.ino(), host_ino(&name), "{name}: the host's number");
        }
        assert_eq!(
            m.fs.lookups() - lookups,
            11,
            "d and its ten files looked up"
        );
        assert_eq!(
            m.fs.found_known() - known,
            11,
            "each found again with nothing opened"
        );
        assert_eq!(
            fs::read(m.at("d/f3")).unwrap(),
            b"kept",
            "reopened by its handle"
        );
        assert!(m.forget_all(), "every lookup counted comes back");
    });
}

/// A `READDIRPLUS` entry whose inode the kernel has looked up already is
/// answered from the table with one `statx` by name, nothing opened
/// (`found_known`); one never looked up is opened and looked up as a
/// `LOOKUP` is. Either way the listing gives the host's inode numbers, and
/// every lookup counted comes back when the kernel forgets.
fn a_listed_entry_looked_up_before_is_not_opened_again<T: InodeTable>() {
    with_mount_options::<T>(2, std::time::Duration::from_secs(60), |m| {
        fs::create_dir(m.host("d")).unwrap();
        for i in 0..10 {
            fs::write(m.host(&format!("d/f{i}")), b"").unwrap();
        }
        for i in 0..4 {
            fs::symlink_metadata(m.at(&format!("d/f{i}"))).unwrap();
        }
        let known = m.fs.found_known();
        let listings = m.fs.listings();
        // Ten entries fit the first page, which the kernel always asks
        // for with READDIRPLUS.
        let mut listed: Vec<(String, u64)> = fs::read_dir(m.at("d"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().into_string().unwrap(), e.ino())
            })
            .collect();
        listed.sort();
        assert!(m.fs.listings() > listings, "the listing reached the server");
        assert_eq!(
            m.fs.found_known() - known,
            4,
            "the four looked up, and only those, answered from the table"
        );
        let host: Vec<(String, u64)> = (0..10)
            .map(|i| {
                let name = format!("f{i}");
                let ino = fs::symlink_metadata(m.host(&format!("d/{name}")))
                    .unwrap()
                    .ino();
                (name, ino)
            })
            .collect();
        assert_eq!(listed, host, "the host's names and numbers");
        for (name, ino) in &host {
            let st = fs::symlink_metadata(m.at(&format!("d/{name}"))).unwrap();
            assert_eq!(st.ino(), *ino, "{name} after the listing");
        }
        assert!(m.forget_all(), "the kernel forgot every inode");
    });
}
on_both_tables!(a_listed_entry_looked_up_before_is_not_opened_again);

/// A file's inode number is the host's, through `stat` and a listing
/// (`d_ino`), for every name of it, and stays so after the kernel forgot
/// the inode and looked it up again (git, `find -samefile`, `tar`, `du` and
/// `rsync -H` compare these numbers).
fn an_inode_number_is_the_hosts_and_outlives_forgets<T: InodeTable>() {
    with_mount::<T>(|m| {
        fs::create_dir(m.at("d")).unwrap();
        fs::write(m.at("d/f"), b"data").unwrap();
        fs::hard_link(m.at("d/f"), m.at("g")).unwrap();
        let names = ["", "d", "d/f", "g"];
        let seen = |m: &Mount<T>| -> Vec<u64> {
            let mut inos: Vec<u64> = names
                .iter()
                .map(|n| fs::symlink_metadata(m.at(n)).unwrap().ino())
                .collect();
            let listed = fs::read_dir(m.at("d")).unwrap().map(|e| e.unwrap().ino());
            inos.extend(listed);
            inos
        };
        let mut host: Vec<u64> = names
            .iter()
            .map(|n| fs::symlink_metadata(m.host(n)).unwrap().ino())
            .collect();
        host.push(host[2]);
        assert_eq!(seen(m), host, "stat and d_ino report the host's numbers");
        assert_eq!(host[2], host[3], "one number for both names");
        assert!(m.forget_all(), "the kernel forgot every inode");
        assert_eq!(seen(m), host, "the same numbers once looked up again");
    });
}
on_both_tables!(an_inode_number_is_the_hosts_and_outlives_forgets);

/// A directory's listing is cached by the kernel across opens: a second
/// listing reaches the server with no `READDIR`, and a create through the
/// mount drops the cached listing at once.
fn a_listing_is_cached_across_opens<T: InodeTable>() {
    with_mount_options::<T>(2, std::time::Duration::from_secs(60), |m| {
        let names = |m: &Mount<T>| {
            let mut v: Vec<_> = fs::read_dir(m.at("d"))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            v.sort();
            v
        };
        fs::create_dir(m.at("d")).unwrap();
        fs::write(m.at("d/a"), b"").unwrap();
        assert_eq!(names(m), ["a"]);
        let served = m.fs.listings();
        assert_eq!(names(m), ["a"]);
        assert_eq!(
            m.fs.listings(),
            served,
            "the second listing came from the cache"
        );
        fs::write(m.at("d/b"), b"").unwrap();
        assert_eq!(
            names(m),
            ["a", "b"],
            "the create dropped the cached listing"
        );
        fs::remove_file(m.at("d/a")).unwrap();
        fs::remove_file(m.at("d/b")).unwrap();
        fs::remove_dir(m.at("d")).unwrap();
    });
}
on_both_tables!(a_listing_is_cached_across_opens);
