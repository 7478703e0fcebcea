//! A table's entry: its key, value, id and lockref, its links on the two
//! chains and the LRU, and the decision at zero ([`RefCounted`]).

use core::cell::UnsafeCell;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

use crossbeam_epoch::{self as epoch, Shared as EpochShared};
use lockref::{CasWord, CountedRef, Fate, LockRef, LockRefGuard, RefCounted};

use crate::chain::Link;
use crate::lru::LruLinks;
use crate::peer_refs::PeerRefs;
use crate::shared::Shared;
use crate::sync::{Arc, AtomicU8, Ordering};

/// On the lookup chain of its key (cleared when it is removed from it).
pub(crate) const ON_KEY_CHAIN: u8 = 1 << 0;
/// On the LRU of unused entries.
pub(crate) const ON_LRU: u8 = 1 << 1;

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

/// An entry. Lockless walkers read only `hash`, `key`, `id`, `flags`, the
/// chain links and the counts; the value is read only through a counted
/// reference.
#[repr(C)]
pub(crate) struct Node<K, V> {
    pub(crate) flags: AtomicU8,
    pub(crate) hash: u64,
    pub(crate) id: u64,
    pub(crate) key: K,
    /// Dropped by `release`, when no reference is left (so no reader of
    /// it); the node's memory (and the key, which walkers compare) lives
    /// on until the grace period ends.
    key_next: epoch::Atomic<Node<K, V>>,
    id_next: epoch::Atomic<Node<K, V>>,
    pub(crate) counts: Counts,
    value: UnsafeCell<ManuallyDrop<V>>,
    pub(crate) lru: LruLinks<K, V>,
    /// The table's state: every entry keeps it alive, so that a handle can
    /// never outlive what it points into.
    pub(crate) shared: Arc<Shared<K, V>>,
}

// SAFETY: the value is read through shared references (`V: Sync`) and
// dropped once, on whichever thread releases the entry (`V: Send`); the
// rest is atomic, immutable, or used under the LRU's lock.
unsafe impl<K: Send + Sync, V: Send + Sync> Send for Node<K, V> {}
// SAFETY: as for `Send`.
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for Node<K, V> {}

impl<K, V> Node<K, V> {
    pub(crate) fn new(shared: Arc<Shared<K, V>>, hash: u64, id: u64, key: K, value: V) -> Self {
        Node {
            counts: Counts {
                lockref: LockRef::new(()),
                peer: PeerRefs::new(),
            },
            flags: AtomicU8::new(ON_KEY_CHAIN),
            hash,
            id,
            key,
            value: UnsafeCell::new(ManuallyDrop::new(value)),
            key_next: epoch::Atomic::null(),
            id_next: epoch::Atomic::null(),
            lru: LruLinks::new(),
            shared,
        }
    }

    pub(crate) fn next(&self, link: Link) -> &epoch::Atomic<Node<K, V>> {
        match link {
            Link::Key => &self.key_next,
            Link::Id => &self.id_next,
        }
    }

    /// The value.
    ///
    /// # Safety
    ///
    /// The caller holds a reference on the entry, or its lock at count
    /// zero before a kill: the value is not dropped yet.
    pub(crate) unsafe fn value(&self) -> &V {
        // SAFETY: the caller's guarantee; only `release` writes the cell.
        unsafe { &*self.value.get() }
    }

    /// Whether lookups by key may find it.
    pub(crate) fn on_key_chain(&self) -> bool {
        // Acquire: pairs with the removal's Release.
        self.flags.load(Ordering::Acquire) & ON_KEY_CHAIN != 0
    }
}

// SAFETY: nodes are made only by `Shared::insert` (a `Box`) and counted
// only by `CountedRef` (handles, and the peer's references handed out by
// `into_raw` and given back by `put_many`). `release` unlinks the node
// from both chains under their locks and from the LRU, drops the value
// (no reference is left, and walkers never read it), and defers the free
// of the node past every epoch pin taken while it was reachable; `last_put`
// only reads.
unsafe impl<K: Send + Sync, V: Send + Sync> RefCounted for Node<K, V> {
    type Data = ();
    type Word = CasWord;
    type Grace = ();

    fn lockref(&self) -> &LockRef<()> {
        &self.counts.lockref
    }

    /// Kept at zero, on the LRU, if the table is open, the entry still on
    /// its key's chain, the bound keeps any, and the user's `keep` says
    /// so; killed otherwise.
    fn last_put(&self, _: &mut LockRefGuard<'_, ()>) -> Fate {
        let shared = &*self.shared;
        // SAFETY: the lock is held at count zero and the entry is not dead:
        // the value is still there, and no handle can write it.
        let keep = || (shared.keep)(&self.key, unsafe { self.value() });
        if shared.is_open() && self.on_key_chain() && shared.max_unused > 0 && keep() {
            shared.lru.retain(self);
            Fate::Keep
        } else {
            Fate::Kill
        }
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: dead and unreferenced, still allocated.
        let node = unsafe { this.as_ref() };
        let shared = &*node.shared;
        let guard = epoch::pin();
        shared.unlink(node, &guard);
        shared.lru.remove(node);
        // SAFETY: dead with no reference: nobody reads the value any more
        // (walkers never do), and it is dropped once, here.
        unsafe { ManuallyDrop::drop(&mut *node.value.get()) };
        // SAFETY: unreachable from both chains now; walkers that reached
        // it are pinned, so the destruction (the key, the links, the
        // table's `Arc`) waits for them. It came from `Box::into_raw`.
        unsafe { guard.defer_destroy(EpochShared::from(this.as_ptr().cast_const())) };
        None
    }
}
