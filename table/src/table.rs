//! [`Table`]: the concurrent map from keys to counted entries, and its
//! protocol ids.

use core::hash::{BuildHasher, Hash};
use core::ptr::NonNull;
use std::collections::hash_map::RandomState;

use lockref::CountedRef;

use crate::error::TableError;
use crate::handle::Handle;
use crate::node::Node;
use crate::shared::{HashKey, Keep, Shared};
use crate::sync::{Arc, Ordering};

/// How a [`Table`] is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Buckets of the index by key (ids need none: an id names its
    /// slot): rounded up to a power of two, at most 2^24. The table is never resized (as the
    /// kernel's dentry and inode hashes are sized once): size it for the
    /// entries you expect. Default 1024.
    pub buckets: usize,
    /// The most unused entries (count zero, kept by `keep`) held on the
    /// LRU: an insert first reclaims the oldest until the new entry, once
    /// unused too, still fits. `0` keeps none. Default 4096.
    pub max_unused: usize,
    /// The first id handed out, at most 2^62. An id is `first_id +
    /// (generation << 32 | slot)`: the first entries get `first_id`,
    /// `first_id + 1`, ... (their slots' first generation), and an entry
    /// that reuses a slot gets its next generation, so no id is handed out
    /// twice. Default 1 (the FUSE root's node id, for a table whose first
    /// entry is the root).
    pub first_id: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            buckets: 1024,
            max_unused: 4096,
            first_id: 1,
        }
    }
}

