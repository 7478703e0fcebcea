// The README's recipe for a crate on lockref-table, step 4: models behind
// `cfg(loom)`, run (step 5) from this crate's directory with the third cfg:
// RUSTFLAGS="--cfg loom --cfg lockref_loom --cfg crossbeam_loom" \
//     LOOM_MAX_PREEMPTIONS=1 CARGO_TARGET_DIR=target/loom \
//     cargo test --release --test loom_table
#![cfg(loom)]

use std::sync::Arc;

use lockref_loom_downstream::InodeStore;

/// The kernel's last FORGET of an inode races a LOOKUP of the same host
/// inode: the lookup gets the cached inode (the same node id) or, if the
/// store dropped it, a new one; every reference is accounted for.
#[test]
fn the_last_forget_races_a_lookup() {
    loom::model(|| {
        // One bucket, a bound of one: the smallest table the race needs.
        let store = Arc::new(InodeStore::new(1, 1));
        let id = store.lookup(42);
        let lookup = {
            let store = store.clone();
            loom::thread::spawn(move || store.lookup(42))
        };
        let forget = {
            let store = store.clone();
            loom::thread::spawn(move || store.forget(id, 1))
        };
        let found = lookup.join().unwrap();
        forget.join().unwrap().unwrap();
        assert_eq!(store.inode(found), Ok(42));
        assert_eq!(store.kernel_refs(found), Some(1), "the lookup's reference");
        store.forget(found, 1).unwrap();
        assert_eq!((store.len(), store.cached()), (1, 1), "cached at zero");
    });
}

/// A FORGET of more than the kernel was given races a LOOKUP: it is
/// refused or counts, never both, and the count stays balanced.
#[test]
fn a_forget_of_more_than_was_given_races_a_lookup() {
    loom::model(|| {
        let store = Arc::new(InodeStore::new(1, 1));
        let id = store.lookup(7);
        let lookup = {
            let store = store.clone();
            loom::thread::spawn(move || store.lookup(7))
        };
        let forget = {
            let store = store.clone();
            loom::thread::spawn(move || store.forget(id, 2))
        };
        let again = lookup.join().unwrap();
        let forgot = forget.join().unwrap();
        assert_eq!(again, id, "the kernel held it: the same inode");
        // Counted only after the lookup's reference (two held), so both
        // went, and the inode is cached; refused before it (one held).
        let expected = if forgot.is_ok() { 0 } else { 2 };
        assert_eq!(store.kernel_refs(id), Some(expected));
    });
}
