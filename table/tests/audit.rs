//! The promises an outside audit found broken, each held by a test that
//! failed before its fix: the bound on unused entries holds at rest after
//! last puts, not only before an insert; a value whose drop panics, or a
//! `make` that panics, leaks nothing for good (the table's state is freed
//! when the table and every handle are gone); the vacant sentinel is no
//! id; a forget of zero references changes nothing.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lockref_table::{Config, Table, TableError};

/// Counts its drops, and panics in its drop if told to.
struct Value {
    drops: Arc<AtomicUsize>,
    panic_on_drop: bool,
}

impl Drop for Value {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
        if self.panic_on_drop {
            panic!("a value's drop panics");
        }
    }
}

/// A key that counts its drops: keys are dropped when their slot is
/// recycled, which the table's state must live to do.
struct Key {
    n: u64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Key {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
    }
}
impl Eq for Key {}
impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.n.hash(state);
    }
}

/// Entries per test (fewer under Miri).
const ENTRIES: u64 = if cfg!(miri) { 40 } else { 1_000 };

fn config(max_unused: usize) -> Config {
    Config {
        buckets: 16,
        max_unused,
        ..Config::default()
    }
}

/// A table that keeps every entry at zero, `max_unused` of them.
fn keeping<K: std::hash::Hash + Eq + Send + Sync>(max_unused: usize) -> Table<K, Value> {
    Table::with_keep(config(max_unused), |_, _| true)
}

/// Runs the epoch's deferred work (slot recycling, with its key drops)
/// until `dropped` keys are dropped: bounded in attempts, not in time (the
/// collector runs a deferred function once no thread pinned before it was
/// deferred is still pinned; other tests pin too). Returns the drops seen.
fn collect_garbage(keys: &AtomicUsize, dropped: usize) -> usize {
    for _ in 0..1_000_000 {
        if keys.load(Ordering::Relaxed) >= dropped {
            break;
        }
        crossbeam_epoch::pin().flush();
        std::thread::yield_now();
    }
    keys.load(Ordering::Relaxed)
}

#[test]
fn the_unused_bound_holds_at_rest_after_last_puts() {
    let drops = Arc::<AtomicUsize>::default();
    let table = keeping(8);
    // Every entry in use at its insert, so no insert reclaims anything.
    let held: Vec<_> = (0..ENTRIES)
        .map(|key| {
            table.find_or_insert_with(key, |_| Value {
                drops: drops.clone(),
                panic_on_drop: false,
            })
        })
        .collect();
    assert_eq!(table.unused(), 0);
    drop(held);
    assert_eq!(table.unused(), 8, "at most max_unused rest unused");
    assert_eq!(table.len(), 8);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        ENTRIES as usize - 8,
        "the rest were killed"
    );
    // Revived entries make room: they are unlisted, not counted.
    let revived: Vec<_> = (0..ENTRIES).filter_map(|key| table.find(&key)).collect();
    assert_eq!(revived.len(), 8);
    drop(revived);
    assert_eq!(table.unused(), 8);
}

#[test]
fn a_value_whose_drop_panics_stops_no_teardown_and_leaks_nothing() {
    let (values, keys) = (Arc::<AtomicUsize>::default(), Arc::<AtomicUsize>::default());
    let table = keeping(8);
    for n in 0..8u64 {
        drop(table.find_or_insert_with(
            Key {
                n,
                drops: keys.clone(),
            },
            |_| Value {
                drops: values.clone(),
                panic_on_drop: n % 3 == 1,
            },
        ));
    }
    assert_eq!(table.unused(), 8);
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(table)));
    assert!(dropped.is_err(), "the first panic propagates");
    assert_eq!(values.load(Ordering::Relaxed), 8, "every value dropped");
    assert_eq!(collect_garbage(&keys, 8), 8, "every slot recycled");
}