/// A concurrent table from keys to counted entries, on lockref's
/// [`CountedRef`]: a FUSE inode table, an fd table, a cache of objects
/// found by name.
///
/// - **Lookups take no lock** and write nothing shared but the found
///   entry's count ([`find`](Self::find), [`get`](Self::get)): by key
///   they walk a bucket's chain under an epoch pin (the kernel's RCU
///   walk); by id they take no pin at all, since an id names a slot of
///   type-stable memory (the kernel's `SLAB_TYPESAFE_BY_RCU`), whose id is
///   compared again after the reference is taken. The reference is
///   `lockref_get_not_dead`, which revives an entry kept at zero and never
///   returns a dying one.
/// - **Inserts are atomic per key** ([`find_or_insert_with`](Self::find_or_insert_with)):
///   under the key's bucket lock, a live entry is returned, and an absent or
///   dying one is replaced.
/// - **The decision at zero is the user's**, in safe code: the `keep`
///   given to [`with_keep`](Self::with_keep) says whether an entry whose
///   last reference went stays (unused, findable, on a bounded LRU) or
///   dies. The table does the kill, the removal under the bucket lock and
///   the deferred reuse of the entry's memory.
/// - **The last put of a cached entry takes no lock** (the kernel's
///   `fast_dput`): it drops the count to zero under an epoch pin and reads
///   the entry's flags. An entry already listed stays, with no further
///   write. One removed ([`remove`](Self::remove)), marked
///   ([`Handle::dont_keep`]), of a dropped table or of a table that keeps
///   none is sure to die: its last put reads that before it drops its
///   reference, and drops it and kills the entry in one compare-and-swap
///   (no pin), unless a lookup took a reference meanwhile. Only an entry not listed yet takes its
///   lock, for `keep` to decide and the LRU to list it.
/// - **Protocol ids** ([`hand_out`](Self::hand_out), [`Handle::into_id`],
///   [`get`](Self::get), [`forget`](Self::forget)): a reference handed to
///   a peer (a FUSE node id) is counted, and the peer cannot give back
///   more than it was given, nor name an entry that is gone: a slot is
///   reused only after its last entry's grace period, with a new
///   generation in its id, so no id is handed out twice. The peer's references hold one of the entry's between them,
///   so handing out one more, and a forget that is not the last, are one
///   atomic on the peer's count and take no lock.
/// - **Handles never outlive what they point into**: every entry keeps the
///   table's shared state (and the slots) alive, so a handle may outlive
///   the `Table`.
///   Dropping the table ends the peer's references and kills the unused
///   entries; entries still referenced die at their last put.
///
/// Memory: the slots of the most entries live at once stay allocated
/// (reused, never freed) until the table's state goes, with the last
/// handle; keys and values are dropped as their entries die.
///
/// **When `keep` is asked.** Under the entry's lock, at count zero, when
/// an entry that is not on the LRU loses its last reference: a yes lists
/// it (if the bound has room). The answer then stands while the entry
/// stays listed: its later last puts keep it without asking `keep` again
/// (and without the lock), across revivals. It is asked again only after
/// the entry left the LRU alive (the reclaimer unlists an entry it finds
/// in use). So a change to what `keep` reads does not by itself undo a
/// yes: to have a cached entry die at its next last put, call
/// [`Handle::dont_keep`] on it, or [`remove`](Self::remove) its key (the
/// kernel's `d_mark_dontcache` and `d_drop`), while holding a reference.
///
/// The `keep` function and the `make` function of an insert run with the
/// table's locks held (the entry's lock, the key's bucket lock): they must
/// not call into the table or drop one of its handles.
///
/// # Examples
///
/// An inode cache: `LOOKUP` hands a reference to the kernel, `FORGET`
/// gives some back (more than was given is refused), an unlinked inode
/// dies with its last reference, a linked one stays cached at zero.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use lockref_table::{Config, Table, TableError};
///
/// struct Inode { linked: AtomicBool }
///
/// let table = Table::with_keep(Config::default(), |_ino: &u64, i: &Inode| {
///     i.linked.load(Ordering::Relaxed)
/// });
/// // LOOKUP: find or make the inode, hand a reference to the kernel.
/// let lookup = |ino| table.hand_out(ino, |_id| Inode { linked: AtomicBool::new(true) });
/// let id = lookup(7);
/// assert_eq!(lookup(7), id); // the same inode, a second reference
/// assert_eq!(table.forget(id, 3), Err(TableError::MoreThanHeld { id, forget: 3, held: 2 }));
/// table.forget(id, 2).unwrap();
/// assert_eq!(table.unused(), 1); // linked: cached at zero
/// let open = table.get(id).unwrap(); // revived
/// open.linked.store(false, Ordering::Relaxed); // unlink...
/// open.dont_keep(); // ...and say so: a listed entry's `keep` is not asked again
/// drop(open); // the last reference: killed
/// assert_eq!((table.len(), table.get(id).err()), (0, Some(TableError::UnknownId(id))));
/// ```
pub struct Table<K: Send + Sync, V: Send + Sync> {
    shared: Arc<Shared<K, V>>,
}

