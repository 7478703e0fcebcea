//! A table's entry: its key, value, id and lockref, its link on its key's
//! chain and the LRU, and the decision at zero ([`RefCounted`]). A node is
//! a slot of [`Slots`](crate::slots::Slots): its memory holds one entry
//! after another, each with an id of its own.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crossbeam_epoch as epoch;
use lockref::{CasWord, CountedRef, Fate, LockRef, LockRefGuard, RefCounted};

use crate::lru::LruLinks;
use crate::peer_refs::PeerRefs;
use crate::release_queue;
use crate::shared::Shared;
use crate::slots::VACANT;
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicU8, Ordering};

/// On the LRU of unused entries.
pub(crate) const ON_LRU: u8 = 1 << 1;
/// Dies at its last put, whatever `keep` says (`Handle::dont_keep`).
pub(crate) const DONT_KEEP: u8 = 1 << 2;

/// The counters every reference taken or given back writes, together in
/// one cache line of their own: a lookup's reference and the peer's count
/// move one line between CPUs, and the fields walkers compare (in the
/// node's first line) stay shared while the entry's count changes (the
/// kernel's 2024 move of `d_lockref` out of the lookup's line). The two
/// counters in lines of their own measured no faster (0.98x to 1.00x of
/// one shared line with two threads on one entry, 1.02x with one: the
/// `RequestMix` operations, threads pinned, 2-CPU Intel Xeon VM, three
/// runs of ten alternating rounds) for a line more per entry, so they
/// share one.
#[repr(C, align(64))]
pub(crate) struct Counts {
    pub(crate) lockref: LockRef<()>,
    pub(crate) peer: PeerRefs,
}

/// A slot and the entry it holds, if any.
///
/// Who reads what:
/// - a lookup by id, without a pin, reads only `id` and the counts (both
///   atomic, and always there);
/// - a walker of a key chain, under a pin, reads `hash`, `key`, `flags`,
///   `key_next` and the counts of the nodes it passes: they are written
///   only while the slot is vacant, after the grace period of its last
///   entry, when no walker can reach it;
/// - the value, and the table's state, only through a counted reference
///   (or the lock at zero, or the release).
#[repr(C)]
pub(crate) struct Node<K, V> {
    /// `ON_LRU` and `DONT_KEEP`.
    pub(crate) flags: AtomicU8,
    /// On the lookup chain of its key: set by `fill`, cleared when it is
    /// taken off it. A byte of its own, apart from `flags`: it is written
    /// only under the key's bucket lock, so its removal is a load and a
    /// store, where a bit of `flags` (which the LRU and `dont_keep` change
    /// without that lock) needed a read-modify-write.
    pub(crate) key_chain: AtomicBool,
    /// Never changes: the slot's number.
    pub(crate) slot: u32,
    pub(crate) hash: AtomicU64,
    /// The entry's id, [`VACANT`] from its release until the slot holds
    /// the next entry. Stored before the count is revived for an entry
    /// (so a reference taken sees it), and stored [`VACANT`] before the
    /// grace period that ends the entry's use of the slot (so a pinned
    /// lookup that reads the id keeps the slot's entry until it unpins).
    pub(crate) id: AtomicU64,
    /// Dropped when the slot is recycled, after the grace period: walkers
    /// compare it without a reference.
    key: UnsafeCell<MaybeUninit<K>>,
    key_next: epoch::Atomic<Node<K, V>>,
    pub(crate) counts: Counts,
    /// Dropped by `release`, when no reference is left (so no reader of
    /// it).
    value: UnsafeCell<MaybeUninit<V>>,
    pub(crate) lru: LruLinks<K, V>,
    /// While the slot is on the slots' recycled stack: the generation it
    /// is reused with (high half) and the next slot down plus one (low).
    pub(crate) vacancy: AtomicU64,
    /// The table's state, from the slot's first entry on: every entry
    /// keeps it alive, so that a handle can never outlive what it points
    /// into. The slot keeps it through its vacancies on the recycled
    /// stack (so a fill and a recycling touch no shared count); it is
    /// let go when the stack is closed with the slot on it, or when the
    /// slot is recycled after that, or retired (`Slots::close`).
    pub(crate) shared: UnsafeCell<Option<Arc<Shared<K, V>>>>,
}

