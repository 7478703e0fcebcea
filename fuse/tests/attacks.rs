//! The attacks an unprivileged user of a shared mount (`--allow-other`,
//! root serving) was seen to try, kept as regression tests. Each held when
//! it was first tried; each must keep holding. Both inode tables; the
//! users are 65534 and 1000 (`setpriv`), and root where root through the
//! mount is the stronger attacker (the server runs as root: anything it
//! did on the host outside the caller's rights, it would do for root).
//!
//! The attacks that did not hold have their tests beside their fixes: the
//! cached-path ACL bypass (`xattrs.rs`), the FIFO that hung a `CREATE`
//! (`host.rs`), references lost in a broken listing and the memory of
//! directory handles (`mount.rs`).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lockref_fuse::InodeTable;

mod common;
use common::compare::*;
use common::volume::Volume;
use common::*;

/// `st_mode`, size and modification time of a host file, to see that
/// nothing touched it.
fn fingerprint(path: &Path) -> (u32, u64, i64, u32, Vec<u8>) {
    let md = fs::symlink_metadata(path).unwrap();
    (
        md.mode(),
        md.size(),
        md.mtime_nsec(),
        md.uid(),
        fs::read(path).unwrap(),
    )
}

/// `..` of the mount's root is the kernel's: the mount point's parent,
/// never the share's. A file beside the share on the host is not
/// reachable through the mount by climbing, from the root or below it.
fn dotdot_never_leaves_the_share<T: InodeTable>() {
    with_mount::<T>(|m| {
        fs::write(m.host("../beside"), "outside the share").unwrap();
        fs::create_dir(m.host("sub")).unwrap();
        let mnt = m.mnt.display();
        for user in ["root", "nobody"] {
            let probe = format!(
                "test ! -e {mnt}/../beside && test ! -e {mnt}/sub/../../beside && test \"$(stat -c %i {mnt}/..)\" = \"$(stat -c %i {mnt}/../mnt/..)\" && ls -a {mnt}"
            );
            let out = if user == "root" {
                sh(&probe)
            } else {
                let o = sh_as_nobody(&probe);
                assert!(
                    o.status.success(),
                    "{user}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                String::from_utf8(o.stdout).unwrap()
            };
            assert_eq!(out, ".\n..\nsub\n", "{user}");
        }
        assert_eq!(
            fs::metadata(m.at("..")).unwrap().ino(),
            fs::metadata(m.mnt.parent().unwrap()).unwrap().ino()
        );
        fs::remove_dir(m.at("sub")).unwrap();
        fs::remove_file(m.host("../beside")).unwrap();
    });
}

/// Symlinks in the share that climb out of it (`../victim`) are followed
/// by the caller's kernel, where they land beside the mount point (on
/// nothing), never by the server on the host, where they would land on a
/// world-writable file beside the share. Open, chmod, chown, truncate and
/// utimes through them, as root and as a user, leave the victim intact.
fn escaping_symlinks_reach_nothing_on_the_host<T: InodeTable>() {
    with_mount::<T>(|m| {
        let victim = m.host("../victim");
        fs::write(&victim, "intact").unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(0o666)).unwrap();
        let before = fingerprint(&victim);
        fs::create_dir(m.host("pub")).unwrap();
        fs::set_permissions(m.host("pub"), fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink("../victim", m.host("esc")).unwrap();
        std::os::unix::fs::symlink("../../victim", m.host("pub/esc")).unwrap();
        std::os::unix::fs::symlink("..", m.host("up")).unwrap();
        let script = "for link in ['esc', 'pub/esc', 'up/victim']:\n\
             \x20   p = os.path.join(A, link)\n\
             \x20   print(link,\n\
             \x20         attempt(lambda: os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))),\n\
             \x20         attempt(lambda: os.chmod(p, 0o777)),\n\
             \x20         attempt(lambda: os.chown(p, 65534, 65534)),\n\
             \x20         attempt(lambda: os.truncate(p, 0)),\n\
             \x20         attempt(lambda: os.utime(p, (0, 0))),\n\
             \x20         attempt(lambda: os.write(os.open(p, os.O_WRONLY | os.O_APPEND), b'escaped')))\n\
             for link in ['esc', 'pub/esc']:\n\
             \x20   p = os.path.join(A, link)\n\
             \x20   print(link, 'itself', attempt(lambda: os.utime(p, (0, 0), follow_symlinks=False)),\n\
             \x20         attempt(lambda: os.chown(p, 0, 0, follow_symlinks=False)))\n";
        for as_nobody in [false, true] {
            let seen = run(script, &m.mnt, &m.source, as_nobody);
            for link in ["esc", "pub/esc", "up/victim"] {
                let refused = format!("{link} ENOENT ENOENT ENOENT ENOENT ENOENT ENOENT\n");
                assert!(seen.contains(&refused), "{seen}");
            }
            assert_eq!(
                fingerprint(&victim),
                before,
                "the victim was touched: {seen}"
            );
        }
        for p in ["esc", "pub/esc", "up"] {
            fs::remove_file(m.host(p)).unwrap();
        }
        fs::remove_dir(m.host("pub")).unwrap();
        fs::remove_file(&victim).unwrap();
    });
}

/// While requests create, rename and link files in `d` through the mount
/// (as root, two threads), the host swaps `d` for a symlink to a directory
/// beside the share and back, again and again. The server acts on
/// descriptors and single names, never following a symlink on the host:
/// the directory beside the share stays empty. The kernel caches nothing
/// (a zero TTL), so every path walk meets the host as it is at that
/// moment.
fn a_host_side_swap_never_lets_a_request_out<T: InodeTable>() {
    with_mount_options::<T>(4, Duration::ZERO, |m| {
        let outside = m.host("../outside");
        fs::create_dir(&outside).unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o777)).unwrap();
        fs::create_dir(m.host("d")).unwrap();
        let stop = AtomicBool::new(false);
        let (done, swaps) = (AtomicU32::new(0), AtomicU32::new(0));
        std::thread::scope(|s| {
            s.spawn(|| {
                let (d, parked) = (m.host("d"), m.host("d.real"));
                while !stop.load(Ordering::Relaxed) {
                    fs::rename(&d, &parked).unwrap();
                    std::os::unix::fs::symlink("../outside", &d).unwrap();
                    std::thread::sleep(Duration::from_micros(300));
                    fs::remove_file(&d).unwrap();
                    fs::rename(&parked, &d).unwrap();
                    std::thread::sleep(Duration::from_micros(300));
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            });
            for t in 0..2 {
                let (stop, done) = (&stop, &done);
                let d = m.at("d");
                s.spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let (f, g, h) = (
                            d.join(format!("f{t}_{i}")),
                            d.join(format!("g{t}_{i}")),
                            d.join(format!("h{t}_{i}")),
                        );
                        let went = [
                            fs::write(&f, "x").is_ok(),
                            fs::rename(&f, &g).is_ok(),
                            fs::hard_link(&g, &h).is_ok(),
                            fs::create_dir(d.join(format!("s{t}_{i}"))).is_ok(),
                        ];
                        let n = went.iter().filter(|&&ok| ok).count();
                        done.fetch_add(n as u32, Ordering::Relaxed);
                        i += 1;
                    }
                });
            }
            std::thread::sleep(Duration::from_secs(3));
            stop.store(true, Ordering::Relaxed);
        });
        let escaped: Vec<_> = fs::read_dir(&outside).unwrap().collect();
        eprintln!(
            "{}: {} swaps, {} creates, renames, links and mkdirs done, {} entries outside",
            T::NAME,
            swaps.load(Ordering::Relaxed),
            done.load(Ordering::Relaxed),
            escaped.len()
        );
        assert!(escaped.is_empty(), "a request reached outside the share");
        assert!(done.load(Ordering::Relaxed) > 0, "no request went through");
        fs::remove_dir_all(m.host("d")).unwrap();
        fs::remove_dir(&outside).unwrap();
    });
}

