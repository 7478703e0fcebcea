//! A chain of entries 1,000,000 deep, each value holding its parent's
//! handle (the documented shape of a tree on the table), let go from its
//! leaf on a test thread's default stack: the releases run one after
//! another on the thread (`release_queue`), never nested, so nothing
//! overflows. Nested, 10,000 overflowed a debug test thread and 100,000 a
//! release one.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use lockref_table::{Config, Handle, Table};

const DEPTH: u64 = 1_000_000;

/// An entry of the chain: its parent's handle (none for the root).
struct Link {
    /// Never read: what it does is hold the parent, and put it when the
    /// link is dropped.
    _parent: Option<Handle<u64, Link>>,
    drops: Arc<AtomicUsize>,
    panics: bool,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Relaxed);
        // The parent's handle is still dropped (fields are, as the panic
        // unwinds): its release is queued, and run as the panic passes.
        assert!(!self.panics, "a value whose drop panics");
    }
}

fn config() -> Config {
    Config {
        buckets: 1 << 20,
        max_unused: DEPTH as usize + 1,
        ..Config::default()
    }
}

/// Builds the chain 0 (root) .. `DEPTH - 1` (leaf) and returns the leaf's
/// handle: the only reference of the leaf, each entry above held by its
/// child's value.
fn chain(table: &Table<u64, Link>, drops: &Arc<AtomicUsize>) -> Handle<u64, Link> {
    let mut parent: Option<Handle<u64, Link>> = None;
    for depth in 0..DEPTH {
        let link = table.find_or_insert_with(depth, |_| Link {
            _parent: parent.take(),
            drops: drops.clone(),
            panics: false,
        });
        parent = Some(link);
    }
    let leaf = parent.expect("DEPTH > 0");
    assert_eq!(table.len() as u64, DEPTH);
    leaf
}

#[test]
#[cfg_attr(miri, ignore = "1,000,000 entries: minutes under Miri")]
fn a_chain_let_go_from_its_leaf_is_released_in_a_loop() {
    let drops = Arc::new(AtomicUsize::new(0));
    let table = Table::new(config());
    let leaf = chain(&table, &drops);
    // The leaf's last put kills it (the table keeps none), its value's
    // drop puts its parent's last reference, and so on to the root.
    drop(leaf);
    assert_eq!((table.len(), drops.load(Relaxed) as u64), (0, DEPTH));
}

#[test]
#[cfg_attr(miri, ignore = "1,000,000 entries: minutes under Miri")]
fn a_removed_chain_let_go_from_its_leaf_is_released_in_a_loop() {
    let drops = Arc::new(AtomicUsize::new(0));
    // Every entry kept at zero, but each is removed first (an unhashed
    // chain, the kernel's `d_drop` of a subtree): they die at zero.
    let table = Table::with_keep(config(), |_, _| true);
    let leaf = chain(&table, &drops);
    for depth in 0..DEPTH {
        assert!(table.remove(&depth));
    }
    drop(leaf);
    assert_eq!((table.len(), drops.load(Relaxed) as u64), (0, DEPTH));
}

#[test]
#[cfg_attr(miri, ignore = "1,000,000 entries: minutes under Miri")]
fn a_deep_leaf_held_past_the_tables_drop_is_released_in_a_loop() {
    let drops = Arc::new(AtomicUsize::new(0));
    let table = Table::with_keep(config(), |_, _| true);
    let leaf = chain(&table, &drops);
    // The teardown kills what is unused (nothing: each entry is held by
    // its child); the leaf's handle outlives the table, and its last put
    // finds the table closed and kills the chain.
    drop(table);
    assert_eq!(drops.load(Relaxed), 0);
    drop(leaf);
    assert_eq!(drops.load(Relaxed) as u64, DEPTH);
}

#[test]
#[cfg_attr(miri, ignore = "1,000,000 entries: minutes under Miri")]
fn a_deep_leaf_held_by_the_peer_is_released_in_a_loop_by_the_tables_drop() {
    let drops = Arc::new(AtomicUsize::new(0));
    let table = Table::with_keep(config(), |_, _| true);
    let leaf = chain(&table, &drops);
    // The peer (a FUSE kernel) holds the leaf: the table's drop ends the
    // peer's references, and the chain dies inside the teardown.
    let _id = leaf.into_id();
    drop(table);
    assert_eq!(drops.load(Relaxed) as u64, DEPTH);
}

/// A value in the middle of a chain whose drop panics: the panic reaches
/// the put that started the cascade, and the releases queued behind it
/// still run (the root's value is dropped, the table is empty).
#[test]
fn a_panicking_value_in_a_chain_leaves_no_entry_unreleased() {
    let drops = Arc::new(AtomicUsize::new(0));
    let table = Table::new(Config::default());
    let link = |depth: u64, parent: Option<Handle<u64, Link>>| {
        table.find_or_insert_with(depth, |_| Link {
            _parent: parent,
            drops: drops.clone(),
            panics: depth == 1,
        })
    };
    let root = link(0, None);
    let middle = link(1, Some(root));
    let leaf = link(2, Some(middle));
    let put = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(leaf)));
    assert!(put.is_err(), "the value's panic reaches the put");
    assert_eq!((table.len(), drops.load(Relaxed)), (0, 3));
    // The thread's queue is usable again: a later chain is released too.
    let root = link(10, None);
    drop(link(11, Some(root)));
    assert_eq!((table.len(), drops.load(Relaxed)), (0, 5));
}
