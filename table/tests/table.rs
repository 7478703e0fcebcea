//! The table through its public API: lookups and inserts, the decision at
//! zero, protocol ids and the peer's references, the bound on unused
//! entries, teardown with handles out, exact accounting of what a path
//! takes, and a multi-threaded stress with every count balanced. Also run
//! under Miri and ThreadSanitizer by `.ci/run`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use lockref_table::{Config, Handle, Table, TableError};

/// A value that counts its drops and says whether it is still linked.
struct Inode {
    linked: AtomicBool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Inode {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

fn inode(drops: &Arc<AtomicUsize>) -> Inode {
    Inode {
        linked: AtomicBool::new(true),
        drops: drops.clone(),
    }
}

/// A table that keeps linked inodes at zero, with `max_unused` of them.
fn caching(max_unused: usize) -> Table<u64, Inode> {
    Table::with_keep(
        Config {
            buckets: 16,
            max_unused,
            ..Config::default()
        },
        |_, i: &Inode| i.linked.load(Ordering::Relaxed),
    )
}

#[test]
fn lookups_find_one_entry_per_key_and_revive_it_from_zero() {
    let drops = Arc::default();
    let table = caching(8);
    let a = table.find_or_insert_with(1, |_| inode(&drops));
    let b = table.find_or_insert_with(1, |_| panic!("the entry is there"));
    assert!(Handle::ptr_eq(&a, &b));
    assert_eq!((a.count(), table.len()), (2, 1));
    assert!(table.find(&2).is_none());
    drop((a, b));
    assert_eq!(
        (table.len(), table.unused()),
        (1, 1),
        "linked: kept at zero"
    );
    let again = table.find(&1).expect("revived from zero");
    assert_eq!(again.count(), 1);
    again.linked.store(false, Ordering::Relaxed);
    // Listed since its first last put: `keep` is not asked again.
    again.dont_keep();
    drop(again);
    assert_eq!((table.len(), table.unused()), (0, 0), "unlinked: killed");
    assert!(table.find(&1).is_none());
    assert_eq!(drops.load(Ordering::Relaxed), 1, "the value dropped once");
}

/// A hasher that sends every key to one chain and counts its hashes.
#[derive(Clone, Default)]
struct OneChain(Arc<AtomicUsize>);

impl std::hash::BuildHasher for OneChain {
    type Hasher = OneChainHasher;
    fn build_hasher(&self) -> OneChainHasher {
        self.0.fetch_add(1, Ordering::Relaxed);
        OneChainHasher
    }
}

struct OneChainHasher;

impl std::hash::Hasher for OneChainHasher {
    fn finish(&self) -> u64 {
        7
    }
    fn write(&mut self, _: &[u8]) {}
}

#[test]
fn the_users_hasher_hashes_every_key_and_colliding_keys_stay_apart() {
    let drops = Arc::default();
    let hashes = OneChain::default();
    let table = Table::with_keep_and_hasher(Config::default(), |_, _| true, hashes.clone());
    let ids: Vec<u64> = (0..100)
        .map(|k| table.hand_out(k, |_| inode(&drops)))
        .collect();
    assert_eq!(
        hashes.0.load(Ordering::Relaxed),
        100,
        "one hash per lookup, by the user's hasher"
    );
    for (k, &id) in (0..100u64).zip(&ids) {
        assert_eq!(table.find(&k).expect("on the one chain").id(), id);
        assert_eq!(table.hand_out(k, |_| panic!("the entry is there")), id);
    }
    assert!(table.find(&100).is_none());
    for &id in &ids {
        table.forget(id, 2).unwrap();
    }
    assert_eq!((table.len(), table.unused()), (100, 100));
    assert!(table.remove(&42));
    assert_eq!(table.len(), 99);
    assert!(table.find(&42).is_none() && table.find(&43).is_some());
    drop(table);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        100,
        "every value dropped once"
    );
}

#[test]
fn ids_count_the_peers_references_and_refuse_what_it_was_not_given() {
    let drops = Arc::default();
    let table = caching(8);
    let id = table.find_or_insert_with(10, |_| inode(&drops)).into_id();
    assert_eq!(table.hand_out(10, |_| unreachable!()), id);
    assert_eq!(table.peer_refs(id), Some(2));
    assert_eq!(
        table.forget(id, 3),
        Err(TableError::MoreThanHeld {
            id,
            forget: 3,
            held: 2
        })
    );
    assert_eq!(
        table.peer_refs(id),
        Some(2),
        "a refused forget changes nothing"
    );
    let open = table.get(id).unwrap();
    assert_eq!(open.count(), 2, "the handle, and one for the peer's two");
    table.forget(id, 1).unwrap();
    assert_eq!(
        (open.count(), open.peer_refs()),
        (2, 1),
        "not the peer's last: the lockref is untouched"
    );
    assert_eq!(
        table.get(id + 1).err(),
        Some(TableError::UnknownId(id + 1)),
        "never handed out"
    );
    assert_eq!(table.forget(12345, 1), Err(TableError::UnknownId(12345)));
    open.linked.store(false, Ordering::Relaxed);
    drop(open);
    table.forget(id, 1).unwrap();
    assert_eq!(table.len(), 0);
    // Stale: the id is gone and is never reused.
    assert_eq!(table.get(id).err(), Some(TableError::UnknownId(id)));
    assert_eq!(table.forget(id, 1), Err(TableError::UnknownId(id)));
    let next = table.find_or_insert_with(10, |_| inode(&drops));
    assert!(next.id() > id, "a new entry, a new id");
    assert_eq!(
        table.forget(next.id(), 1),
        Err(TableError::MoreThanHeld {
            id: next.id(),
            forget: 1,
            held: 0
        })
    );
}

#[test]
fn the_first_id_is_the_configured_one() {
    let table: Table<u64, ()> = Table::new(Config {
        first_id: 1,
        ..Config::default()
    });
    assert_eq!(table.find_or_insert_with(0, |id| assert_eq!(id, 1)).id(), 1);
}

#[test]
fn unused_entries_are_bounded_and_reclaimed_oldest_first() {
    let drops = Arc::default();
    let table = caching(3);
    for key in 0..10u64 {
        drop(table.find_or_insert_with(key, |_| inode(&drops)));
        assert!(table.unused() <= 3, "after {key}: {}", table.unused());
    }
    assert_eq!(table.unused(), 3);
    assert_eq!(table.len(), 3);
    // The newest three stay.
    assert!(table.find(&9).is_some() && table.find(&8).is_some() && table.find(&7).is_some());
    assert!(table.find(&6).is_none());
    assert_eq!(table.shrink(usize::MAX), 3);
    assert_eq!((table.len(), drops.load(Ordering::Relaxed)), (0, 10));
    // A bound of zero keeps none.
    let none = caching(0);
    drop(none.find_or_insert_with(1, |_| inode(&drops)));
    assert_eq!((none.len(), none.unused()), (0, 0));
}

#[test]
fn a_revived_entry_is_not_reclaimed_while_in_use() {
    let drops = Arc::default();
    let table = caching(1);
    drop(table.find_or_insert_with(1, |_| inode(&drops)));
    let held = table.find(&1).unwrap();
    assert_eq!(table.shrink(usize::MAX), 0, "in use: only unlisted");
    assert_eq!(held.count(), 1);
    drop(held);
    assert_eq!(table.unused(), 1, "listed again by its last put");
    assert_eq!(table.shrink(1), 1);
}

#[test]
fn removed_entries_leave_the_key_lookups_and_die_with_their_last_reference() {
    let drops = Arc::default();
    let table = caching(8);
    let h = table.find_or_insert_with(5, |_| inode(&drops));
    let id = h.id();
    assert!(table.remove(&5));
    assert!(!table.remove(&5));
    assert!(table.find(&5).is_none(), "no longer found by key");
    assert!(table.get(id).is_ok(), "still by id while referenced");
    let fresh = table.find_or_insert_with(5, |_| inode(&drops));
    assert!(!Handle::ptr_eq(&fresh, &h));
    drop(h);
    assert_eq!(
        table.get(id).err(),
        Some(TableError::UnknownId(id)),
        "linked, but removed: killed"
    );
    assert_eq!(table.len(), 1);
    drop(fresh);
    assert_eq!(table.len(), 1, "the fresh one is linked: kept");
}

#[test]
fn an_unused_entry_dies_at_its_remove_and_a_handle_knows_it_was_removed() {
    let drops = Arc::default();
    let table = caching(8);
    drop(table.find_or_insert_with(5, |_| inode(&drops)));
    assert_eq!((table.len(), table.unused()), (1, 1), "cached, unused");
    assert!(table.remove(&5));
    assert_eq!(
        (table.len(), table.unused(), drops.load(Ordering::Relaxed)),
        (0, 0, 1),
        "killed by the remove, not left to the shrinker"
    );
    let h = table.find_or_insert_with(6, |_| inode(&drops));
    assert!(h.is_findable());
    assert!(table.remove(&6));
    assert!(!h.is_findable(), "removed, though still referenced");
    assert!(!table.remove(&6), "removed once");
}

#[test]
fn a_rename_takes_both_names_out_of_the_lookups_and_keeps_their_handles() {
    let drops = Arc::default();
    let table = caching(8);
    let moved = table.find_or_insert_with(1, |_| inode(&drops));
    drop(table.find_or_insert_with(2, |_| inode(&drops)));
    assert_eq!(table.rename(&1, &2), (true, true));
    assert!(table.find(&1).is_none() && table.find(&2).is_none());
    assert!(!moved.is_findable(), "the moved entry's old key is gone");
    assert!(
        table.get(moved.id()).is_ok(),
        "still by id while referenced"
    );
    assert_eq!(
        (table.len(), drops.load(Ordering::Relaxed)),
        (1, 1),
        "the replaced one, unused, died"
    );
    // The new name's entry comes from the store, with a new id.
    let renamed = table.find_or_insert_with(2, |_| inode(&drops));
    assert_ne!(renamed.id(), moved.id());
    assert_eq!(table.rename(&3, &4), (false, false), "no entries: nothing");
    assert_eq!(
        table.rename(&2, &2),
        (true, false),
        "one name: removed once"
    );
    assert!(!renamed.is_findable());
    drop((moved, renamed));
    assert_eq!((table.len(), drops.load(Ordering::Relaxed)), (0, 3));
}

#[test]
fn handles_lists_every_live_entry() {
    let drops = Arc::default();
    let table = caching(8);
    let held: Vec<_> = (0..5u64)
        .map(|k| table.find_or_insert_with(k, |_| inode(&drops)))
        .collect();
    drop(held);
    let mut keys: Vec<u64> = table.handles().iter().map(|h| *h.key()).collect();
    keys.sort_unstable();
    assert_eq!(keys, [0, 1, 2, 3, 4]);
}

/// A handle must never outlive what it points into: dropping the table
/// first is safe, the handle still reads its entry, and its last put
/// frees it.
#[test]
fn handles_outlive_the_table() {
    let drops = Arc::<AtomicUsize>::default();
    let table = caching(8);
    let held = table.find_or_insert_with(1, |_| inode(&drops));
    let lent = table.find_or_insert_with(2, |_| inode(&drops)).into_id();
    drop(table.find_or_insert_with(3, |_| inode(&drops))); // unused
    let _ = lent;
    drop(table);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        2,
        "the unused and the lent one died with the table"
    );
    assert!(held.linked.load(Ordering::Relaxed), "still readable");
    assert_eq!((*held.key(), held.count()), (1, 1));
    let copy = held.clone();
    drop(held);
    drop(copy);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        3,
        "the last put after the table killed it"
    );
}