/// A descriptor a user may hold (read-only, or `O_PATH`) reopened
/// through `/proc/self/fd` grants no more than opening the path would:
/// no write to root's file, no read of root's private file.
fn reopening_through_proc_gains_nothing<T: InodeTable>() {
    same_as_host::<T>(
        |root| {
            file(root, "roots", 0o644, 0);
            file(root, "private", 0o600, 0);
        },
        "def reopen(p, first, then):\n\
         \x20   fd = os.open(os.path.join(A, p), first)\n\
         \x20   try: return attempt(lambda: os.close(os.open('/proc/self/fd/%d' % fd, then)))\n\
         \x20   finally: os.close(fd)\n\
         print('read-only to write', reopen('roots', os.O_RDONLY, os.O_WRONLY))\n\
         print('read-only to read-write', reopen('roots', os.O_RDONLY, os.O_RDWR))\n\
         print('O_PATH to write', reopen('roots', os.O_PATH, os.O_WRONLY))\n\
         print('O_PATH of private to read', reopen('private', os.O_PATH, os.O_RDONLY))\n\
         print('intact', open(os.path.join(S, 'roots')).read() == 'data\\n', mode('roots'))\n",
        true,
    );
}

/// A user makes no device, no set-user-ID file of root's, no file of
/// root's group, and no hard link to root's private file (the host's
/// `protected_hardlinks`), exactly as on the host.
fn no_devices_setid_roots_or_links_to_roots_files<T: InodeTable>() {
    let seen = same_as_host::<T>(
        |root| {
            file(root, "private", 0o600, 0);
            file(root, "shared", 0o666, 0);
            fs::create_dir(root.join("pub")).unwrap();
            fs::set_permissions(root.join("pub"), fs::Permissions::from_mode(0o777)).unwrap();
        },
        "P = lambda n: os.path.join(A, 'pub', n)\n\
         print('char device', attempt(lambda: os.mknod(P('null'), 0o666 | stat.S_IFCHR, os.makedev(1, 3))))\n\
         print('block device', attempt(lambda: os.mknod(P('disk'), 0o666 | stat.S_IFBLK, os.makedev(8, 0))))\n\
         print('fifo', attempt(lambda: os.mknod(P('fifo'), 0o666 | stat.S_IFIFO)))\n\
         open(P('mine'), 'w').close()\n\
         print('setuid own', attempt(lambda: os.chmod(P('mine'), 0o4755)), mode('pub/mine'))\n\
         print('give to root', attempt(lambda: os.chown(P('mine'), 0, -1)), mode('pub/mine'))\n\
         print('root group', attempt(lambda: os.chown(P('mine'), -1, 0)))\n\
         print('setgid root group', attempt(lambda: os.chmod(os.path.join(A, 'shared'), 0o2777)))\n\
         print('link private', attempt(lambda: os.link(os.path.join(A, 'private'), P('stolen'))))\n\
         print('link shared', attempt(lambda: os.link(os.path.join(A, 'shared'), P('linked'))))\n\
         print('owners', sorted((n, os.lstat(os.path.join(S, 'pub', n)).st_uid) for n in os.listdir(os.path.join(S, 'pub'))))\n",
        true,
    );
    assert!(seen.contains("char device EPERM"), "{seen}");
    assert!(seen.contains("link private EPERM"), "{seen}");
}

