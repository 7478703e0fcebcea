//! [`Shared`]: what a table's entries point into (the slots that hold
//! them, the key buckets, the LRU, the counters and the user's `keep`),
//! kept alive by the table and by every entry, so that no handle outlives
//! it.

use core::ptr::NonNull;

use crossbeam_epoch::Guard;
use lockref::CountedRef;

use crate::chain::Bucket;
use crate::lru::Lru;
use crate::node::Node;
use crate::slots::{Slots, Vacancy};
#[cfg(feature = "testing")]
use crate::sync::AtomicUsize;
use crate::sync::{lock, Arc, AtomicBool, MutexGuard, Ordering};

/// The user's decision at zero: keep the entry (unused, findable) or kill
/// it.
pub(crate) type Keep<K, V> = Box<dyn Fn(&K, &V) -> bool + Send + Sync>;

/// The user's hash of a key: its `BuildHasher`'s, seeded once per table.
pub(crate) type HashKey<K> = Box<dyn Fn(&K) -> u64 + Send + Sync>;

pub(crate) struct Shared<K, V> {
    key_buckets: Box<[Bucket<K, V>]>,
    /// Where the entries live; their ids name their slots.
    pub(crate) slots: Slots<K, V>,
    hash_key: HashKey<K>,
    /// Cleared when the table is dropped: no entry is kept at zero after.
    open: AtomicBool,
    pub(crate) max_unused: usize,
    pub(crate) keep: Keep<K, V>,
    pub(crate) lru: Lru<K, V>,
    /// The table's own lock acquisitions (every bucket lock, and the LRU's
    /// in a shrink), for the accounting tests.
    #[cfg(feature = "testing")]
    locks_taken: AtomicUsize,
}

impl<K, V> Shared<K, V> {
    pub(crate) fn new(
        buckets: usize,
        max_unused: usize,
        first_id: u64,
        keep: Keep<K, V>,
        hash_key: HashKey<K>,
    ) -> Self {
        let buckets = buckets.clamp(1, 1 << 24).next_power_of_two();
        Shared {
            key_buckets: (0..buckets).map(|_| Bucket::new()).collect(),
            slots: Slots::new(first_id),
            hash_key,
            open: AtomicBool::new(true),
            max_unused,
            keep,
            lru: Lru::new(),
            #[cfg(feature = "testing")]
            locks_taken: AtomicUsize::new(0),
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        // Acquire: pairs with `close`; under a node's lock either order is
        // fine (see `Table`'s drop).
        self.open.load(Ordering::Acquire)
    }

    /// `is_open`, in the single order of `SeqCst` operations: for
    /// `Handle::into_id`, against the teardown's `close` and swaps of the
    /// peer's counts.
    pub(crate) fn is_open_now(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    pub(crate) fn close(&self) {
        // SeqCst: see `is_open_now`.
        self.open.store(false, Ordering::SeqCst);
    }

    pub(crate) fn len(&self) -> usize {
        // The buckets' counts (each a snapshot): O(buckets).
        self.key_buckets.iter().map(Bucket::entries).sum()
    }

    fn key_bucket(&self, hash: u64) -> &Bucket<K, V> {
        &self.key_buckets[(hash as usize) & (self.key_buckets.len() - 1)]
    }

    /// Takes a bucket's (or the LRU's) writer lock, counted for the tests.
    fn lock<'a>(&self, bucket: &'a Bucket<K, V>) -> MutexGuard<'a, ()> {
        #[cfg(feature = "testing")]
        self.locks_taken.fetch_add(1, Ordering::Relaxed);
        lock(&bucket.lock)
    }

    #[cfg(feature = "testing")]
    pub(crate) fn locks_taken(&self) -> usize {
        self.locks_taken.load(Ordering::Relaxed)
    }

    pub(crate) fn hash(&self, key: &K) -> u64 {
        (self.hash_key)(key)
    }

    /// The entry of `key`, on its chain, found without taking anything
    /// (maybe dying: the caller takes a reference with `try_get`). It
    /// holds its slot while `guard` is held.
    pub(crate) fn find_key(&self, hash: u64, key: &K, guard: &Guard) -> Option<NonNull<Node<K, V>>>
    where
        K: Eq,
    {
        self.key_bucket(hash).find(guard, |n| {
            // Relaxed: written before the node was pushed on the chain,
            // which the walk's Acquire loads see.
            n.hash.load(Ordering::Relaxed) == hash
                && n.on_key_chain()
                // SAFETY: reached on its chain under `guard`.
                && unsafe { n.key() } == key
        })
    }

