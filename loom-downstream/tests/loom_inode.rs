// The README's recipe, step 4: models behind `cfg(loom)`, run with
// RUSTFLAGS="--cfg loom --cfg lockref_loom" CARGO_TARGET_DIR=target/loom \
//     cargo test --release --test loom_inode
#![cfg(loom)]

use lockref_loom_downstream::Cache;

/// The last put of an inode races a lookup of the same number: the lookup
/// gets the live inode or a new one, never the dying one, and every inode
/// is released exactly once.
#[test]
fn last_put_races_a_lookup() {
    loom::model(|| {
        let table = Cache::new();
        let inode = table.lookup_or_insert(42);
        let lookup = {
            let table = table.clone();
            loom::thread::spawn(move || {
                let found = table.lookup_or_insert(42);
                assert_eq!(found.ino, 42);
            })
        };
        let put = loom::thread::spawn(move || drop(inode));
        lookup.join().unwrap();
        put.join().unwrap();
        assert!(table.is_empty());
        assert!((1..=2).contains(&table.released()));
    });
}

/// Two lookups of an absent number: one inserts, the other finds it (or,
/// if the first one's last put came between, inserts again); each inode
/// is released once.
#[test]
fn two_lookups_insert_one_inode() {
    loom::model(|| {
        let table = Cache::new();
        let lookups: Vec<_> = (0..2)
            .map(|_| {
                let table = table.clone();
                loom::thread::spawn(move || drop(table.lookup_or_insert(7)))
            })
            .collect();
        for l in lookups {
            l.join().unwrap();
        }
        assert!(table.is_empty());
        assert!((1..=2).contains(&table.released()));
    });
}
