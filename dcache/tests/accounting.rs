//! Exact per-path accounting: the lockref operations, deferred jobs and
//! directory locks each path performs, before and after each seed. On the
//! compare-and-swap word only: the `fetch_add` word
//! (`--cfg lockref_dcache_add_word`) has no operation counters.
#![cfg(not(lockref_dcache_add_word))]

use lockref_dcache::testing::*;
use lockref_dcache::*;

mod common;
use common::*;

/// Lockref operations on the dentry of `path` while `f` runs.
fn ops_on(c: &Dcache, path: &str, f: impl FnOnce()) -> usize {
    let d = c.lookup_path(path).unwrap();
    d.dentry().reset_lockref_stats();
    f();
    d.dentry().lockref_stats().operations
}

#[test]
fn open_consume_saves_two_operations_on_the_dentry() {
    let mut c = cache(Variants::AFTER);
    touch(&c, "/f");
    let open_close = |c: &Dcache| c.close(c.open("/f", OpenFlags::RDONLY).unwrap());
    let after = ops_on(&c, "/f", || open_close(&c));
    c.set_variants(Variants::BEFORE);
    let before = ops_on(&c, "/f", || open_close(&c));
    // After: get_not_dead (legitimize) + put (close). Before: also the
    // file's get (vfs_open) and the walk's put (terminate_walk).
    assert_eq!((after, before), (2, 4));
    balanced(&c);
}

#[test]
fn failed_open_through_the_token_defers_nothing() {
    let mut c = cache(Variants::AFTER);
    let before = deferred_on_this_thread();
    assert_eq!(
        c.open("/missing", OpenFlags::RDONLY).err(),
        Some(Errno::NoEnt)
    );
    assert_eq!(deferred_on_this_thread(), before);
    c.set_variants(Variants::BEFORE);
    assert_eq!(
        c.open("/missing", OpenFlags::RDONLY).err(),
        Some(Errno::NoEnt)
    );
    assert_eq!(
        deferred_on_this_thread(),
        before + 1,
        "fput's deferred release"
    );
    assert_eq!(c.live_files(), 0);
}

#[test]
fn pseudo_dentry_alloc_and_free_touch_no_root() {
    let mut c = cache(Variants::AFTER);
    let root = c.pseudo_root();
    root.reset_lockref_stats();
    drop(c.alloc_pseudo());
    assert_eq!(root.lockref_stats().operations, 0);
    drop(root);
    c.set_variants(Variants::BEFORE);
    let root = c.pseudo_root();
    root.reset_lockref_stats();
    drop(c.alloc_pseudo());
    // d_alloc's lock on the parent, and the cascade's put.
    assert_eq!(root.lockref_stats().operations, 2);
}

#[test]
fn creat_of_existing_file_with_lookup_first_takes_no_directory_lock() {
    let mut c = cache(Variants::AFTER);
    c.mkdir("/d").unwrap();
    touch(&c, "/d/f");
    let locks = |c: &Dcache| c.lookup_path("/d").unwrap().dentry().inode_write_locks();
    let before = locks(&c);
    c.close(c.open("/d/f", OpenFlags::WRONLY.creat()).unwrap());
    assert_eq!(locks(&c), before);
    c.set_variants(Variants::BEFORE);
    c.close(c.open("/d/f", OpenFlags::WRONLY.creat()).unwrap());
    assert_eq!(locks(&c), before + 1);
    balanced(&c);
}

#[test]
fn try_lookup_skips_revalidation() {
    let mut c = Dcache::new(Config {
        buckets: 16,
        revalidate: true,
        variants: Variants::AFTER,
        ..Config::default()
    });
    touch(&c, "/f");
    let ops = |c: &Dcache| {
        let root = c.root();
        // A put to zero locks until the dentry is listed and marked
        // referenced on the LRU; lockless from then on.
        drop(c.try_lookup_noperm(root.dentry(), "f").unwrap());
        let d = c.try_lookup_noperm(root.dentry(), "f").unwrap().unwrap();
        d.reset_lockref_stats();
        drop(d);
        let d = c.try_lookup_noperm(root.dentry(), "f").unwrap().unwrap();
        d.lockref_stats().lock_acquisitions
    };
    // The count operations' own locks: none with the lockless paths; the
    // put and the lookup's get in the lock-only build.
    let count_locks = if lockref::LOCKLESS { 0 } else { 2 };
    assert_eq!(ops(&c), count_locks, "no revalidation: no dentry lock");
    c.set_variants(Variants::BEFORE);
    assert_eq!(
        ops(&c),
        count_locks + 1,
        "revalidation takes the dentry lock"
    );
}

