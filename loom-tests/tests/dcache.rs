//! Loom models of the dcache's races, one per test. Run with
//! `RUSTFLAGS="--cfg loom --cfg lockref_loom --cfg crossbeam_loom"`
//! (`.ci/run` does): the epoch collector is modelled too.
#![cfg(all(loom, crossbeam_loom))]

use lockref_dcache::{Config, Dcache, Errno, OpenFlags, Variants};
use lockref_loom_tests::{model, model_with_branches};
use loom::thread;

/// A small cache for one execution. Leaked: loom threads need `'static`
/// and handles borrow the cache; each execution leaks one small cache.
fn cache(variants: Variants) -> &'static Dcache {
    Box::leak(Box::new(Dcache::new(Config {
        buckets: 2,
        revalidate: false,
        variants,
        ..Config::default()
    })))
}

fn touch(c: &Dcache, path: &str) {
    c.close(c.open(path, OpenFlags::WRONLY.creat()).unwrap());
}

/// A lookup (an open of an existing file) races the kill of the same
/// cached dentry (an unlink drops its last reference). The open gets a
/// live reference to the file or misses; never a dead or freed dentry, and
/// every count ends balanced.
#[test]
fn lookup_races_kill_of_same_dentry() {
    model(|| {
        let c = cache(Variants::AFTER);
        touch(c, "/f");
        let opener = thread::spawn(move || match c.open("/f", OpenFlags::RDONLY) {
            Ok(file) => {
                assert_eq!(file.path().dentry().name(), b"f");
                assert!(file.path().dentry().count() >= 1);
                c.close(file);
                true
            }
            Err(e) => {
                assert_eq!(e, Errno::NoEnt);
                false
            }
        });
        c.unlink("/f").unwrap();
        opener.join().unwrap();
        c.check_balanced().unwrap();
        // The roots and, at most, a negative dentry for "f".
        assert!(c.live_dentries() <= 3);
    });
}

/// A dput cascade (an unlinked child's last reference drops the parent's
/// count to its cached zero) races a child allocation on the same parent
/// (d_alloc takes the parent's lock and a reference). The parent's count
/// stays exact and it is never killed while referenced.
#[test]
fn dput_cascade_races_child_allocation() {
    model(|| {
        let c = cache(Variants::AFTER);
        c.mkdir("/d").unwrap();
        touch(c, "/d/x");
        let creator = thread::spawn(move || touch(c, "/d/y"));
        c.unlink("/d/x").unwrap();
        creator.join().unwrap();
        let balance = c.check_balanced().unwrap();
        assert_eq!(balance.hashed, 2, "/d and /d/y");
        assert_eq!(
            c.stat("/d/y").unwrap().kind,
            lockref_dcache::InodeKind::File
        );
    });
}

/// A failed open's token released on one thread while another opens and
/// closes a file of the same cache: each file is freed once; the token's
/// release defers nothing. (A stray reference to an unopened file, which
/// this model raced before, cannot be taken any more: `EmptyFile` has no
/// `get_file`.)
#[test]
fn token_release_races_an_open_and_close() {
    model(|| {
        let c = cache(Variants::AFTER);
        let token = c.alloc_file(OpenFlags::RDONLY);
        let opener = thread::spawn(move || c.close(c.open("/", OpenFlags::RDONLY).unwrap()));
        token.release();
        opener.join().unwrap();
        assert_eq!(c.live_files(), 0);
    });
}

/// Alone, the token's release frees at once, with no deferred work.
#[test]
fn token_release_racing_nothing() {
    model(|| {
        let c = cache(Variants::AFTER);
        let before = lockref_dcache::testing::deferred_on_this_thread();
        c.alloc_file(OpenFlags::RDONLY).release();
        assert_eq!(c.live_files(), 0);
        assert_eq!(lockref_dcache::testing::deferred_on_this_thread(), before);
    });
}

/// An open that consumes the walk's reference races the unlink of the
/// file: the file keeps the dentry alive (unhashed) until closed, then the
/// dentry is freed; every count ends balanced.
#[test]
fn open_consume_races_unlink() {
    model(|| {
        let c = cache(Variants::AFTER);
        touch(c, "/f");
        let unlinker = thread::spawn(move || c.unlink("/f").unwrap());
        let opened = c.open("/f", OpenFlags::RDONLY);
        unlinker.join().unwrap();
        if let Ok(file) = opened {
            assert!(!file.path().dentry().is_hashed());
            c.close(file);
        }
        c.check_balanced().unwrap();
    });
}