/// Two users and root create at once, 4 processes per user, 500 files
/// each, at 4 and at 1 serving threads: every file belongs to its
/// creator, and no attempt of a user's on the other user's private
/// directory succeeds.
fn credentials_under_stress<T: InodeTable>() {
    const PER_PROCESS: u32 = 500;
    for threads in [4, 1] {
        with_mount_threads::<T>(threads, |m| {
            let users = [65534u32, 1000];
            for uid in users {
                let d = m.host(&format!("u{uid}"));
                fs::create_dir(&d).unwrap();
                chown(&d, uid);
                fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
            }
            fs::create_dir(m.host("root")).unwrap();
            let mnt = m.mnt.display().to_string();
            let creator = |uid: u32, other: u32, k: u32| {
                let mut c = as_user(uid, PYTHON);
                c.arg("-c").arg(format!(
                    "import os\n\
                     crossed = 0\n\
                     for i in range({PER_PROCESS}):\n\
                     \x20   open('{mnt}/u{uid}/p{k}_%d' % i, 'w').close()\n\
                     \x20   if i % 10 == 0:\n\
                     \x20       try:\n\
                     \x20           open('{mnt}/u{other}/x{uid}_{k}_%d' % i, 'w').close(); crossed += 1\n\
                     \x20       except OSError: pass\n\
                     print(crossed)"
                ));
                c.stdout(Stdio::piped()).spawn().unwrap()
            };
            let started = Instant::now();
            let mut children = Vec::new();
            for k in 0..4 {
                children.push(creator(users[0], users[1], k));
                children.push(creator(users[1], users[0], k));
            }
            for i in 0..PER_PROCESS {
                fs::write(m.at(&format!("root/r{i}")), "").unwrap();
            }
            for c in children {
                let out = c.wait_with_output().unwrap();
                assert!(out.status.success());
                assert_eq!(
                    String::from_utf8_lossy(&out.stdout).trim(),
                    "0",
                    "a user crossed"
                );
            }
            for (dir, uid, count) in [
                ("u65534", 65534, 4 * PER_PROCESS),
                ("u1000", 1000, 4 * PER_PROCESS),
                ("root", 0, PER_PROCESS),
            ] {
                let mut n = 0;
                for e in fs::read_dir(m.host(dir)).unwrap() {
                    let md = e.unwrap().metadata().unwrap();
                    assert_eq!((md.uid(), md.gid()), (uid, uid), "{dir}: wrong owner");
                    n += 1;
                }
                assert_eq!(n, count, "{dir}");
            }
            eprintln!(
                "{}, {threads} serving threads: {} creates in {:?}, every owner exact",
                T::NAME,
                8 * PER_PROCESS + PER_PROCESS,
                started.elapsed()
            );
            for d in ["u65534", "u1000", "root"] {
                fs::remove_dir_all(m.host(d)).unwrap();
            }
        });
    }
}