/// `fast_dput`: a put to zero of a cached dentry takes the dentry's lock
/// the first time (to put it on the LRU) and the second (to mark it
/// referenced), and never after, until the shrinker has cleared the mark.
#[test]
fn dput_to_zero_locks_only_to_list_or_mark_referenced() {
    if !lockref::LOCKLESS {
        return; // every last put locks in the lock-only build
    }
    let c = cache(Variants::AFTER);
    c.mkdir("/d").unwrap(); // the first put to zero: listed
    let root = c.root();
    // The locks of one put to zero (the lookup after it gets locklessly;
    // the last drop is a put to zero of its own, not counted).
    let locks_of_a_put = |c: &Dcache| {
        let d = c.try_lookup_noperm(root.dentry(), "d").unwrap().unwrap();
        d.reset_lockref_stats();
        drop(d);
        let d = c.try_lookup_noperm(root.dentry(), "d").unwrap().unwrap();
        d.lockref_stats().lock_acquisitions
    };
    assert_eq!(c.unused_dentries(), 1);
    assert_eq!(
        locks_of_a_put(&c),
        1,
        "the second put to zero marks it referenced"
    );
    assert_eq!(locks_of_a_put(&c), 0, "listed and referenced: lockless");
    assert_eq!(locks_of_a_put(&c), 0);
    drop(root);
    balanced(&c);
}

#[test]
fn a_cached_miss_writes_no_count() {
    let c = cache(Variants::AFTER);
    assert_eq!(c.stat("/missing"), Err(Errno::NoEnt)); // caches the miss
    let root = c.root();
    let neg = c.lookup_noperm_unlocked(root.dentry(), "missing").unwrap();
    assert_eq!(neg.kind(), None);
    neg.reset_lockref_stats();
    assert_eq!(c.stat("/missing"), Err(Errno::NoEnt));
    assert_eq!(
        c.open("/missing", OpenFlags::RDONLY).err(),
        Some(Errno::NoEnt)
    );
    assert_eq!(
        neg.lockref_stats().operations,
        0,
        "RCU walk: ENOENT without a reference"
    );
}

#[test]
fn lookup_writes_only_the_found_dentrys_count() {
    let c = cache(Variants::AFTER);
    c.mkdir("/a").unwrap();
    touch(&c, "/a/f");
    let a = c.lookup_path("/a").unwrap();
    let root = c.root();
    a.dentry().reset_lockref_stats();
    root.dentry().reset_lockref_stats();
    let st = c.stat("/a/f");
    assert!(st.is_ok());
    assert_eq!(
        a.dentry().lockref_stats().operations,
        0,
        "RCU walk: no count on /a"
    );
    assert_eq!(root.dentry().lockref_stats().operations, 0, "nor on /");
}

/// The kernel's deferred release costs five atomic read-modify-writes in
/// `task_work` (push, flag set, flag clear, list take, `pi_lock`); the
/// token's failed open costs none there, and its return only reads the
/// flag.
#[test]
fn failed_open_through_the_token_saves_the_deferred_releases_atomics() {
    let mut c = cache(Variants::AFTER);
    let failed_open = |c: &Dcache| {
        let start = task_work_atomics_on_this_thread();
        assert_eq!(
            c.open("/missing", OpenFlags::RDONLY).err(),
            Some(Errno::NoEnt)
        );
        task_work_atomics_on_this_thread() - start
    };
    let after = failed_open(&c);
    c.set_variants(Variants::BEFORE);
    let before = failed_open(&c);
    assert_eq!((before, after), (5, 0));
    // An operation that defers nothing pays nothing on its return.
    let start = task_work_atomics_on_this_thread();
    c.stat("/").unwrap();
    assert_eq!(task_work_atomics_on_this_thread(), start);
    assert_eq!(c.live_files(), 0);
}