/// The shrinker races a lookup of the dentry it is reclaiming
/// (`try_lookup_noperm`: the RCU lookup and `get_not_dead`): the lookup
/// gets a live reference or misses; never a dead or freed dentry. Every
/// count ends balanced, the dentry either freed or back on the LRU.
#[test]
fn shrink_races_lookup_of_same_dentry() {
    model(|| {
        let c = cache(Variants::AFTER);
        touch(c, "/f"); // unused, on the LRU
        let root = c.root();
        let looker = thread::spawn(move || {
            if let Some(d) = c.try_lookup_noperm(root.dentry(), "f").unwrap() {
                assert_eq!(d.kind(), Some(lockref_dcache::InodeKind::File));
                assert!(d.count() >= 1);
            }
        });
        let freed = c.shrink(usize::MAX);
        looker.join().unwrap();
        let balance = c.check_balanced().unwrap();
        assert_eq!(balance.hashed + freed, 1);
        assert_eq!(c.live_dentries(), 2 + balance.hashed);
    });
}

/// The shrinker meets a dentry in use (it drops it from the LRU lazily)
/// while its holder puts the last reference without the lock: the put
/// must see the dentry off the LRU and list it again, or the shrinker must
/// see the put and reclaim it. Never an unused dentry off the LRU, which
/// no shrinker would ever free.
#[test]
fn shrink_races_lockless_last_put() {
    model(|| {
        let c = cache(Variants::AFTER);
        touch(c, "/f");
        let held = c.lookup_path("/f").unwrap(); // in use, still listed
        let putter = thread::spawn(move || drop(held));
        let freed = c.shrink(usize::MAX);
        putter.join().unwrap();
        c.check_balanced().unwrap();
        assert_eq!(c.live_dentries(), 2 + 1 - freed);
        assert_eq!(c.unused_dentries(), 1 - freed);
    });
}

/// The shrinker meets a dentry used since it was listed (marked
/// referenced) while a lookup revives it and puts it back without the
/// lock: on the `fetch_add` word (`--cfg lockref_dcache_add_word`) the
/// revive lands while the shrinker holds the dentry's lock, and the put's
/// read of the flags and the shrinker's read of the count race (each
/// writes one and reads the other). Never an unused dentry off the LRU.
#[test]
fn shrink_races_revive_and_lockless_put_of_a_referenced_dentry() {
    model(|| {
        let c = cache(Variants::AFTER);
        touch(c, "/f"); // unused, on the LRU
        drop(c.lookup_path("/f").unwrap()); // used again: referenced
        let root = c.root();
        let looker = thread::spawn(move || {
            if let Some(d) = c.try_lookup_noperm(root.dentry(), "f").unwrap() {
                assert!(d.count() >= 1);
            }
        });
        let shrinker = thread::spawn(move || c.shrink(usize::MAX));
        looker.join().unwrap();
        let freed = shrinker.join().unwrap();
        let balance = c.check_balanced().unwrap();
        assert_eq!(balance.hashed + freed, 1);
    });
}

/// A rename of a directory races a walk through it: the walk resolves the
/// old path (before the rename) or misses it, never a freed or dead
/// dentry; afterwards the new path resolves, the old one does not, and
/// every count ends balanced.
#[test]
fn rename_races_a_walk_through_the_directory() {
    // mkdir, create, rename and two walks: more scheduling decisions than
    // loom's default allows per execution.
    model_with_branches(100_000, || {
        let c = cache(Variants::AFTER);
        c.mkdir("/a").unwrap();
        touch(c, "/a/f");
        let renamer = thread::spawn(move || c.rename("/a", "/b").unwrap());
        match c.stat("/a/f") {
            Ok(_) => {}
            Err(e) => assert_eq!(e, Errno::NoEnt),
        }
        renamer.join().unwrap();
        assert!(c.stat("/b/f").is_ok());
        assert_eq!(c.stat("/a/f").err(), Some(Errno::NoEnt));
        c.check_balanced().unwrap();
    });
}