#[test]
fn a_value_whose_drop_panics_at_its_release_leaks_nothing() {
    let (values, keys) = (Arc::<AtomicUsize>::default(), Arc::<AtomicUsize>::default());
    let table = Table::new(config(0));
    for n in 0..ENTRIES {
        let handle = table.find_or_insert_with(
            Key {
                n,
                drops: keys.clone(),
            },
            |_| Value {
                drops: values.clone(),
                panic_on_drop: true,
            },
        );
        // Not kept (bound zero): the last put releases, the drop panics.
        assert!(catch_unwind(AssertUnwindSafe(|| drop(handle))).is_err());
    }
    assert_eq!(values.load(Ordering::Relaxed), ENTRIES as usize);
    assert_eq!(table.len(), 0);
    drop(table);
    assert_eq!(
        collect_garbage(&keys, ENTRIES as usize),
        ENTRIES as usize,
        "every slot recycled: the entries' holds on the table's state ended"
    );
}

#[test]
fn a_make_that_panics_loses_no_slot() {
    let drops = Arc::<AtomicUsize>::default();
    let table = Table::new(Config {
        first_id: 1,
        ..config(0)
    });
    let mut seen = Vec::new();
    for key in 0..3u64 {
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            table.find_or_insert_with(key, |id| -> Value {
                seen.push(id);
                panic!("make panics")
            })
        }));
        assert!(panicked.is_err());
        assert!(table.find(&key).is_none(), "no entry made");
    }
    assert_eq!(table.len(), 0);
    // The slot is given back: the next entry takes it, with the next
    // generation (an id that `make` saw is never handed out).
    let next = table.find_or_insert_with(7, |_| Value {
        drops: drops.clone(),
        panic_on_drop: false,
    });
    let slot = |id: u64| (id - 1) & 0xffff_ffff;
    assert_eq!(slot(next.id()), slot(seen[0]), "the first slot, reused");
    assert!(!seen.contains(&next.id()));
}

#[test]
fn the_vacant_sentinel_is_no_id() {
    // With this first id, `u64::MAX` names slot 0 by its arithmetic.
    let table: Table<u64, u64> = Table::new(Config {
        first_id: (1 << 32) - 1,
        ..config(8)
    });
    let id = table.hand_out(1, |_| 1);
    assert_eq!(
        table.forget(u64::MAX, 0),
        Err(TableError::UnknownId(u64::MAX))
    );
    assert_eq!(
        table.forget(u64::MAX, 1),
        Err(TableError::UnknownId(u64::MAX))
    );
    assert_eq!(
        table.get(u64::MAX).err(),
        Some(TableError::UnknownId(u64::MAX))
    );
    assert_eq!(table.peer_refs(u64::MAX), None);
    // A table whose slot 0 is vacant (its entry gone) is no different.
    table.forget(id, 1).unwrap();
    assert_eq!(
        table.forget(u64::MAX, 0),
        Err(TableError::UnknownId(u64::MAX))
    );
}

#[test]
fn a_forget_of_zero_changes_nothing() {
    let drops = Arc::<AtomicUsize>::default();
    let table = keeping(8);
    let make = |_| Value {
        drops: drops.clone(),
        panic_on_drop: false,
    };
    // The peer holds none: a forget of zero puts nothing of the handle's.
    let held = table.find_or_insert_with(1, make);
    let id = held.id();
    assert_eq!(table.forget(id, 0), Ok(()));
    assert_eq!((held.count(), held.peer_refs()), (1, 0));
    // The peer holds two: still two after.
    let lent = table.hand_out(2, make);
    assert_eq!(table.hand_out(2, make), lent);
    assert_eq!(table.forget(lent, 0), Ok(()));
    assert_eq!(table.peer_refs(lent), Some(2));
    let open = table.get(lent).unwrap();
    assert_eq!(open.count(), 2, "the handle's, and the peer's one");
    drop(open);
    drop(held);
    assert_eq!(drops.load(Ordering::Relaxed), 0, "nothing died");
    assert_eq!(table.unused(), 1);
}
