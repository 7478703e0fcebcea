//! Loom models of the table, one per race: every racing side on a spawned
//! thread, the epoch collector and lockref modelled too. Run with
//! `RUSTFLAGS="--cfg loom --cfg lockref_loom --cfg crossbeam_loom"`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

use lockref_table::{Config, Handle, Table, TableError};

/// Counts its drops (a loom atomic: every interleaving of the drop with
/// the other sides is explored).
struct Value {
    drops: Arc<AtomicUsize>,
    keep: AtomicBool,
}

impl Drop for Value {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

fn value(drops: &Arc<AtomicUsize>, keep: bool) -> Value {
    Value {
        drops: drops.clone(),
        keep: AtomicBool::new(keep),
    }
}

fn table() -> Arc<Table<u8, Value>> {
    table_keeping(4)
}

/// A table that keeps up to `max_unused` entries whose value says so.
fn table_keeping(max_unused: usize) -> Arc<Table<u8, Value>> {
    Arc::new(Table::with_keep(
        Config {
            buckets: 1,
            max_unused,
            ..Config::default()
        },
        |_, v: &Value| v.keep.load(SeqCst),
    ))
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    // Loom counts every atomic of an execution as a branch, the epoch
    // collector's included: a model of two inserts and a rename takes
    // about a thousand, loom's default bound (which is there to catch
    // spin loops, and catches one at ten thousand as well).
    builder.max_branches = builder.max_branches.max(10_000);
    builder.check(f);
}

/// The last put of an entry (killed at zero) races a lookup of its key:
/// the lookup gets the live entry or nothing, never the dying one; every
/// value is dropped exactly once.
#[test]
fn lookup_races_the_last_put() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let held = t.find_or_insert_with(1, |_| value(&drops, false));
        let lookup = {
            let t = t.clone();
            thread::spawn(move || t.find(&1).map(|h| *h.key()))
        };
        let put = thread::spawn(move || drop(held));
        let found = lookup.join().unwrap();
        put.join().unwrap();
        assert!(found.is_none() || found == Some(1));
        assert_eq!((t.len(), drops.load(SeqCst)), (0, 1));
    });
}

/// Two inserts of one absent key: one entry, both get it.
#[test]
fn two_inserts_of_one_key_make_one_entry() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let inserts: Vec<_> = (0..2)
            .map(|_| {
                let (t, drops) = (t.clone(), drops.clone());
                thread::spawn(move || t.find_or_insert_with(3, |_| value(&drops, false)))
            })
            .collect();
        let handles: Vec<Handle<u8, Value>> =
            inserts.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(Handle::ptr_eq(&handles[0], &handles[1]));
        assert_eq!(t.len(), 1);
        drop(handles);
        assert_eq!((t.len(), drops.load(SeqCst)), (0, 1));
    });
}

/// The peer's last forget races a lookup by id: the lookup revives the
/// entry or finds it gone; nothing is counted twice, nothing leaks.
#[test]
fn forget_races_a_lookup_by_id() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let id = t.find_or_insert_with(2, |_| value(&drops, false)).into_id();
        let forget = {
            let t = t.clone();
            thread::spawn(move || t.forget(id, 1))
        };
        let lookup = {
            let t = t.clone();
            thread::spawn(move || match t.get(id) {
                Ok(h) => assert!(h.peer_refs() <= 1, "the peer gave back what it had"),
                Err(e) => assert_eq!(e, TableError::UnknownId(id)),
            })
        };
        assert_eq!(forget.join().unwrap(), Ok(()));
        lookup.join().unwrap();
        assert_eq!((t.len(), drops.load(SeqCst)), (0, 1));
    });
}

/// The peer's last forget races a hand out of the same key: the hand out
/// adds to the peer's count while it is above zero, or finds it at zero
/// and takes a reference of its own (reviving the entry, or inserting a
/// fresh one if it died); either way the peer ends with exactly one
/// reference, and one forget frees everything.
#[test]
fn hand_out_races_the_last_forget() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let id = t.hand_out(7, |_| value(&drops, false));
        let forget = {
            let t = t.clone();
            thread::spawn(move || t.forget(id, 1))
        };
        let hand_out = {
            let (t, drops) = (t.clone(), drops.clone());
            thread::spawn(move || t.hand_out(7, |_| value(&drops, false)))
        };
        assert_eq!(forget.join().unwrap(), Ok(()));
        let again = hand_out.join().unwrap();
        assert_eq!(t.peer_refs(again), Some(1), "exactly the new reference");
        assert_eq!(t.len(), 1);
        t.forget(again, 1).unwrap();
        let made = if again == id { 1 } else { 2 };
        assert_eq!((t.len(), drops.load(SeqCst)), (0, made));
    });
}

