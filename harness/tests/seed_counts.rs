//! Exact accounting behind each seed's before and after, on the harness's
//! own testcases: the lockref operations, deferred jobs and locks one
//! iteration of each variant performs.

use lockref_dcache::testing::{deferred_on_this_thread, task_work_atomics_on_this_thread};
use lockref_harness::testcases::{State, Testcase};

/// The lockref operations on `path`'s dentry during `n` iterations.
fn ops_on(state: &State, tc: Testcase, path: &str, n: usize) -> usize {
    let cache = state.dcache().unwrap();
    let d = cache.lookup_path(path).unwrap().dentry().clone();
    let w = tc.worker(state, 0).unwrap();
    w.run_once().unwrap(); // warm: caches any negative dentries
    d.reset_lockref_stats();
    for _ in 0..n {
        w.run_once().unwrap();
    }
    d.lockref_stats().operations
}

#[test]
fn open3_consume_saves_exactly_two_operations_per_open() {
    let after = ops_on(
        &Testcase::Open3.setup(1, 1),
        Testcase::Open3,
        "/tmp/shared/file",
        10,
    );
    let before = ops_on(
        &Testcase::Open3.setup(0, 1),
        Testcase::Open3,
        "/tmp/shared/file",
        10,
    );
    assert_eq!((before, after), (40, 20));
}

/// How much this thread's `counter` grows over 10 failed opens of
/// `variant` of `openneg`.
fn openneg_counts(variant: usize, counter: fn() -> u64) -> u64 {
    let state = Testcase::OpenNeg.setup(variant, 1);
    let w = Testcase::OpenNeg.worker(&state, 0).unwrap();
    let start = counter();
    for _ in 0..10 {
        w.run_once().unwrap();
    }
    counter() - start
}

#[test]
fn openneg_token_defers_nothing() {
    let before = openneg_counts(0, deferred_on_this_thread);
    let after = openneg_counts(1, deferred_on_this_thread);
    assert_eq!((before, after), (10, 0));
}

/// What the deferred release costs, as the kernel's `task_work` does:
/// five atomic read-modify-writes per failed open before, none after (the
/// token's return only reads the flag).
#[test]
fn openneg_token_saves_five_task_work_atomics_per_open() {
    let before = openneg_counts(0, task_work_atomics_on_this_thread);
    let after = openneg_counts(1, task_work_atomics_on_this_thread);
    assert_eq!((before, after), (50, 0));
}

#[test]
fn pseudo_self_parent_touches_no_root() {
    for (v, per_iter) in [(0, 2), (1, 0)] {
        let state = Testcase::Pseudo.setup(v, 1);
        let root = state.dcache().unwrap().pseudo_root();
        root.reset_lockref_stats();
        let w = Testcase::Pseudo.worker(&state, 0).unwrap();
        for _ in 0..10 {
            w.run_once().unwrap();
        }
        assert_eq!(
            root.lockref_stats().operations,
            10 * per_iter,
            "variant {v}"
        );
    }
}

#[test]
fn creat_lookup_first_takes_no_directory_lock() {
    for (v, per_iter) in [(0, 1), (1, 0)] {
        let state = Testcase::Creat.setup(v, 1);
        let dir = state.dcache().unwrap().lookup_path("/tmp/shared").unwrap();
        let before = dir.dentry().inode_write_locks();
        let w = Testcase::Creat.worker(&state, 0).unwrap();
        for _ in 0..10 {
            w.run_once().unwrap();
        }
        assert_eq!(
            dir.dentry().inode_write_locks() - before,
            10 * per_iter,
            "variant {v}"
        );
    }
}

#[test]
fn trylookup_without_revalidation_takes_no_dentry_lock() {
    for (v, per_iter) in [(0, 1), (1, 0)] {
        let state = Testcase::TryLookup.setup(v, 1);
        let cache = state.dcache().unwrap();
        let dir = cache.lookup_path("/tmp/shared").unwrap();
        let file = cache
            .try_lookup_noperm(dir.dentry(), "file")
            .unwrap()
            .unwrap();
        file.reset_lockref_stats();
        let w = Testcase::TryLookup.worker(&state, 0).unwrap();
        for _ in 0..10 {
            w.run_once().unwrap();
        }
        assert_eq!(
            file.lockref_stats().lock_acquisitions,
            10 * per_iter,
            "variant {v}"
        );
    }
}
