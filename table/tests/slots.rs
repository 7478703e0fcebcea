//! Ids and the type-stable slots behind them: a slot is reused by a later
//! entry (with the next generation in its id) only after its last entry's
//! grace period, and a stale, bogus or reused id is refused without
//! touching the entry that holds the slot now. Also run under Miri and
//! ThreadSanitizer by `.ci/run`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lockref_table::{Config, Table, TableError};

/// Counts its drops.
struct Value(Arc<AtomicUsize>);

impl Drop for Value {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

const SLOT_BITS: u32 = 32;

fn table() -> Table<u64, Value> {
    Table::new(Config {
        buckets: 4,
        max_unused: 0,
        first_id: 10,
    })
}

/// Hands out entries for fresh keys, running the epoch's garbage between
/// them, until one takes the slot of `old` (which is dead): returns its id
/// and key. Bounded in attempts, not in time; the collector reuses the
/// slot as soon as no thread pinned before the death is still pinned.
fn reuse_the_slot_of(table: &Table<u64, Value>, old: u64, drops: &Arc<AtomicUsize>) -> (u64, u64) {
    for key in 1_000.. {
        assert!(key < 1_000_000, "the slot of a dead entry is reused");
        crossbeam_epoch::pin().flush();
        let id = table.hand_out(key, |_| Value(drops.clone()));
        if id & ((1 << SLOT_BITS) - 1) == old & ((1 << SLOT_BITS) - 1) {
            return (id, key);
        }
        table.forget(id, 1).unwrap();
    }
    unreachable!()
}

#[test]
fn ids_start_at_first_id_and_name_their_slot_and_its_generation() {
    let drops = Arc::default();
    let t = table();
    let a = t.hand_out(1, |_| Value(Arc::clone(&drops)));
    let b = t.hand_out(2, |_| Value(Arc::clone(&drops)));
    assert_eq!((a, b), (10, 11), "fresh slots: consecutive ids");
    t.forget(a, 1).unwrap();
    let (reused, _) = reuse_the_slot_of(&t, a, &drops);
    assert_eq!(reused >> SLOT_BITS, 1, "the slot's second generation");
    assert_ne!(reused, a, "an id is never handed out twice");
}

#[test]
fn a_stale_id_is_refused_and_leaves_the_slots_new_entry_untouched() {
    let drops = Arc::default();
    let t = table();
    let old = t.hand_out(1, |_| Value(Arc::clone(&drops)));
    t.forget(old, 1).unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    let (new, key) = reuse_the_slot_of(&t, old, &drops);
    let held = t.find(&key).unwrap();
    held.reset_lockref_stats();

    assert_eq!(t.get(old).err(), Some(TableError::UnknownId(old)));
    assert_eq!(t.forget(old, 1), Err(TableError::UnknownId(old)));
    assert_eq!(t.peer_refs(old), None);
    assert_eq!(
        held.lockref_stats().operations,
        0,
        "a stale id writes nothing on the slot's new entry"
    );
    assert_eq!((t.peer_refs(new), held.count()), (Some(1), 2));
    assert_eq!(t.get(new).unwrap().key(), &key);
}

#[test]
fn bogus_ids_are_refused() {
    let drops = Arc::default();
    let t = table();
    let id = t.hand_out(1, |_| Value(Arc::clone(&drops)));
    for bogus in [
        0,
        9,
        11,
        id + (1 << SLOT_BITS),
        1 << 40,
        u64::MAX - 1,
        u64::MAX,
    ] {
        assert_eq!(t.get(bogus).err(), Some(TableError::UnknownId(bogus)));
        assert_eq!(t.forget(bogus, 1), Err(TableError::UnknownId(bogus)));
        assert_eq!(t.peer_refs(bogus), None);
    }
    assert_eq!(
        t.peer_refs(id),
        Some(1),
        "nothing counted against the entry"
    );
}

#[test]
fn handles_outlive_the_table_across_reused_slots() {
    let drops = Arc::default();
    let t = table();
    let old = t.hand_out(1, |_| Value(Arc::clone(&drops)));
    t.forget(old, 1).unwrap();
    let (new, key) = reuse_the_slot_of(&t, old, &drops);
    let held = t.get(new).unwrap();
    drop(t);
    assert_eq!((held.key(), held.id(), held.peer_refs()), (&key, new, 0));
    let made = drops.load(Ordering::Relaxed);
    drop(held);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        made + 1,
        "dies with its last handle"
    );
}