/// A handle's entry's lockref operations so far: all of them, the
/// lockless ones, the lock acquisitions.
fn ops(h: &Handle<u64, Inode>) -> (usize, usize, usize) {
    let s = h.lockref_stats();
    (s.operations, s.lockless, s.lock_acquisitions)
}

/// Exact accounting: a lookup hit is one atomic operation on the entry's
/// lockref and takes no lock of the table; handing out a reference the
/// peer holds already, and a forget that is not the last, are one atomic
/// on the peer's count: none on the lockref, no lock.
#[test]
fn a_hit_is_one_atomic_on_the_entry_and_a_forget_not_the_last_takes_no_lock() {
    let drops = Arc::default();
    let table = caching(8);
    let id = table.find_or_insert_with(1, |_| inode(&drops)).into_id();
    let held = table.get(id).unwrap();
    held.reset_lockref_stats();
    let locks = table.locks_taken();

    let hit = table.find(&1).unwrap();
    assert_eq!(ops(&held), (1, 1, 0), "a hit: one lockless get");
    assert_eq!(table.locks_taken(), locks, "no table lock on a hit");
    let by_id = table.get(id).unwrap();
    assert_eq!(ops(&held), (2, 2, 0), "by id: one lockless get");
    drop((hit, by_id));
    held.reset_lockref_stats();

    assert_eq!(table.hand_out(1, |_| unreachable!()), id);
    assert_eq!(held.peer_refs(), 2);
    assert_eq!(ops(&held), (0, 0, 0), "handed out: the peer's count only");
    table.forget(id, 1).unwrap();
    assert_eq!(held.peer_refs(), 1);
    assert_eq!(ops(&held), (0, 0, 0), "not the last forget: the same");
    assert_eq!(
        table.locks_taken(),
        locks,
        "no table lock on a hand out or a forget that is not the last"
    );

    // The peer's last forget puts the one reference its references held.
    table.forget(id, 1).unwrap();
    assert_eq!(ops(&held), (1, 1, 0), "the last forget: one lockless put");
    assert_eq!(held.count(), 1);
}