// SAFETY: the value is read through shared references (`V: Sync`) and
// dropped once, on whichever thread releases the entry (`V: Send`); the
// key likewise, by the recycling; the rest is atomic, immutable, or
// written only while no other thread reads it (the vacant slot's fields,
// the LRU links under the LRU's lock).
unsafe impl<K: Send + Sync, V: Send + Sync> Send for Node<K, V> {}
// SAFETY: as for `Send`.
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for Node<K, V> {}

impl<K, V> Node<K, V> {
    /// A slot that holds no entry: its count dead, its id [`VACANT`].
    pub(crate) fn vacant(slot: u32) -> Self {
        let lockref = LockRef::with_count((), 0).expect("zero is a count");
        lockref.lock().mark_dead();
        Node {
            counts: Counts {
                lockref,
                peer: PeerRefs::new(),
            },
            flags: AtomicU8::new(0),
            key_chain: AtomicBool::new(false),
            slot,
            hash: AtomicU64::new(0),
            id: AtomicU64::new(VACANT),
            key: UnsafeCell::new(MaybeUninit::uninit()),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            key_next: epoch::Atomic::null(),
            lru: LruLinks::new(),
            vacancy: AtomicU64::new(0),
            shared: UnsafeCell::new(None),
        }
    }

    pub(crate) fn next(&self) -> &epoch::Atomic<Node<K, V>> {
        &self.key_next
    }

    /// The key.
    ///
    /// # Safety
    ///
    /// The slot holds an entry that stays while the borrow lasts: the
    /// caller holds a reference on it, or reached it on its key chain
    /// under a pin that lasts as long.
    pub(crate) unsafe fn key(&self) -> &K {
        // SAFETY: written before the entry was published, dropped only
        // after its grace period, when no reference is left.
        unsafe { (*self.key.get()).assume_init_ref() }
    }

    /// The value.
    ///
    /// # Safety
    ///
    /// The caller holds a reference on the entry, or its lock at count
    /// zero before a kill: the value is not dropped yet.
    pub(crate) unsafe fn value(&self) -> &V {
        // SAFETY: the caller's guarantee; only `release` drops it.
        unsafe { (*self.value.get()).assume_init_ref() }
    }

    /// The table's state.
    ///
    /// # Safety
    ///
    /// The slot holds an entry that is not recycled while the borrow
    /// lasts: a reference on it, its lock at zero, its release, or an
    /// epoch pin taken while it was referenced (the recycling, which takes
    /// the state, is deferred past every pin taken before the release).
    pub(crate) unsafe fn shared(&self) -> &Shared<K, V> {
        // SAFETY: set by `fill`, taken only by the recycling.
        unsafe { (*self.shared.get()).as_deref() }.expect("the slot holds an entry")
    }

    /// The entry's id; the caller holds a reference on it, or reached it
    /// on its key's chain under a pin (it may be `VACANT` then, if dying).
    pub(crate) fn id(&self) -> u64 {
        // Relaxed: stored before the revival that the caller's reference
        // was taken after, and before the push on the chain.
        self.id.load(Ordering::Relaxed)
    }

    /// Whether lookups by key may find it.
    pub(crate) fn on_key_chain(&self) -> bool {
        // Acquire: pairs with the removal's Release.
        self.key_chain.load(Ordering::Acquire)
    }