/// A hand out that refuses the entry it found races the peer's last
/// forget: its reference, added while the peer held the entry or taken
/// after, goes back; the entry dies once, with whichever side is last,
/// and the peer is left holding nothing.
#[test]
fn a_refused_hand_out_races_the_last_forget() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table_keeping(0);
        let id = t.hand_out(7, |_| value(&drops, false));
        let forget = {
            let t = t.clone();
            thread::spawn(move || t.forget(id, 1))
        };
        let refused = {
            let (t, drops) = (t.clone(), drops.clone());
            thread::spawn(move || t.hand_out_if(7, |_| value(&drops, false), |_| false))
        };
        assert_eq!(forget.join().unwrap(), Ok(()));
        assert_eq!(refused.join().unwrap(), None);
        let made = drops.load(SeqCst);
        assert!(
            made == 1 || made == 2,
            "the first entry, and one the refusal made"
        );
        assert_eq!(t.len(), 0, "nothing held: every entry died");
    });
}

/// A handle gives back the peer's last reference while another handle
/// of the entry is dropped: one of the two puts is the last, and the
/// value is dropped exactly once.
#[test]
fn a_handles_forget_races_a_put() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table_keeping(0);
        let id = t.hand_out(7, |_| value(&drops, false));
        let (a, b) = (t.get(id).unwrap(), t.get(id).unwrap());
        let forget = thread::spawn(move || a.forget(1));
        let put = thread::spawn(move || drop(b));
        assert_eq!(forget.join().unwrap(), Ok(()));
        put.join().unwrap();
        assert_eq!((t.len(), drops.load(SeqCst)), (0, 1));
    });
}

/// A handle's forget races the table's drop, which ends the peer's
/// references: one of the two gives back the peer's reference, and the
/// value is dropped exactly once.
#[test]
fn a_handles_forget_races_the_tables_drop() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let id = t.hand_out(8, |_| value(&drops, true));
        let held = t.get(id).unwrap();
        let forget = thread::spawn(move || held.forget(1).is_ok());
        let teardown = thread::spawn(move || drop(t));
        let _ = forget.join().unwrap();
        teardown.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1, "dropped once, not leaked");
    });
}

/// The reclaimer kills an unused entry while a lookup revives it: the
/// lookup either wins (the entry stays, in use) or finds it gone.
#[test]
fn reclaim_races_a_lookup() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        drop(t.find_or_insert_with(4, |_| value(&drops, true)));
        assert_eq!(t.unused(), 1);
        let shrink = {
            let t = t.clone();
            thread::spawn(move || t.shrink(1))
        };
        let lookup = {
            let t = t.clone();
            thread::spawn(move || t.find(&4).is_some())
        };
        let killed = shrink.join().unwrap();
        let found = lookup.join().unwrap();
        assert!(killed == 1 || found, "reclaimed, or revived first");
        assert_eq!(
            t.len() + drops.load(SeqCst),
            1,
            "the entry is either live or dropped once"
        );
    });
}

/// The table is dropped while another thread drops the last handle to one
/// of its entries: the entry's value is dropped exactly once, after which
/// nothing touches the table's state.
#[test]
fn dropping_the_table_races_a_live_handle() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let held = t.find_or_insert_with(5, |_| value(&drops, true));
        let lent = t.find_or_insert_with(6, |_| value(&drops, true)).into_id();
        let _ = lent;
        let put = thread::spawn(move || drop(held));
        let teardown = thread::spawn(move || drop(t));
        put.join().unwrap();
        teardown.join().unwrap();
        assert_eq!(drops.load(SeqCst), 2, "both values dropped once");
    });
}

/// A handle is handed to the peer while the table is dropped: the
/// teardown ends the peer's references, or the hand out sees the table
/// closed and gives the reference back itself; the value is dropped
/// exactly once, and nothing leaks.
#[test]
fn into_id_races_the_tables_drop() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let held = t.find_or_insert_with(8, |_| value(&drops, true));
        let lend = thread::spawn(move || {
            let _ = held.into_id();
        });
        let teardown = thread::spawn(move || drop(t));
        lend.join().unwrap();
        teardown.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1, "dropped once, not leaked");
    });
}