    /// The entry with `id`, found without taking anything (maybe dying).
    /// Under `guard`, its slot holds it until the guard goes: its release
    /// stores the id `VACANT` before it defers the recycling.
    pub(crate) fn find_id(&self, id: u64, _guard: &Guard) -> Option<NonNull<Node<K, V>>> {
        let found = self.slots.locate(id)?;
        // SAFETY: the slots' memory lives while `self` does.
        let node = unsafe { found.as_ref() };
        // Acquire: pairs with the release's store of `VACANT`; a pinned
        // reader that sees the id before that swap holds the recycling
        // back by the epoch's fences, not by this ordering (`Relaxed` would
        // do: see `Node::release`). The caller reads only atomics of the
        // node after this.
        (node.id.load(Ordering::Acquire) == id).then_some(found)
    }

    /// The live entry of `key`, referenced, or a new one made by `make`
    /// from its id, under the key's bucket lock (so two inserts of one key
    /// make one entry), and whether it is new. A dying entry of the key is
    /// passed over: its release unlinks it. With `for_peer`, a new entry's
    /// reference is the peer's (`PeerRefs` at one, set before the entry is
    /// published: no atomic more); one found is a reference as any.
    pub(crate) fn find_or_insert(
        this: &Arc<Self>,
        hash: u64,
        key: K,
        make: impl FnOnce(u64) -> V,
        for_peer: bool,
    ) -> (CountedRef<Node<K, V>>, bool)
    where
        K: Eq + Send + Sync,
        V: Send + Sync,
    {
        let bucket = this.key_bucket(hash);
        let _locked = this.lock(bucket);
        let guard = crossbeam_epoch::pin();
        if let Some(found) = this.find_key(hash, &key, &guard) {
            // SAFETY: found on the chain while pinned: its slot holds it
            // until the pin ends; the chain's pointer has the slots'
            // provenance.
            if let Some(r) = unsafe { CountedRef::try_get(found) } {
                return (r, false);
            }
        }
        let vacancy = this.slots.take();
        // A `make` that panics gives the slot back (its id, seen by `make`
        // only, is never handed out again: the slot is reused with the
        // next generation).
        let value = {
            let taken = GiveBackOnUnwind {
                slots: &this.slots,
                vacancy: &vacancy,
            };
            let value = make(vacancy.id);
            core::mem::forget(taken);
            value
        };
        // SAFETY: a vacant slot just taken from the slots.
        let entry =
            unsafe { Node::fill(vacancy.node, this, hash, vacancy.id, (key, value), for_peer) };
        bucket.push(vacancy.node, &guard);
        bucket.count_entry(1);
        (entry, true)
    }

    /// Takes `key`'s live entry off its chain under the key's bucket lock,
    /// and returns it (maybe at zero: the caller kills it if unused). Under
    /// the lock, an insert of the key in flight (its `make` runs under the
    /// same lock) has either linked its entry, which this finds, or not yet
    /// begun its `make`. The node stays valid while `guard` is held.
    pub(crate) fn remove_key(
        &self,
        hash: u64,
        key: &K,
        guard: &Guard,
    ) -> Option<NonNull<Node<K, V>>>
    where
        K: Eq,
    {
        let bucket = self.key_bucket(hash);
        let _inserts_wait = self.lock(bucket);
        self.take_off_chain(bucket, hash, key, guard)
    }

    /// [`remove_key`](Self::remove_key) of `from` and `to` under both keys'
    /// bucket locks at once (taken in the buckets' order), for
    /// [`Table::rename`](crate::Table::rename). A lookup that sees either
    /// name gone makes its entry from the store under that name's lock,
    /// so after both are gone: it cannot then find the other name's entry
    /// from before the rename.
    pub(crate) fn remove_keys(
        &self,
        from: (u64, &K),
        to: (u64, &K),
        guard: &Guard,
    ) -> [Option<NonNull<Node<K, V>>>; 2]
    where
        K: Eq,
    {
        let index = |hash: u64| (hash as usize) & (self.key_buckets.len() - 1);
        let (first, second) = (
            index(from.0).min(index(to.0)),
            index(from.0).max(index(to.0)),
        );
        let _first = self.lock(&self.key_buckets[first]);
        let _second = (second != first).then(|| self.lock(&self.key_buckets[second]));
        let from_removed = self.take_off_chain(self.key_bucket(from.0), from.0, from.1, guard);
        let to_removed = self.take_off_chain(self.key_bucket(to.0), to.0, to.1, guard);
        [from_removed, to_removed]
    }