    /// The entry's fate at zero where it needs neither the user's `keep`
    /// nor a listing (the kernel's `retain_dentry` without `d_lock`):
    /// `Kill` once the table is closed, the entry off its key's chain,
    /// marked [`DONT_KEEP`], or the table keeps none; `Keep` while it is
    /// listed (its `keep` said yes when it was listed, and that answer
    /// stands while it stays on the LRU); `None` otherwise, for the lock:
    /// `keep` is asked and the entry listed.
    ///
    /// Every condition of a `Kill` is for the entry's life once it holds
    /// (the table does not reopen, nor an entry return to its chain or
    /// lose the mark), so a stale read of one can only delay a kill to
    /// the lock. A listing and an unlisting race this read only as the
    /// locked decision races them (see `Lru::retain`).
    ///
    /// # Safety
    ///
    /// The slot holds this entry while the call lasts: a reference, its
    /// lock at zero, or an epoch pin taken while it was referenced (its
    /// recycling, which takes the table's state, waits for the pin).
    pub(crate) unsafe fn fate_without_keep(&self) -> Option<Fate> {
        // SAFETY: the caller's guarantee.
        let shared = unsafe { self.shared() };
        // Acquire: a removal's or a mark's write, made while its maker
        // held a reference, happens before the put that brought the count
        // to zero (Release), which the caller's put read (Acquire at zero,
        // or the lock); this read comes after.
        let flags = self.flags.load(Ordering::Acquire);
        if !shared.is_open()
            || shared.max_unused == 0
            || !self.on_key_chain()
            || flags & DONT_KEEP != 0
        {
            Some(Fate::Kill)
        } else if flags & ON_LRU != 0 {
            Some(Fate::Keep)
        } else {
            None
        }
    }

    /// After the grace period of a released entry: drops its key and
    /// gives the slot back for a later entry (`old_id` was its id).
    ///
    /// # Safety
    ///
    /// The entry was released (its id stored [`VACANT`], off its chain)
    /// and the grace period since is over; called once.
    unsafe fn recycle(this: NonNull<Self>, old_id: u64) {
        // SAFETY: the slots live while the slot's `Arc` does, which only
        // this call may let go of now (the slot is not on the stack).
        let node = unsafe { this.as_ref() };
        // SAFETY: the caller's guarantee: no walker or reference is left,
        // and lookups by id read only the id and the count.
        unsafe { (*node.key.get()).assume_init_drop() };
        // SAFETY: as above; the slot's hold, set by its first fill.
        let shared = unsafe { (*node.shared.get()).as_deref() }.expect("a released entry's table");
        let pushed = shared
            .slots
            .next_generation(old_id)
            .is_some_and(|generation| {
                // Once pushed, the slot (and its hold on the table's state)
                // is not this call's: nothing is touched after.
                crate::slots::push_recycled(
                    shared.slots.recycled(),
                    &node.vacancy,
                    node.slot,
                    generation,
                )
            });
        if !pushed {
            // Retired, or the table is dropped: the slot lets go of its
            // hold, maybe the last (the slots then go with it).
            // SAFETY: the slot is this call's: on no stack, holding no
            // entry.
            drop(unsafe { (*node.shared.get()).take() });
        }
    }
}

impl<K: Send + Sync, V: Send + Sync> Node<K, V> {
    /// Fills a vacant slot with an entry, with one reference (the
    /// caller's), and returns that reference. The entry is on no chain yet.
    /// With `for_peer`, that reference is the one the peer's hold between
    /// them, and the peer holds one (`Handle::into_id`'s work, done before
    /// the entry is published).
    ///
    /// # Safety
    ///
    /// The slot is vacant, taken from the slots by this caller: no walker
    /// can reach it, and lookups by id read only its id and count.
    pub(crate) unsafe fn fill(
        this: NonNull<Self>,
        shared: &Arc<Shared<K, V>>,
        hash: u64,
        id: u64,
        (key, value): (K, V),
        for_peer: bool,
    ) -> CountedRef<Self> {
        // SAFETY: the slots' memory lives while `shared` does.
        let node = unsafe { this.as_ref() };
        // SAFETY: the caller's guarantee: nobody else reads these fields
        // now.
        unsafe {
            (*node.key.get()).write(key);
            (*node.value.get()).write(value);
            // The slot's first entry takes the slot's hold on the
            // table's state; a reused slot has it already.
            let hold = &mut *node.shared.get();
            if hold.is_none() {
                *hold = Some(shared.clone());
            }
        }
        // Relaxed, all: the revival's Release publishes them, and the push
        // on the key chain (Release) after it.
        node.hash.store(hash, Ordering::Relaxed);
        node.flags.store(0, Ordering::Relaxed);
        node.key_chain.store(true, Ordering::Relaxed);
        node.id.store(id, Ordering::Relaxed);
        if for_peer {
            node.counts.peer.set_first();
        }
        // One compare-and-swap (Release: publishes the fields above to a
        // reference taken after it).
        // SAFETY: the slot's last entry was released and its grace period
        // is over (it was recycled): nothing relies on its death, and every
        // lookup by id that takes a reference compares the id after.
        unsafe { node.counts.lockref.revive(1) }.expect("a vacant slot is dead");
        // SAFETY: the revived count of one is this reference; the pointer
        // is the slots', with the chunk's provenance.
        unsafe { CountedRef::from_raw(this) }
    }
}