/// Runs the garbage this thread deferred, if no other thread is pinned:
/// a released entry's slot is recycled (two epochs on).
fn collect() {
    for _ in 0..2 {
        crossbeam_epoch::pin().flush();
    }
}

/// A lookup by id, without a pin, races the entry's death, the
/// recycling of its slot and the reuse of the slot by a new entry: the
/// lookup gets the entry it named or nothing, never the new one (a
/// reference it takes on the new entry is put back); every count stays
/// balanced.
#[test]
fn a_lookup_by_id_races_the_reuse_of_its_slot() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let old = t.hand_out(1, |_| value(&drops, false));
        let lookup = {
            let t = t.clone();
            thread::spawn(move || t.get(old).map(|h| h.id()))
        };
        let reuse = {
            let (t, drops) = (t.clone(), drops.clone());
            thread::spawn(move || {
                t.forget(old, 1).unwrap();
                collect();
                t.find_or_insert_with(2, |_| value(&drops, false)).id()
            })
        };
        let found = lookup.join().unwrap();
        assert!(found == Ok(old) || found == Err(TableError::UnknownId(old)));
        let new = reuse.join().unwrap();
        assert_ne!(new, old);
        assert_eq!((t.len(), drops.load(SeqCst)), (0, 2));
    });
}

/// A forget of more than the peer holds races the peer's last forget, the
/// entry's death, the recycling of its slot and a hand out of a new entry
/// there: the refused forget never counts against the new entry (its pin
/// holds the slot's recycling back while it compares the id and forgets).
#[test]
fn a_stale_forget_races_the_reuse_of_its_slot() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        let old = t.hand_out(1, |_| value(&drops, false));
        let stale = {
            let t = t.clone();
            thread::spawn(move || t.forget(old, 1))
        };
        let reuse = {
            let (t, drops) = (t.clone(), drops.clone());
            thread::spawn(move || {
                let last = t.forget(old, 1);
                collect();
                (last, t.hand_out(2, |_| value(&drops, false)))
            })
        };
        let stale = stale.join().unwrap();
        let (last, new) = reuse.join().unwrap();
        assert!(
            stale.is_ok() != last.is_ok(),
            "one of the two forgets counts"
        );
        assert_eq!(t.peer_refs(new), Some(1), "the new entry's one reference");
        t.forget(new, 1).unwrap();
        assert_eq!((t.len(), drops.load(SeqCst)), (0, 2));
    });
}

/// The last put of an entry still listed (revived since it was kept)
/// takes no list lock: it reads the listed flag under the entry's lock. It
/// races another entry's last put, which, the list full, unlists entries
/// it finds in use, under their locks. At rest every entry is unused and
/// listed, or dead: never kept at zero off the list, where no reclaimer
/// would find it. (The mutant that unlists an entry found in use without
/// its lock fails this: its put keeps it, then the unlisting lands.)
#[test]
fn a_listed_entrys_last_put_races_its_unlisting() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table_keeping(1);
        let other = t.find_or_insert_with(2, |_| value(&drops, true));
        drop(t.find_or_insert_with(1, |_| value(&drops, true)));
        assert_eq!(t.unused(), 1, "kept, listed");
        let revived = t.find(&1).expect("kept");
        let put = thread::spawn(move || drop(revived));
        let other_put = thread::spawn(move || drop(other));
        put.join().unwrap();
        other_put.join().unwrap();
        assert_eq!(t.len(), t.unused(), "every entry at rest is listed");
        assert!(t.unused() <= 1, "the bound holds");
        assert_eq!(t.len() + drops.load(SeqCst), 2);
    });
}

/// A lockless zero racing a revival, on a table that keeps none: the last
/// put drops its reference and kills the entry without its lock (one
/// compare-and-swap from one to dead) while a lookup revives the entry.
/// The kill lands only on a zero count: a revived entry lives on with its
/// value, and dies at the lookup's own last put. (The mutant whose
/// lockless kill does not check that the count is still zero kills the
/// revived entry under the lookup's handle: it fails this.)
#[test]
fn a_lockless_zero_races_a_revival() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table_keeping(0);
        let held = t.find_or_insert_with(1, |_| value(&drops, false));
        let lookup = {
            let t = t.clone();
            let drops = drops.clone();
            thread::spawn(move || {
                if let Some(h) = t.find(&1) {
                    // The other put's kill may run here.
                    thread::yield_now();
                    assert!(h.count() >= 1, "a revived entry lives under its handle");
                    assert_eq!(drops.load(SeqCst), 0, "and keeps its value");
                }
            })
        };
        let put = thread::spawn(move || drop(held));
        lookup.join().unwrap();
        put.join().unwrap();
        assert_eq!((t.len(), drops.load(SeqCst)), (0, 1));
    });
}