    /// Under `bucket`'s lock: takes `key`'s live entry off the chain.
    fn take_off_chain(
        &self,
        bucket: &Bucket<K, V>,
        hash: u64,
        key: &K,
        guard: &Guard,
    ) -> Option<NonNull<Node<K, V>>>
    where
        K: Eq,
    {
        // A dying entry (dead, its release waiting for this lock) is gone
        // for lookups already: passed over, as `find_or_insert` does.
        let found = bucket.find(guard, |n| {
            // Relaxed: as in `find_key`.
            n.hash.load(Ordering::Relaxed) == hash
                && n.on_key_chain()
                && !n.counts.lockref.is_dead()
                // SAFETY: reached on its chain under `guard`.
                && unsafe { n.key() } == key
        })?;
        // SAFETY: on the chain, under the pin: its slot holds it.
        unhash_locked(bucket, unsafe { found.as_ref() }, guard).then_some(found)
    }

    /// A released node leaves its key's chain and its bucket's count.
    pub(crate) fn unlink(&self, node: &Node<K, V>, guard: &Guard) {
        let bucket = self.key_bucket(node.hash.load(Ordering::Relaxed));
        let _locked = self.lock(bucket);
        unhash_locked(bucket, node, guard);
        bucket.count_entry(-1);
    }

    /// Reclaims up to `n` unused entries, oldest first; returns how many
    /// it killed. Entries revived since they were listed are only unlisted.
    pub(crate) fn shrink(&self, n: usize) -> usize
    where
        K: Send + Sync,
        V: Send + Sync,
    {
        // Pinned before any node is taken off the list: a node popped is
        // valid until this pin ends, even if released meanwhile.
        let _guard = crossbeam_epoch::pin();
        let mut killed = 0;
        for _ in 0..n {
            #[cfg(feature = "testing")]
            self.locks_taken.fetch_add(1, Ordering::Relaxed);
            let Some(oldest) = self.lru.pop_oldest() else {
                break;
            };
            // SAFETY: valid under the pin (see above), with the
            // slots' provenance (the list holds the chain's pointer).
            if unsafe { CountedRef::kill_unused(oldest) } {
                killed += 1;
            }
        }
        killed
    }

    /// Before an insert: reclaims so that the new entry, once unused too,
    /// still fits the bound.
    pub(crate) fn reclaim_for_insert(&self)
    where
        K: Send + Sync,
        V: Send + Sync,
    {
        let listed = self.lru.len();
        let excess = (listed + 1).saturating_sub(self.max_unused).min(listed);
        if excess > 0 {
            self.shrink(excess);
        }
    }
}

/// Takes `node` off `bucket`'s chain, whose lock the caller holds, if it is
/// still on it (its removal and its release may race to it): returns
/// whether this call took it off.
fn unhash_locked<K, V>(bucket: &Bucket<K, V>, node: &Node<K, V>, guard: &Guard) -> bool {
    // Relaxed load: the flag is written only under the bucket's lock,
    // which the caller holds, so a plain load and store (no
    // read-modify-write) make one remover.
    if !node.key_chain.load(Ordering::Relaxed) {
        return false;
    }
    // Release: walkers that see it cleared pass the node over, and a
    // last put that reads it (Acquire) kills the entry.
    node.key_chain.store(false, Ordering::Release);
    bucket.unlink(node, guard)
}

/// Gives a vacancy back to its slots if dropped: while `make` runs, so that
/// a panic in it loses no slot. Forgotten once `make` returns.
struct GiveBackOnUnwind<'a, K, V> {
    slots: &'a Slots<K, V>,
    vacancy: &'a Vacancy<K, V>,
}

impl<K, V> Drop for GiveBackOnUnwind<'_, K, V> {
    fn drop(&mut self) {
        self.slots.give_back(self.vacancy);
    }
}