/// A released node, for the deferred recycling.
struct Released<K, V>(NonNull<Node<K, V>>);

// SAFETY: a node is `Send` and `Sync` (above); the recycling runs once,
// on whichever thread collects the garbage.
unsafe impl<K: Send + Sync, V: Send + Sync> Send for Released<K, V> {}

// SAFETY: nodes are made only in the slots, filled by `fill` and counted
// only by `CountedRef` (handles, and the peer's references, which hold one
// of the entry's between them). Each entry of a slot is an object of its
// own: its count starts at the revival (one reference, `fill`'s) and ends
// dead. `release` unlinks the entry from its key's chain under the bucket
// lock and from the LRU, stores its id `VACANT`, drops the value (no
// reference is left, and walkers never read it), and defers the slot's
// recycling (the key's drop, the slot's reuse) past every epoch pin taken
// while the entry was reachable; the memory is never freed while the table's
// state lives, which every entry keeps alive. `last_put` only reads.
//
// No `Send + Sync` bounds here (nor on `Handle`), so that a value may hold
// a handle of its own table (a child's handle on its parent): with them,
// `V: Send` would need itself through this impl, which the compiler
// cannot prove. Nodes are made only by a `Table<K, V>`, which requires
// `K, V: Send + Sync`, so every node that exists has them, and the
// release's drops on another thread are sound.
unsafe impl<K, V> RefCounted for Node<K, V> {
    type Data = ();
    type Word = CasWord;
    type Grace = epoch::Guard;

    fn lockref(&self) -> &LockRef<()> {
        &self.counts.lockref
    }

    /// Killed if the table is closed, the entry off its key's chain,
    /// marked `DONT_KEEP`, or the bound keeps none; kept if listed
    /// already; else kept and listed if the user's `keep` says so and the
    /// LRU has room, killed otherwise.
    fn last_put(&self, _: &mut LockRefGuard<'_, ()>) -> Fate {
        // SAFETY: the lock is held at count zero and the entry is not dead:
        // it holds its slot, its key and its value.
        if let Some(fate) = unsafe { self.fate_without_keep() } {
            return fate;
        }
        // SAFETY: as above.
        let (shared, key, value) = unsafe { (self.shared(), self.key(), self.value()) };
        // The bound holds at rest: past it, the entry whose last reference
        // went is killed rather than kept (`Lru::retain`).
        if (shared.keep)(key, value) && shared.lru.retain(self, shared.max_unused) {
            Fate::Keep
        } else {
            Fate::Kill
        }
    }

    /// A removed or marked entry, every entry of a table that keeps none
    /// or was dropped: each condition holds for the entry's life once it
    /// holds (`Node::fate_without_keep`), and the release unlinks it. So
    /// its last put drops the count and kills it in one compare-and-swap,
    /// with no epoch pin. Its read may be stale (the count it follows was
    /// read `Relaxed`), but a stale read can only miss a kill, which the
    /// usual way then makes at zero: no condition of a kill ever goes
    /// back.
    fn killed_at_zero(&self) -> bool {
        // SAFETY: asked by a put that still holds its references.
        matches!(unsafe { self.fate_without_keep() }, Some(Fate::Kill))
    }