impl<K, V> Table<K, V>
where
    K: Hash + Eq + Send + Sync,
    V: Send + Sync,
{
    /// A table that keeps no entry at zero: each dies with its last
    /// reference.
    pub fn new(config: Config) -> Self {
        Self::with_keep(config, |_, _| false)
    }

    /// A table whose entries, when their last reference goes, stay
    /// (unused, findable, reclaimed oldest first past
    /// [`Config::max_unused`]) if `keep` says so, and die otherwise.
    /// `keep` is asked when an entry not yet cached loses its last
    /// reference; a cached entry stays cached at its later last puts
    /// until [`Handle::dont_keep`] or [`remove`](Self::remove) (see
    /// [`Table`], "When `keep` is asked").
    ///
    /// Keys are hashed with the standard library's `RandomState`
    /// (SipHash, seeded per table), as `HashMap`'s are: chains stay short
    /// even for keys an adversary chooses (file names a user picks).
    pub fn with_keep(
        config: Config,
        keep: impl Fn(&K, &V) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self::with_keep_and_hasher(config, keep, RandomState::new())
    }

    /// [`with_keep`](Self::with_keep), its keys hashed by `hasher`: a
    /// faster hash for keys no adversary chooses (inode numbers the host
    /// filesystem hands out, ids), as `HashMap::with_hasher` allows. The
    /// hash is called through one indirect call.
    pub fn with_keep_and_hasher<S>(
        config: Config,
        keep: impl Fn(&K, &V) -> bool + Send + Sync + 'static,
        hasher: S,
    ) -> Self
    where
        S: BuildHasher + Send + Sync + 'static,
    {
        let keep: Keep<K, V> = Box::new(keep);
        let hash_key: HashKey<K> = Box::new(move |key: &K| hasher.hash_one(key));
        Table {
            shared: Arc::new(Shared::new(
                config.buckets,
                config.max_unused,
                config.first_id,
                keep,
                hash_key,
            )),
        }
    }

    /// The live entry of `key`, referenced (reviving one kept at zero), or
    /// `None`. Takes no lock; writes nothing but the entry's count.
    pub fn find(&self, key: &K) -> Option<Handle<K, V>> {
        self.find_hashed(self.shared.hash(key), key)
    }

    /// The live entry of `key`, referenced, or a new one with the value
    /// `make` builds from its id. Lockless when the entry is there; else
    /// under the key's bucket lock, where two inserts of one key make one
    /// entry and a dying entry is replaced.
    pub fn find_or_insert_with(&self, key: K, make: impl FnOnce(u64) -> V) -> Handle<K, V> {
        let hash = self.shared.hash(&key);
        // One pin for the walk and, after a miss, the insert (whose own
        // pins are then counts).
        let guard = crossbeam_epoch::pin();
        match self.find_pinned(hash, &key, &guard) {
            Some(found) => found,
            None => self.insert_hashed(hash, key, make),
        }
    }

    /// Hands a reference to `key`'s entry, made by `make` if absent, to
    /// the peer, and returns its id: `find_or_insert_with(key,
    /// make).into_id()` (a FUSE `LOOKUP`), in one atomic on the entry and
    /// no lock when the peer holds it already.
    pub fn hand_out(&self, key: K, make: impl FnOnce(u64) -> V) -> u64 {
        self.hand_out_if(key, make, |_| true)
            .expect("every entry is accepted")
    }

    /// [`hand_out`](Self::hand_out) if `accept` takes the entry found, or
    /// made: `None`, with nothing handed out and every count as it was,
    /// if it refuses it. For a key that does not say everything about
    /// the entry (a FUSE server's node id, whose host inode the host may
    /// have replaced by another with the same number): the entry is
    /// checked under the reference just handed out, so a hit costs one
    /// atomic on the entry, where `hand_out` and a `get` to check would
    /// cost three. A refused entry's reference is given back as
    /// [`forget`](Self::forget) gives one back (its last reference kills
    /// it, or keeps it, as any).
    pub fn hand_out_if(
        &self,
        key: K,
        make: impl FnOnce(u64) -> V,
        accept: impl FnOnce(&V) -> bool,
    ) -> Option<u64> {
        let hash = self.shared.hash(&key);
        // One pin for the walk and, after a miss, the insert (whose own
        // pins are then counts).
        let guard = crossbeam_epoch::pin();
        let found = {
            match self.shared.find_key(hash, &key, &guard) {
                Some(found) => {
                    // SAFETY: found on its chain while pinned: its slot
                    // holds it until the pin ends.
                    let node = unsafe { found.as_ref() };
                    if node.counts.peer.add_another() {
                        let id = node.id();
                        // SAFETY: the peer's reference just added holds
                        // the entry, and with it its value.
                        if accept(unsafe { node.value() }) {
                            return Some(id);
                        }
                        drop(guard);
                        // The reference just added: at least one is held.
                        self.forget(id, 1)
                            .expect("the peer holds the reference just added");
                        return None;
                    }
                    // SAFETY: as above; the chain's pointer has the
                    // slots' provenance.
                    unsafe { CountedRef::try_get(found) }.map(|counted| Handle { counted })
                }
                None => None,
            }
        };
        if let Some(entry) = found {
            drop(guard);
            return accept(&entry).then(|| entry.into_id());
        }
        self.shared.reclaim_for_insert();
        let (counted, made) = Shared::find_or_insert(&self.shared, hash, key, make, true);
        drop(guard);
        let entry = Handle { counted };
        if !made {
            return accept(&entry).then(|| entry.into_id());
        }
        // Made with its reference the peer's: as a hit above, it is
        // checked under that reference, and given back if refused.
        let id = entry.id();
        let node = CountedRef::into_raw(entry.counted);
        // SAFETY: the peer's reference, set at the fill, holds the entry
        // and its value.
        if accept(unsafe { node.as_ref().value() }) {
            return Some(id);
        }
        self.forget(id, 1)
            .expect("the peer holds the reference it was made with");
        None
    }

    /// `find` with the key's hash.
    fn find_hashed(&self, hash: u64, key: &K) -> Option<Handle<K, V>> {
        self.find_pinned(hash, key, &crossbeam_epoch::pin())
    }

    /// `find` with the key's hash, pinned by `guard`.
    fn find_pinned(
        &self,
        hash: u64,
        key: &K,
        guard: &crossbeam_epoch::Guard,
    ) -> Option<Handle<K, V>> {
        let found = self.shared.find_key(hash, key, guard)?;
        // SAFETY: found on its chain while pinned: its slot holds it until
        // the pin ends; the chain's pointer has the slots' provenance.
        let counted = unsafe { CountedRef::try_get(found) }?;
        Some(Handle { counted })
    }

    /// The insert after a miss: reclaims past the bound, then finds or
    /// inserts under the key's bucket lock.
    fn insert_hashed(&self, hash: u64, key: K, make: impl FnOnce(u64) -> V) -> Handle<K, V> {
        self.shared.reclaim_for_insert();
        Handle {
            counted: Shared::find_or_insert(&self.shared, hash, key, make, false).0,
        }
    }

    /// The live entry with `id`, referenced (a request naming a node id).
    /// Takes no lock and no epoch pin: the id names a slot of type-stable
    /// memory, whose id is compared before and after the reference is
    /// taken (a stale id's slot may hold a later entry by then: that
    /// reference is put back).
    ///
    /// # Errors
    ///
    /// [`TableError::UnknownId`] if no live entry has it.
    pub fn get(&self, id: u64) -> Result<Handle<K, V>, TableError> {
        let unknown = TableError::UnknownId(id);
        let slot = self.shared.slots.locate(id).ok_or(unknown)?;
        // SAFETY: the slots' memory lives while the table does.
        let node = unsafe { slot.as_ref() };
        // Relaxed: a filter, so that a stale or bogus id writes nothing;
        // the check that counts is the one after the reference.
        if node.id.load(Ordering::Relaxed) != id {
            return Err(unknown);
        }
        // SAFETY: type-stable memory, valid while the table is; the slots'
        // pointer has their provenance.
        let counted = unsafe { CountedRef::try_get(slot) }.ok_or(unknown)?;
        let handle = Handle { counted };
        // The reference is on whatever entry holds the slot now: the one
        // whose revival it was taken after, which stored its id first.
        if handle.id() != id {
            return Err(unknown);
        }
        Ok(handle)
    }

    /// Gives back `n` of the references the peer was handed for `id` (a
    /// FUSE `FORGET`). Takes no lock unless they are the last references.
    /// It takes an epoch pin: the pin holds the recycling of the slot back
    /// while the id is compared and the peer's count changed (a count
    /// wider than the lockref's has no room for the slot's generation).
    ///
    /// # Errors
    ///
    /// [`TableError::UnknownId`] if no live entry has the id,
    /// [`TableError::MoreThanHeld`] if the peer holds fewer than `n`:
    /// nothing changes.
    pub fn forget(&self, id: u64, n: u64) -> Result<(), TableError> {
        let guard = crossbeam_epoch::pin();
        let found = self
            .shared
            .find_id(id, &guard)
            .ok_or(TableError::UnknownId(id))?;
        // SAFETY: the slots' memory lives while the table does; the slot
        // holds entry `id` until the pin ends (`Shared::find_id`).
        let node = unsafe { found.as_ref() };
        let last = node.counts.peer.forget(n).map_err(|held| {
            if held == 0 && node.counts.lockref.is_dead() {
                TableError::UnknownId(id)
            } else {
                TableError::MoreThanHeld {
                    id,
                    forget: n,
                    held,
                }
            }
        })?;
        if last {
            // SAFETY: the lockref reference the peer's references held
            // between them, now this call's (`PeerRefs::forget`).
            unsafe { CountedRef::put_many(found, 1) }.expect("the peer's reference is counted");
        }
        drop(guard);
        Ok(())
    }

    /// The references the peer holds on `id`'s entry now, if it is live.
    pub fn peer_refs(&self, id: u64) -> Option<u64> {
        let guard = crossbeam_epoch::pin();
        let found = self.shared.find_id(id, &guard)?;
        // SAFETY: as in `forget`.
        let node = unsafe { found.as_ref() };
        (!node.counts.lockref.is_dead()).then(|| node.counts.peer.held())
    }

    /// Takes `key`'s entry out of the lookups by key (an unlink): it stays
    /// reachable by id and through its handles while referenced, and dies
    /// at its last put whatever `keep` says; an unused one dies now.
    /// Returns whether there was a live one.
    ///
    /// It runs under the key's bucket lock, as inserts of the key do, so
    /// it is linearizable with them: an insert in flight either linked its
    /// entry before (this removes it) or runs its `make` after this
    /// returns. So "change the backing store, then `remove`" leaves no
    /// stale entry, as long as `make` reads the backing store itself (a
    /// value built from a read made before the call to
    /// [`find_or_insert_with`](Self::find_or_insert_with) can be older
    /// than any remove).
    pub fn remove(&self, key: &K) -> bool {
        let guard = crossbeam_epoch::pin();
        let removed = self.shared.remove_key(self.shared.hash(key), key, &guard);
        Self::end_removed(removed, &guard)
    }

    /// The table's side of a rename in the store behind it (`from` moved
    /// to `to`, replacing what `to` named): call it after the store's
    /// rename, as [`remove`](Self::remove) after an unlink. Both keys'
    /// entries leave the lookups at once, under both keys' bucket locks:
    /// no lookup, after it has seen one key's entry gone, meets the
    /// other's from before the rename, and no insert of either key made
    /// from the store before the rename is findable after it returns.
    /// Returns whether each (`from`, then `to`) had a live entry.
    ///
    /// An entry is never re-keyed: its id, which entries below it may key
    /// on (a directory's children, keyed by its id and their names), is
    /// for its life. So the next lookup of `to` makes a new entry, with a
    /// new id, from the store. What was keyed on the old entry's id (the
    /// moved directory's cached children) is invalidated: it is reachable
    /// only through handles already out, whose
    /// [`Handle::is_findable`] on the old entry is `false` from here on
    /// (a tree on the table then answers a lookup below it with its own
    /// "stale" error, as `examples/dentry_tree.rs` does), and the
    /// shrinker reclaims what is cached.
    pub fn rename(&self, from: &K, to: &K) -> (bool, bool) {
        let guard = crossbeam_epoch::pin();
        let [from_removed, to_removed] = self.shared.remove_keys(
            (self.shared.hash(from), from),
            (self.shared.hash(to), to),
            &guard,
        );
        (
            Self::end_removed(from_removed, &guard),
            Self::end_removed(to_removed, &guard),
        )
    }

    /// After `remove_key` returned `removed` under `guard`: kills it if it
    /// is unused (a referenced one dies at its last put, off its chain).
    /// Returns whether there was one.
    fn end_removed(removed: Option<NonNull<Node<K, V>>>, _guard: &crossbeam_epoch::Guard) -> bool {
        let Some(removed) = removed else {
            return false;
        };
        // After the bucket lock (the kill's release takes it): the node is
        // valid under the pin. An unused entry dies here rather than wait
        // for the shrinker.
        // SAFETY: found on its chain under `_guard`, still held: the slot
        // holds the entry (or, once it died, its dead count) until the pin
        // ends; the chain's pointer has the slots' provenance.
        unsafe { CountedRef::kill_unused(removed) };
        true
    }

    /// Entries not yet released: referenced or kept at zero. A sum of the
    /// buckets' counts (each kept under its bucket's lock, so that an
    /// insert and a release write no count shared by the whole table):
    /// it reads every bucket, for tests and reports, not hot paths.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries on the LRU of unused ones (a revived one stays counted there
    /// until the reclaimer or its next last put meets it).
    pub fn unused(&self) -> usize {
        self.shared.lru.len()
    }

    /// Reclaims up to `n` unused entries, oldest first (a shrinker).
    /// Returns how many died.
    pub fn shrink(&self, n: usize) -> usize {
        self.shared.shrink(n)
    }

    /// A handle to every live entry now (a snapshot; unused ones are
    /// revived by it, and kept again when the handles go).
    pub fn handles(&self) -> Vec<Handle<K, V>> {
        self.shared
            .slots
            .used()
            // SAFETY: type-stable memory, as in `get`; a reference taken is
            // on a live entry (whichever holds the slot now).
            .filter_map(|slot| unsafe { CountedRef::try_get(slot) })
            .map(|counted| Handle { counted })
            .collect()
    }

    /// The table's own lock acquisitions so far (feature `testing`): every
    /// bucket lock, and the LRU's lock in a shrink (not the LRU's lock
    /// that a last put or a release takes), for tests that count what a
    /// lookup or a forget takes.
    #[cfg(feature = "testing")]
    pub fn locks_taken(&self) -> usize {
        self.shared.locks_taken()
    }
}