/// A lockless zero racing the shrinker: a listed entry's last put keeps it
/// without the lock (it reads the listed flag after the put) while the
/// shrinker unlists and kills the oldest. At rest the entry is listed and
/// unused, or dead: never kept at zero off the list, where no reclaimer
/// finds it. (The mutant that keeps an entry at a lockless zero without
/// reading the listed flag keeps it off the list after the shrinker
/// unlisted it in use: it fails this.)
#[test]
fn a_lockless_zero_races_the_shrinker() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        drop(t.find_or_insert_with(1, |_| value(&drops, true)));
        let revived = t.find(&1).expect("kept, listed");
        let shrink = {
            let t = t.clone();
            thread::spawn(move || t.shrink(1))
        };
        let put = thread::spawn(move || drop(revived));
        shrink.join().unwrap();
        put.join().unwrap();
        assert_eq!(t.len(), t.unused(), "every entry at rest is listed");
        assert_eq!(t.len() + drops.load(SeqCst), 1);
    });
}

/// A lockless zero racing a kill: a listed entry's last put keeps it
/// without the lock while another thread removes its key (the entry then
/// dies at zero, whoever reaches it). At rest it is dead, its value
/// dropped once. (The mutant that keeps a listed entry at a lockless zero
/// without reading whether it is still on its key's chain keeps it,
/// unfindable, at zero: it fails this.)
#[test]
fn a_lockless_zero_races_a_kill() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        drop(t.find_or_insert_with(1, |_| value(&drops, true)));
        let revived = t.find(&1).expect("kept, listed");
        let remove = {
            let t = t.clone();
            thread::spawn(move || assert!(t.remove(&1)))
        };
        let put = thread::spawn(move || drop(revived));
        remove.join().unwrap();
        put.join().unwrap();
        assert_eq!((t.len(), t.unused(), drops.load(SeqCst)), (0, 0, 1));
    });
}

/// A lockless zero racing `Handle::dont_keep`: a lookup revives a listed
/// entry, marks it not to be kept and drops it, while the other holder
/// drops its last handle. Whichever put is the last sees the mark (it was
/// made under a reference, before that reference's put) and kills it.
/// (The mutant that keeps a listed entry at a lockless zero without
/// reading the mark fails this.)
#[test]
fn a_lockless_zero_races_dont_keep() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        drop(t.find_or_insert_with(1, |_| value(&drops, true)));
        let revived = t.find(&1).expect("kept, listed");
        let unlink = {
            let t = t.clone();
            thread::spawn(move || {
                let h = t.find(&1).expect("held by the other thread, or kept");
                h.keep.store(false, SeqCst);
                h.dont_keep();
            })
        };
        let put = thread::spawn(move || drop(revived));
        unlink.join().unwrap();
        put.join().unwrap();
        assert_eq!((t.len(), t.unused(), drops.load(SeqCst)), (0, 0, 1));
    });
}

/// A lockless zero racing the table's drop: a listed entry's last put
/// keeps it without the lock while the teardown closes the table and
/// kills what is unused. Either the teardown finds it at zero and kills
/// it, or the put comes after the teardown's look at it and sees the
/// table closed. (The mutant that keeps a listed entry at a lockless zero
/// without reading whether the table is open leaks it: it fails this.)
#[test]
fn a_lockless_zero_races_the_tables_drop() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = Table::with_keep(
            Config {
                buckets: 1,
                max_unused: 4,
                ..Config::default()
            },
            |_, v: &Value| v.keep.load(SeqCst),
        );
        drop(t.find_or_insert_with(1, |_| value(&drops, true)));
        let revived = t.find(&1).expect("kept, listed");
        let teardown = thread::spawn(move || drop(t));
        let put = thread::spawn(move || drop(revived));
        teardown.join().unwrap();
        put.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1, "dropped once, nothing kept");
    });
}