#[test]
#[should_panic(expected = "first_id is at most 2^62")]
fn a_first_id_that_would_run_out_of_ids_is_refused() {
    let _ = Table::<u64, Value>::new(Config {
        first_id: (1 << 62) + 1,
        ..Config::default()
    });
}

/// Two threads make entries and let them die (their slots recycled and
/// reused as the epoch moves on) while two others look up every id made so
/// far, stale ones included: a lookup gets the entry it named, with its
/// key, or nothing; at the end every value is dropped once.
#[test]
fn lookups_by_stale_ids_race_the_reuse_of_slots() {
    let rounds: u64 = if cfg!(miri) { 40 } else { 4_000 };
    let drops = Arc::new(AtomicUsize::new(0));
    let t = table();
    let made: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::default();
    std::thread::scope(|s| {
        for maker in 0..2u64 {
            let (t, made, drops) = (&t, &made, &drops);
            s.spawn(move || {
                for round in 0..rounds {
                    let key = maker << 32 | round;
                    let id = t.hand_out(key, |_| Value(drops.clone()));
                    made.lock().unwrap().push((id, key));
                    t.forget(id, 1).unwrap();
                    // Hands the recycling to the collector now (it runs
                    // once no thread is pinned from before the death).
                    crossbeam_epoch::pin().flush();
                }
            });
        }
        for looker in 0..2usize {
            let (t, made) = (&t, &made);
            s.spawn(move || {
                for round in 0..rounds as usize {
                    let snapshot = made.lock().unwrap().clone();
                    let Some(&(id, key)) =
                        snapshot.get((round * 7 + looker) % snapshot.len().max(1))
                    else {
                        continue;
                    };
                    match t.get(id) {
                        Ok(h) => assert_eq!((h.id(), *h.key()), (id, key)),
                        Err(e) => assert_eq!(e, TableError::UnknownId(id)),
                    }
                }
            });
        }
    });
    let ids: std::collections::HashSet<u64> = made.lock().unwrap().iter().map(|m| m.0).collect();
    assert_eq!(ids.len() as u64, 2 * rounds, "no id handed out twice");
    let reused = ids.iter().filter(|&&id| (id - 10) >> SLOT_BITS > 0).count();
    eprintln!("{reused} of {} entries took a reused slot", ids.len());
    assert!(reused > 0, "slots were reused: the race this test is about");
    assert_eq!(
        (t.len(), drops.load(Ordering::Relaxed)),
        (0, 2 * rounds as usize)
    );
}

/// The table's shared state (its slots, its `keep`) goes once the table
/// and every entry are gone. A slot keeps its hold on the state through
/// its vacancies: the slots on the recycled stack let go of theirs at the
/// table's drop, and those recycled after it let go of their own. (A slot
/// that kept its hold would leak the state: the token `keep` owns would
/// never be dropped.)
#[test]
fn the_tables_state_goes_with_its_last_slot() {
    let token = Arc::new(());
    let owned_by_keep = Arc::clone(&token);
    let t = Table::with_keep(
        Config {
            buckets: 4,
            max_unused: 0,
            first_id: 10,
        },
        move |_: &u64, _: &Value| Arc::strong_count(&owned_by_keep) == 0,
    );
    let drops = Arc::default();
    // Entries made and forgotten: their slots are on the recycled stack
    // once the garbage is collected, before the drop.
    for key in 0..8 {
        let id = t.hand_out(key, |_| Value(Arc::clone(&drops)));
        t.forget(id, 1).unwrap();
    }
    for _ in 0..100 {
        crossbeam_epoch::pin().flush();
    }
    // Entries alive across the drop: recycled after it.
    let handles: Vec<_> = (100..104)
        .map(|key| t.find_or_insert_with(key, |_| Value(Arc::clone(&drops))))
        .collect();
    drop(t);
    assert!(Arc::strong_count(&token) > 1, "the handles keep the state");
    drop(handles);
    for _ in 0..1_000_000 {
        if Arc::strong_count(&token) == 1 {
            break;
        }
        crossbeam_epoch::pin().flush();
        std::thread::yield_now();
    }
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the state went with its last slot"
    );
    assert_eq!(drops.load(Ordering::Relaxed), 12, "every value dropped");
}