/// `hand_out_if` checks the entry under the reference it hands out: an
/// accepted hit is one atomic on the peer's count (none on the lockref,
/// no lock); a refused one changes no count, and its reference, if it was
/// the only one, takes the entry with it as a forget would.
#[test]
fn a_refused_hand_out_gives_its_reference_back() {
    let drops = Arc::default();
    let table = caching(0);
    let id = table.hand_out(1, |_| inode(&drops));
    let held = table.get(id).unwrap();
    held.reset_lockref_stats();
    let locks = table.locks_taken();
    let is_linked = |i: &Inode| i.linked.load(Ordering::Relaxed);

    assert_eq!(
        table.hand_out_if(1, |_| unreachable!(), is_linked),
        Some(id)
    );
    assert_eq!(
        (held.peer_refs(), ops(&held)),
        (2, (0, 0, 0)),
        "accepted: the peer's count only"
    );
    held.linked.store(false, Ordering::Relaxed);
    assert_eq!(table.hand_out_if(1, |_| unreachable!(), is_linked), None);
    assert_eq!(
        (held.peer_refs(), held.count()),
        (2, 2),
        "refused: as it was"
    );
    assert_eq!(table.locks_taken(), locks, "no table lock");

    // Not handed out to the peer: the reference refused is a handle's.
    table.forget(id, 2).unwrap();
    assert_eq!((held.peer_refs(), held.count()), (0, 1));
    assert_eq!(table.hand_out_if(1, |_| unreachable!(), is_linked), None);
    assert_eq!(
        (held.peer_refs(), held.count()),
        (0, 1),
        "refused: as it was"
    );
    drop(held);
    assert_eq!((table.len(), drops.load(Ordering::Relaxed)), (0, 1));

    // Made by this call and refused: it dies at once.
    assert_eq!(table.hand_out_if(2, |_| inode(&drops), |_| false), None);
    assert_eq!((table.len(), drops.load(Ordering::Relaxed)), (0, 2));
}

