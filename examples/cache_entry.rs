//! Basic use of a `LockRef`: cache entries in a table, found by a lookup
//! (`get_not_dead`) and dropped by a last put (`put_or_lock`) that decides,
//! under the entry's lock, whether the entry stays cached at count zero or
//! is killed.
//!
//! The table's mutex is the *outer* lock (a hash bucket's, a FUSE inode
//! map's). Lookups hold it only to find an entry and take a reference; the
//! count itself is changed locklessly. A kill marks the entry dead under
//! its own lock first, so no lookup can take a new reference, then removes
//! it from the table under the outer lock, so no lookup can still be
//! looking at it when it is freed. The entry lock is never held while
//! waiting for the table lock: no lock-order inversion.
//!
//! `cargo run --example cache_entry`

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::Mutex;

use lockref::{LockRef, PutOrLock};

/// What the entry's lock guards: whether the entry may stay cached at zero.
struct State {
    unlinked: bool,
}

struct Entry {
    name: String,
    state: LockRef<State>,
}

struct Cache {
    table: Mutex<HashMap<String, NonNull<Entry>>>,
}

// SAFETY: the table's pointers are reached only under its mutex, and the
// entries they point to are `Sync` (an immutable name and a `LockRef`).
unsafe impl Sync for Cache {}

/// A counted reference to an entry; dropping it is the put.
struct EntryRef<'c> {
    cache: &'c Cache,
    entry: NonNull<Entry>,
}

// SAFETY: entries are shared between threads only through their lockref
// and immutable name; the handle is a counted reference.
unsafe impl Send for EntryRef<'_> {}

impl Cache {
    fn new() -> Self {
        Cache {
            table: Mutex::new(HashMap::new()),
        }
    }

    /// Finds `name`, or creates it, and returns a reference.
    fn lookup(&self, name: &str) -> EntryRef<'_> {
        let mut table = self.table.lock().unwrap();
        if let Some(&entry) = table.get(name) {
            // SAFETY: the entry is in the table, and entries leave it
            // (and are freed) only under this lock, which we hold.
            if unsafe { entry.as_ref() }.state.get_not_dead() {
                return EntryRef { cache: self, entry };
            }
            // Dead: its killer will remove it once we let go of the table.
        }
        let entry = NonNull::from(Box::leak(Box::new(Entry {
            name: name.to_string(),
            state: LockRef::new(State { unlinked: false }),
        })));
        table.insert(name.to_string(), entry);
        EntryRef { cache: self, entry }
    }

    fn cached(&self) -> usize {
        self.table.lock().unwrap().len()
    }
}

impl EntryRef<'_> {
    fn entry(&self) -> &Entry {
        // SAFETY: we hold a reference, so the entry is alive.
        unsafe { self.entry.as_ref() }
    }

    /// Marks the entry to be killed when its last reference goes.
    fn unlink(&self) {
        self.entry().state.lock().unlinked = true;
    }
}

impl Drop for EntryRef<'_> {
    fn drop(&mut self) {
        let entry = self.entry();
        // Lockless unless this is the last reference.
        let PutOrLock::Locked(mut guard) = entry.state.put_or_lock() else {
            return;
        };
        // The last reference, with the entry locked: decide.
        guard.decrement().expect("we held a reference");
        if !guard.unlinked {
            return; // keep: cached at count zero, found again by lookups
        }
        guard.mark_dead(); // kill: no lookup can take a reference now
        drop(guard);
        let mut table = self.cache.table.lock().unwrap();
        // A lookup may have replaced the dead entry with a new one.
        if table.get(&entry.name) == Some(&self.entry) {
            table.remove(&entry.name);
        }
        drop(table);
        // SAFETY: dead, so nobody takes a new reference; out of the table,
        // so no lookup can reach it; ours was the last reference.
        drop(unsafe { Box::from_raw(self.entry.as_ptr()) });
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        for (_, entry) in self.table.get_mut().unwrap().drain() {
            // SAFETY: `&mut self`: no reference to any entry is left (they
            // borrow the cache).
            drop(unsafe { Box::from_raw(entry.as_ptr()) });
        }
    }
}

fn main() {
    let cache = Cache::new();
    let a = cache.lookup("passwd");
    let b = cache.lookup("passwd"); // found: get_not_dead, lockless
    println!(
        "two references: count {}",
        a.entry().state.count().unwrap_or(0)
    );
    drop(a);
    drop(b); // the last put keeps it: cached at count zero
    println!("kept at zero: {} cached", cache.cached());

    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..10_000 {
                    drop(cache.lookup("passwd"));
                }
            });
        }
    });
    let c = cache.lookup("passwd");
    println!(
        "after 40000 lookups from 4 threads: count {}",
        c.entry().state.count().unwrap_or(0)
    );
    c.unlink();
    drop(c); // the last put kills it
    println!("killed: {} cached", cache.cached());
    assert_eq!(cache.cached(), 0);
}