    /// A put runs pinned when it may be the last (`fast_dput` runs under
    /// `rcu_read_lock`): the pin holds the slot's recycling, and with it
    /// the table's state, back while the put reads the entry at zero
    /// without a reference.
    fn grace() -> Option<epoch::Guard> {
        Some(epoch::pin())
    }

    /// The last put of a listed entry, of a removed or marked one, and
    /// every last put on a table that keeps none, decide without the lock
    /// (`Node::fate_without_keep`); only a listing takes it.
    fn fate_unlocked(&self) -> Option<Fate> {
        // SAFETY: called under the grace section entered before the put
        // (`RefCounted::grace`), while the put's reference held the entry.
        unsafe { self.fate_without_keep() }
    }

    /// Queued behind a release running on this thread, if any
    /// (`release_queue`): the value's drop may put the last reference of
    /// an entry its value holds a handle of, whose release then runs after
    /// this one rather than inside it.
    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: the caller's guarantee (dead, unreferenced, released
        // once), carried to `release_now`, run once on this thread.
        unsafe { release_queue::run(this.cast(), Self::release_erased) };
        None
    }
}

impl<K, V> Node<K, V> {
    /// [`Self::release_now`] for the release queue, which holds entries
    /// of every table.
    ///
    /// # Safety
    ///
    /// As for `release_now`: `this` is a `Node<K, V>`.
    unsafe fn release_erased(this: NonNull<()>) {
        // SAFETY: the caller's guarantee.
        unsafe { Self::release_now(this.cast()) }
    }

    /// The release: the entry leaves its chain, the count of entries and
    /// the LRU; its value is dropped, its slot recycled after the grace
    /// period.
    ///
    /// # Safety
    ///
    /// The entry is dead and unreferenced; called once.
    unsafe fn release_now(this: NonNull<Self>) {
        // SAFETY: dead and unreferenced, in the slots, which its table's
        // state keeps.
        let node = unsafe { this.as_ref() };
        // SAFETY: released here, recycled only after.
        let shared = unsafe { node.shared() };
        let guard = epoch::pin();
        shared.unlink(node, &guard);
        // What holds the slot's recycling back for a pinned lookup that
        // still reads the old id (`Shared::find_id`) is not this ordering
        // but the epoch's `SeqCst` fences: the lookup's pin fences before
        // its load, and the deferral below fences (when its bag is sealed
        // with the global epoch) after this store. If the deferral's fence
        // comes first in their single order, the lookup's load sees
        // `VACANT`; if the pin's does, the collector sees the lookup pinned
        // and waits for it. So `Relaxed` would do, and a weakened mutant
        // survives every model: it is equivalent. `Release` (and
        // `find_id`'s `Acquire`) state the pairing at no cost on x86.
        // Relaxed load: only the entry's own fill and release write the id,
        // and both are ordered before this (the fill by the count's
        // revival, which the kill saw).
        let old_id = node.id.load(Ordering::Relaxed);
        node.id.store(VACANT, Ordering::Release);
        shared.lru.remove(node);
        let released = Released(this);
        // The recycling is deferred before the value is dropped, so that a
        // value whose drop panics still gives its slot back (and with it
        // the entry's hold on the table's state): the panic propagates,
        // nothing leaks. The recycling cannot run before the drop below
        // ends, since this thread's pin holds it back.
        // SAFETY: the entry is unreachable from its chain, and its id is
        // VACANT; walkers and pinned lookups that reached it are pinned, so
        // the recycling waits for them. Once, here.
        unsafe {
            guard.defer_unchecked(move || {
                let released = released;
                Node::recycle(released.0, old_id);
            });
        }
        // SAFETY: dead with no reference: nobody reads the value any more
        // (walkers never do), and it is dropped once, here, before the
        // recycling (held back by `guard`, dropped after).
        unsafe { (*node.value.get()).assume_init_drop() };
        drop(guard);
    }
}