/// `Handle::forget` gives back the peer's references with the handle's:
/// not the last, one atomic on the peer's count and the handle's put; the
/// last, one put of both; more than held, refused with every count as it
/// was (the handle's own reference aside).
#[test]
fn a_handle_forgets_the_peers_references_with_its_own() {
    let drops = Arc::default();
    let table = caching(0);
    let id = table.hand_out(1, |_| inode(&drops));
    assert_eq!(table.hand_out(1, |_| unreachable!()), id);
    let held = table.get(id).unwrap();
    held.reset_lockref_stats();

    assert_eq!(
        table.get(id).unwrap().forget(3),
        Err(TableError::MoreThanHeld {
            id,
            forget: 3,
            held: 2
        })
    );
    assert_eq!(
        (held.peer_refs(), held.count()),
        (2, 2),
        "refused: as it was"
    );
    held.reset_lockref_stats();
    let by_id = table.get(id).unwrap();
    by_id.forget(1).unwrap();
    assert_eq!((held.peer_refs(), held.count()), (1, 2));
    assert_eq!(ops(&held), (2, 2, 0), "the get and the handle's put");
    held.reset_lockref_stats();
    table.get(id).unwrap().forget(1).unwrap();
    assert_eq!((held.peer_refs(), held.count()), (0, 1));
    assert_eq!(
        ops(&held),
        (2, 2, 0),
        "the get, then one put of two references"
    );
    held.forget(0).unwrap();
    assert_eq!(
        (table.len(), drops.load(Ordering::Relaxed)),
        (0, 1),
        "the last reference"
    );
}