/// N3 of the second audit: a user filled the blocks ext4 keeps for root,
/// through writes (the server kept `CAP_SYS_RESOURCE` under the caller's
/// filesystem uid) and through a mapped file (the kernel writes its pages
/// back as uid 0). Both now stop where the user's own writes on the host
/// would: `ENOSPC` at the blocks available to users. With kernel
/// passthrough too, where the kernel writes with the credentials the
/// backing was registered with (root's, before: the writes filled the
/// blocks kept for root).
fn users_cannot_fill_the_blocks_kept_for_root<T: InodeTable>() {
    for passthrough in [false, true] {
        with_mount_passthrough::<T>(
            4,
            passthrough,
            users_cannot_fill_the_blocks_kept_for_root_of,
        );
    }
}

fn users_cannot_fill_the_blocks_kept_for_root_of<T: InodeTable>(m: &Mount<T>) {
    let image = m.host("").parent().unwrap().join("reserved.img");
    fs::create_dir(m.host("vol")).unwrap();
    let volume = Volume::ext4_with_half_reserved(&image, &m.host("vol"));
    let available = volume.available_to_users();
    let script = format!(
        "import mmap, os\n\
         def fill(path):\n\
         \x20   n = 0\n\
         \x20   with open(path, 'wb') as f:\n\
         \x20       try:\n\
         \x20           while n < 64 << 20:\n\
         \x20               n += f.write(b'w' * (1 << 20)); f.flush()\n\
         \x20       except OSError as e: return n, e.errno\n\
         \x20   return n, 0\n\
         print('write', *fill('{dir}/w'))\n\
         fd = os.open('{dir}/m', os.O_RDWR | os.O_CREAT, 0o644)\n\
         os.ftruncate(fd, 16 << 20)\n\
         child = os.fork()\n\
         if child == 0:\n\
         \x20   mm = mmap.mmap(fd, 16 << 20)\n\
         \x20   mm[:] = b'm' * (16 << 20)\n\
         \x20   try: mm.flush(); os._exit(0)\n\
         \x20   except OSError as e: os._exit(e.errno)\n\
         status = os.waitpid(child, 0)[1]\n\
         if os.WIFSIGNALED(status): print('mapped signal', os.WTERMSIG(status))\n\
         else: print('mapped', os.WEXITSTATUS(status))\n",
        dir = m.at("vol").display()
    );
    let said = python_as_nobody(&script);
    let used: u64 = ["w", "m"]
        .iter()
        .map(|f| fs::metadata(m.host(&format!("vol/{f}"))).unwrap().blocks() * 512)
        .sum();
    assert!(
        used <= available + (1 << 20),
        "{said}: {used} bytes allocated, {available} available to users"
    );
    let ended = said.lines().next().unwrap_or_default().rsplit(' ').next();
    assert_eq!(ended, Some("28"), "the writes end in ENOSPC: {said}");
    eprintln!(
        "{} (passthrough {}): {said}{used} bytes allocated, {available} available to users",
        T::NAME,
        m.fs.kernel_passthrough()
    );
    fs::remove_file(m.host("vol/w")).unwrap();
    fs::remove_file(m.host("vol/m")).unwrap();
    // The server's descriptors on the volume go with the inodes.
    assert!(m.forget_all());
    volume.unmount();
    fs::remove_file(image).unwrap();
}

