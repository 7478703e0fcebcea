// The README's recipe for a crate on lockref-table, step 4: models behind
// `cfg(loom)`, run (step 5) from this crate's directory with the third cfg
// and the branch bound:
// RUSTFLAGS="--cfg loom --cfg lockref_loom --cfg crossbeam_loom" \
//     LOOM_MAX_PREEMPTIONS=1 LOOM_MAX_BRANCHES=10000 CARGO_TARGET_DIR=target/loom \
//     cargo test --release --test loom_dentry
#![cfg(loom)]

use std::sync::Arc;

use lockref_loom_downstream::dentry_tree::TreeError;
use lockref_loom_downstream::DentryTree;

/// An unlink races a lookup of the same name that misses and reads the
/// store: once the unlink has returned, the name is negative (the
/// lookup's entry, made from the store before the unlink, was taken out
/// of the lookups, or the lookup read the store after it).
#[test]
fn an_unlink_races_a_lookup() {
    loom::model(|| {
        // One bucket, a bound of two: the smallest table the race needs.
        let tree = Arc::new(DentryTree::new(1, 2));
        tree.create(&tree.root(), "f").unwrap();
        let lookup = {
            let tree = tree.clone();
            loom::thread::spawn(move || tree.lookup(&tree.root(), "f").map(|d| d.ino.is_some()))
        };
        let unlink = {
            let tree = tree.clone();
            loom::thread::spawn(move || tree.unlink(&tree.root(), "f"))
        };
        assert!(lookup.join().unwrap().is_ok());
        unlink.join().unwrap().unwrap();
        let after = tree.lookup(&tree.root(), "f").unwrap();
        assert_eq!(after.ino, None, "unlinked: negative");
    });
}

/// A create races a lookup of its name that misses and caches what the
/// store says: once the create has returned, the name is positive (a
/// negative entry made from the store before the create was taken out of
/// the lookups, or the lookup read the store after it).
#[test]
fn a_create_races_a_lookup_of_its_name() {
    loom::model(|| {
        let tree = Arc::new(DentryTree::new(1, 2));
        let lookup = {
            let tree = tree.clone();
            loom::thread::spawn(move || tree.lookup(&tree.root(), "g").map(|d| d.ino))
        };
        let create = {
            let tree = tree.clone();
            loom::thread::spawn(move || tree.create(&tree.root(), "g"))
        };
        assert!(lookup.join().unwrap().is_ok());
        create.join().unwrap().unwrap();
        let after = tree.lookup(&tree.root(), "g").unwrap();
        assert!(after.ino.is_some(), "created: positive");
    });
}

/// A lookup below a directory races the directory's rename: it is
/// answered (below the old entry, before the rename took it out) or
/// refused as stale; after the rename every lookup through the old entry
/// is stale, and the new name finds the directory.
#[test]
fn a_lookup_below_a_renamed_directory_is_stale() {
    loom::model(|| {
        let tree = Arc::new(DentryTree::new(1, 2));
        tree.create(&tree.root(), "d").unwrap();
        let dir = tree.lookup(&tree.root(), "d").unwrap();
        let lookup = {
            let (tree, dir) = (tree.clone(), dir.clone());
            loom::thread::spawn(move || tree.lookup(&dir, "x").map(|d| d.ino))
        };
        let rename = {
            let tree = tree.clone();
            loom::thread::spawn(move || tree.rename(&tree.root(), "d", "e"))
        };
        let below = lookup.join().unwrap();
        assert!(
            matches!(below, Ok(None) | Err(TreeError::Stale)),
            "{below:?}"
        );
        rename.join().unwrap().unwrap();
        assert_eq!(tree.lookup(&dir, "x").err(), Some(TreeError::Stale));
        assert_eq!(tree.lookup(&tree.root(), "e").unwrap().ino, dir.ino);
    });
}