/// A handle handed to the peer after the table is dropped: nobody is left
/// to forget it, so the reference is given back and the entry dies with
/// its last handle.
#[test]
fn a_handle_handed_out_after_the_table_is_dropped_is_given_back() {
    let drops = Arc::<AtomicUsize>::default();
    let table = caching(8);
    let first = table.find_or_insert_with(1, |_| inode(&drops));
    let second = first.clone();
    let lent = table.find_or_insert_with(2, |_| inode(&drops));
    drop(table);
    assert_eq!(drops.load(Ordering::Relaxed), 0, "both still held");
    let _ = lent.into_id();
    assert_eq!(drops.load(Ordering::Relaxed), 1, "its only reference: died");
    let _ = first.into_id();
    assert_eq!(second.count(), 1, "the peer's reference was given back");
    drop(second);
    assert_eq!(drops.load(Ordering::Relaxed), 2);
}

/// Four threads look up, hand out, forget, open and drop entries of a few
/// keys, some unlinking: at the end every count is balanced, every value
/// that died was dropped once, and the table's drop frees the rest.
#[test]
fn concurrent_lookups_forgets_and_puts_stay_balanced() {
    let iters = if cfg!(miri) { 40 } else { 20_000 };
    let drops = Arc::<AtomicUsize>::default();
    let made = Arc::<AtomicUsize>::default();
    let table = Arc::new(caching(4));
    thread::scope(|s| {
        for t in 0..4u64 {
            let (table, drops, made) = (&table, &drops, &made);
            s.spawn(move || {
                for i in 0..iters as u64 {
                    let key = (i * 7 + t) % 6;
                    let h = table.find_or_insert_with(key, |_| {
                        made.fetch_add(1, Ordering::Relaxed);
                        inode(drops)
                    });
                    match i % 4 {
                        0 => {
                            let id = h.into_id();
                            table.forget(id, 1).expect("our own reference");
                        }
                        1 => {
                            let again = table.get(h.id()).expect("we hold it");
                            assert!(Handle::ptr_eq(&again, &h));
                        }
                        2 if i % 16 == 2 => {
                            h.linked.store(false, Ordering::Relaxed);
                            h.dont_keep();
                        }
                        3 => {
                            let id = table.hand_out(key, |_| {
                                made.fetch_add(1, Ordering::Relaxed);
                                inode(drops)
                            });
                            table.forget(id, 1).expect("our own reference");
                        }
                        _ => {}
                    }
                }
            });
        }
    });
    let table = Arc::try_unwrap(table).ok().unwrap();
    for h in table.handles() {
        assert_eq!(
            (h.count(), h.peer_refs()),
            (1, 0),
            "only this handle: balanced"
        );
    }
    let live = table.len();
    assert_eq!(
        made.load(Ordering::Relaxed) - drops.load(Ordering::Relaxed),
        live
    );
    drop(table);
    assert_eq!(
        made.load(Ordering::Relaxed),
        drops.load(Ordering::Relaxed),
        "teardown frees the rest"
    );
}