impl<K: Send + Sync, V: Send + Sync> Drop for Table<K, V> {
    /// Ends the peer's references (a FUSE unmount need not send every
    /// `FORGET`) and kills every unused entry; entries with handles out
    /// die at their last put, which finds the table closed. The slots are
    /// freed with the table's state, after the last entry's grace period.
    fn drop(&mut self) {
        let shared = &*self.shared;
        shared.close();
        // The slots on the recycled stack let go of their holds on the
        // state (the table's own `Arc` keeps it until this drop ends);
        // a slot recycled from here on lets go of its own.
        shared.slots.close(|slot| {
            // SAFETY: a vacant slot off the closed stack: this call's
            // alone (no insert runs, a lookup by id reads only its id
            // and count).
            drop(unsafe { (*slot.as_ref().shared.get()).take() });
        });
        // No insert can run now (`&mut self`), so no slot takes a new
        // entry; entries may still die, on the threads of their handles.
        // A value whose drop panics does not stop the teardown: every
        // entry is ended, and the first panic propagates after.
        let mut first_panic = None;
        for slot in shared.slots.used() {
            let end = std::panic::AssertUnwindSafe(|| {
                // SAFETY: type-stable memory, valid while `shared` is.
                let node = unsafe { slot.as_ref() };
                if node.counts.peer.end() {
                    // SAFETY: the peer's lockref reference, now ours (a
                    // vacant slot's count of the peer's is zero).
                    let _ = unsafe { CountedRef::put_many(slot, 1) };
                }
                // A handle's last put either came before (kept it: killed
                // here) or comes after this kill's lock, and sees the table
                // closed. A vacant or dying slot is dead: nothing happens.
                // SAFETY: valid memory, the slots' provenance.
                unsafe { CountedRef::kill_unused(slot) };
            });
            if let Err(panic) = std::panic::catch_unwind(end) {
                first_panic.get_or_insert(panic);
            }
        }
        if let Some(panic) = first_panic {
            std::panic::resume_unwind(panic);
        }
    }
}