/// N2 of the second audit: the table was keyed by (device, inode number)
/// alone, so once a deleted file's descriptor left the cache and ext4 gave
/// its number to a new file, the new file was served the old entry: its
/// reads failed with `ESTALE` (the old file handle). A host inode's key
/// now has its birth time, and the new file is an inode of its own while
/// the kernel still holds the old one.
fn a_reused_inode_number_is_a_new_inode<T: InodeTable>() {
    a_reused_inode_number_is_a_new_inode_on::<T>(Volume::ext4_with_half_reserved);
}

/// Point 3 of the third audit: the same on an ext4 made with 128-byte
/// inodes, which keep no birth time (as ext2 and ext3): 200 of 200 new
/// files gave `ESTALE`. Where `statx` gives no birth, the key has a hash
/// of the file handle, which carries the inode's generation.
fn a_reused_inode_number_without_birth_times_is_a_new_inode<T: InodeTable>() {
    a_reused_inode_number_is_a_new_inode_on::<T>(Volume::ext4_without_birth_times);
}

fn a_reused_inode_number_is_a_new_inode_on<T: InodeTable>(ext4: fn(&Path, &Path) -> Volume) {
    let volume = std::cell::RefCell::new(None);
    with_mount_made::<T>(
        4,
        |source| {
            // The share itself on ext4: an inode of a mount inside the
            // share gets a descriptor to reopen by only from a directory
            // its lookup may read. Beside the share, in the mount's own
            // directory (removed with it, while this test holds the lock
            // on counting descriptors).
            let image = source.parent().unwrap().join("share.img");
            *volume.borrow_mut() = Some(ext4(&image, source));
            with_descriptor_budget(source, 2)
        },
        |m| {
            fs::write(m.host("old"), b"old").unwrap();
            assert_eq!(
                fs::read(m.at("old")).unwrap(),
                b"old",
                "the kernel holds it"
            );
            // The read's RELEASE comes in the background: until the
            // server has it, its open file (and with passthrough the
            // kernel's backing) keeps the old inode, and its number, in
            // use.
            wait_for_releases(m);
            // Other inodes push the old one's descriptor out of the cache.
            for i in 0..4 {
                fs::write(m.host(&format!("e{i}")), b"").unwrap();
                fs::metadata(m.at(&format!("e{i}"))).unwrap();
            }
            let number = fs::metadata(m.host("old")).unwrap().ino();
            fs::remove_file(m.host("old")).unwrap();
            let reused = (0..64)
                .find(|i| {
                    let p = m.host(&format!("new{i}"));
                    fs::write(&p, format!("new{i}")).unwrap();
                    fs::metadata(&p).unwrap().ino() == number
                })
                .expect("ext4 gives the number again");
            let new = m.at(&format!("new{reused}"));
            assert_eq!(
                fs::read(&new).map_err(|e| e.raw_os_error()),
                Ok(format!("new{reused}").into_bytes()),
                "the new file through the mount"
            );
            eprintln!(
                "{}: inode number {number} given again to new{reused}, served",
                T::NAME
            );
            for e in fs::read_dir(m.host("")).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    fs::remove_file(p).unwrap();
                }
            }
            // Detached now (its last user, the server, lets go at the
            // unmount), while this test holds the lock on counting
            // descriptors.
            volume.borrow_mut().take().unwrap().detach();
        },
    );
}