/// An entry of a tree: its value holds its parent's handle.
struct Child {
    parent: Option<Handle<(u64, u8), Child>>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Child {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_value_may_hold_a_handle_of_its_own_table() {
    let drops = Arc::<AtomicUsize>::default();
    let table = Table::with_keep(Config::default(), |_: &(u64, u8), _: &Child| true);
    let child_of = |parent: Option<&Handle<(u64, u8), Child>>, name| {
        let key = (parent.map_or(0, Handle::id), name);
        let parent = parent.cloned();
        let drops = drops.clone();
        table.find_or_insert_with(key, move |_| Child { parent, drops })
    };
    let root = child_of(None, 0);
    let dir = child_of(Some(&root), 1);
    let file = child_of(Some(&dir), 2);
    assert!(Handle::ptr_eq(file.parent.as_ref().unwrap(), &dir));
    drop(dir);
    assert_eq!(table.unused(), 0, "the file holds the directory");
    drop(file);
    assert_eq!(
        table.unused(),
        1,
        "the file is cached, and holds the directory"
    );
    assert_eq!(table.shrink(1), 1, "the file dies");
    assert_eq!(table.unused(), 1, "then the directory is cached");
    assert_eq!(table.shrink(1), 1);
    assert_eq!((table.len(), drops.load(Ordering::Relaxed)), (1, 2));
    // A chain still cached when the table goes: the teardown kills them.
    let dir = child_of(Some(&root), 1);
    drop(child_of(Some(&dir), 2));
    drop((dir, root));
    drop(table);
    assert_eq!(drops.load(Ordering::Relaxed), 5, "every value dropped");
}

/// Exact accounting of the last put of a cached entry (the kernel's
/// `fast_dput`): once listed, a revived entry's last put is one lockless
/// compare-and-swap on its lockref, takes no lock of the entry or the
/// table, and does not ask `keep` again.
#[test]
fn the_last_put_of_a_cached_entry_takes_no_lock_and_asks_keep_once() {
    let asked = Arc::new(AtomicUsize::new(0));
    let table = {
        let asked = asked.clone();
        Table::with_keep(Config::default(), move |_, _: &u64| {
            asked.fetch_add(1, Ordering::Relaxed);
            true
        })
    };
    drop(table.find_or_insert_with(1, |_| 7));
    assert_eq!(
        (table.unused(), asked.load(Ordering::Relaxed)),
        (1, 1),
        "listed: asked once"
    );
    let locks = table.locks_taken();
    for _ in 0..3 {
        let revived = table.find(&1).expect("cached");
        revived.reset_lockref_stats();
        drop(revived);
        let again = table.find(&1).expect("kept at zero");
        let s = again.lockref_stats();
        assert_eq!(
            (s.operations, s.lockless, s.lock_acquisitions),
            (2, 2, 0),
            "the last put and this lookup: two lockless operations, no lock"
        );
        drop(again);
    }
    assert_eq!(table.locks_taken(), locks, "no table lock");
    assert_eq!(asked.load(Ordering::Relaxed), 1, "keep is not asked again");
    assert_eq!(table.unused(), 1);
}

/// `Handle::dont_keep` makes a cached entry die at its next last put,
/// whatever `keep` says, and it stays findable while referenced; `remove`
/// does the same and takes it out of the lookups at once.
#[test]
fn dont_keep_and_remove_end_a_cached_entry_at_its_last_put() {
    let drops = Arc::default();
    let table = caching(8);
    drop(table.find_or_insert_with(1, |_| inode(&drops)));
    drop(table.find_or_insert_with(2, |_| inode(&drops)));
    assert_eq!((table.len(), table.unused()), (2, 2));

    let one = table.find(&1).expect("cached");
    one.dont_keep();
    let again = table.find(&1).expect("still findable while referenced");
    drop(one);
    assert_eq!(table.len(), 2, "not the last put");
    drop(again);
    assert_eq!(table.len(), 1, "the last put killed it");
    assert!(table.find(&1).is_none());

    let two = table.find(&2).expect("cached");
    assert!(table.remove(&2));
    assert!(table.find(&2).is_none(), "out of the lookups at once");
    drop(two);
    assert_eq!((table.len(), table.unused()), (0, 0));
    assert_eq!(drops.load(Ordering::Relaxed), 2, "each value dropped once");
}