/// The release of a listed entry races the shrinker's unlisting of it:
/// the release reads the listed flag without the list's lock, then takes
/// the lock and reads it again before it unlists, since the shrinker may
/// have unlisted the entry in between (it pops the oldest under the
/// list's lock, then finds it dead, or kills it). The list and its length
/// stay exact. (The mutant without the second read unlists the entry
/// twice: the length wraps below zero and this fails.)
#[test]
fn an_lru_remove_races_a_shrink() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        drop(t.find_or_insert_with(1, |_| value(&drops, true)));
        assert_eq!(t.unused(), 1, "kept, listed");
        let remove = {
            let t = t.clone();
            // `false` when the shrinker killed it first.
            thread::spawn(move || t.remove(&1))
        };
        let shrink = {
            let t = t.clone();
            thread::spawn(move || t.shrink(1))
        };
        let removed = remove.join().unwrap();
        let killed = shrink.join().unwrap();
        assert!(removed || killed == 1, "one of them ended it");
        assert_eq!((t.len(), t.unused(), drops.load(SeqCst)), (0, 0, 1));
    });
}

/// An unlink races a lookup that misses and inserts, as a user's cache on
/// the table does it: the unlink changes the backing store, then removes
/// the key; the lookup's `make` reads the backing store. Once `remove` has
/// returned, no entry made from the store before the change is findable:
/// the insert in flight either linked its entry before the remove took
/// the key's bucket lock (and the remove takes it out) or reads the store
/// after. (A `remove` that looks for the entry without that lock, a
/// lockless find and then an unhash, misses the entry whose `make` is
/// running and leaves it findable after the unlink: this fails.)
#[test]
fn an_unlink_races_a_lookup() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let t = table();
        // The backing store: whether the file exists.
        let exists = Arc::new(AtomicBool::new(true));
        let lookup = {
            let (t, exists, drops) = (t.clone(), exists.clone(), drops.clone());
            thread::spawn(move || t.find_or_insert_with(1, |_| value(&drops, exists.load(SeqCst))))
        };
        let unlink = {
            let (t, exists) = (t.clone(), exists.clone());
            thread::spawn(move || {
                exists.store(false, SeqCst);
                t.remove(&1);
                // Right after the remove: nothing made while the file
                // existed is findable.
                if let Some(found) = t.find(&1) {
                    assert!(
                        !found.keep.load(SeqCst),
                        "a stale entry outlived its unlink"
                    );
                }
            })
        };
        let held = lookup.join().unwrap();
        unlink.join().unwrap();
        if let Some(found) = t.find(&1) {
            assert!(
                !found.keep.load(SeqCst),
                "a stale entry outlived its unlink"
            );
        }
        drop(held);
    });
}

/// A rename races a reader that looks up the old name, then the new one,
/// both cached beforehand: the store moves file 1 from name 1 to name 2
/// (replacing file 2 there), then `Table::rename` takes both names out of
/// the lookups. A reader that has seen name 1 gone (a miss, answered by
/// the store after the rename) must then see name 2 as it is after the
/// rename, never its old entry: the two names did not change for it in
/// an order the store never had. (A rename that removes one name and then
/// the other, each under its own lock, lets the reader see name 1 gone
/// and then find name 2's old entry: this fails.)
#[test]
fn a_rename_races_a_lookup_of_both_names() {
    model(|| {
        // The store: which file each name holds (0: none), renamed at once.
        let store = Arc::new(loom::sync::Mutex::new([0u8, 1, 2]));
        let t = Arc::new(Table::with_keep(
            Config {
                buckets: 1,
                max_unused: 4,
                ..Config::default()
            },
            |_, _| true,
        ));
        let lookup = {
            let (t, store) = (t.clone(), store.clone());
            move |name: u8| -> u8 {
                *t.find_or_insert_with(name, |_| store.lock().unwrap()[usize::from(name)])
            }
        };
        // Both names cached, unused.
        assert_eq!((lookup(1), lookup(2)), (1, 2));
        let rename = {
            let (t, store) = (t.clone(), store.clone());
            thread::spawn(move || {
                *store.lock().unwrap() = [0, 0, 1];
                assert_eq!(t.rename(&1, &2), (true, true));
            })
        };
        let reader = thread::spawn(move || (lookup(1), lookup(2)));
        let (old_name, new_name) = reader.join().unwrap();
        rename.join().unwrap();
        if old_name == 0 {
            assert_eq!(
                new_name, 1,
                "the old name gone, then the new name's old file"
            );
        }
        // At rest, what is cached is what the store says.
        assert!(t.find(&1).is_none_or(|h| *h == 0));
        assert!(t.find(&2).is_none_or(|h| *h == 1));
    });
}