/// N4: one user's requests that the host is slow to answer (held in the
/// server here) take at most that user's share of the serving threads,
/// never all of them: another user's request is served while they are
/// held, and the first user's requests past its share wait their turn,
/// then are served once the held ones end. Before: six held lookups of
/// user 1000 took all four threads, and root's read waited for them.
fn one_users_stalled_requests_leave_the_others_served<T: InodeTable>() {
    with_mount::<T>(|m| {
        const STALLED: usize = 6;
        for i in 0..STALLED {
            fs::write(m.host(&format!("a{i}")), "slow").unwrap();
        }
        fs::write(m.host("b"), "served").unwrap();
        let _release = hold_lookups_of(&m.fs, 1000);
        let stats: Vec<_> = (0..STALLED)
            .map(|i| {
                as_user(1000, "stat")
                    .arg(m.at(&format!("a{i}")))
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let limit = Duration::from_secs(30);
        // Four serving threads, read on five.
        assert!(m.fs.wait_until_held(4, limit), "the lookups never came");
        let waited = Instant::now();
        while m.fs.waited_requests() < (STALLED - 4) as u64 && waited.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(10));
        }
        // `waited_requests` counts every request that ever waited: one of
        // user 1000's that waited a moment while its share was busy with
        // a request served since (the kernel's read of the mount root's
        // ACL on each walk) counts too, so the count may pass two.
        assert_eq!(
            m.fs.held_lookups(),
            4,
            "user 1000 holds its share (every serving thread), no more"
        );
        assert!(
            m.fs.waited_requests() >= (STALLED - 4) as u64,
            "the rest of user 1000's requests wait: {} did",
            m.fs.waited_requests()
        );
        // Another user's request, on the thread left to read.
        let (tx, rx) = std::sync::mpsc::channel();
        let path = m.at("b");
        let other = std::thread::spawn(move || tx.send(fs::read(path)).unwrap());
        let read = rx.recv_timeout(limit);
        m.fs.release_held();
        assert_eq!(
            read.expect("root's read served while user 1000's lookups are held")
                .unwrap(),
            b"served"
        );
        other.join().unwrap();
        for mut stat in stats {
            assert!(
                stat.wait().unwrap().success(),
                "a held lookup's stat failed"
            );
        }
        assert_eq!(m.fs.held_lookups(), 0);
    });
}

on_both_tables!(
    one_users_stalled_requests_leave_the_others_served,
    dotdot_never_leaves_the_share,
    escaping_symlinks_reach_nothing_on_the_host,
    a_host_side_swap_never_lets_a_request_out,
    reopening_through_proc_gains_nothing,
    no_devices_setid_roots_or_links_to_roots_files,
    credentials_under_stress,
    users_cannot_fill_the_blocks_kept_for_root,
    a_reused_inode_number_is_a_new_inode,
    a_reused_inode_number_without_birth_times_is_a_new_inode,
);
