//! [`Slots`]: where a table's entries live. Type-stable memory (the
//! kernel's `SLAB_TYPESAFE_BY_RCU`): an entry's memory is never freed
//! while the table's shared state lives, only reused, after a grace
//! period, for a later entry of the same table. So a lookup by id may
//! read a slot's id and take a reference on its count without an epoch
//! pin, as long as it checks the id again after taking it.
//!
//! An id names its slot and the slot's generation: `first_id + (generation
//! << 32 | slot)`. A slot is reused with the next generation, so no id is
//! handed out twice; a slot whose generations run out is retired.

use core::ptr::{self, NonNull};

use crate::node::Node;
use crate::sync::{lock, AtomicPtr, AtomicU64, Mutex, Ordering};

/// Slots in the first chunk; chunk `c` holds `FIRST_CHUNK << c`. Small
/// under loom, whose every atomic is a modelled object.
#[cfg(not(loom))]
const FIRST_CHUNK: u64 = 64;
#[cfg(loom)]
const FIRST_CHUNK: u64 = 2;
/// Chunks: together they hold just under 2^32 slots (2^27 under loom).
const CHUNKS: usize = 26;
/// The bits of an id (less `first_id`) that name the slot.
const SLOT_BITS: u32 = 32;
/// The last generation of a slot; ids stay below `first_id + 2^62`.
const LAST_GENERATION: u32 = (1 << 30) - 1;
/// The largest `first_id`: every id is below 2^63 and never [`VACANT`].
pub(crate) const MAX_FIRST_ID: u64 = 1 << 62;
/// The id of a slot that holds no entry.
pub(crate) const VACANT: u64 = u64::MAX;

/// A slot to fill: its node, the id its entry gets.
pub(crate) struct Vacancy<K, V> {
    pub(crate) node: NonNull<Node<K, V>>,
    pub(crate) id: u64,
}

/// The low half of a link of the recycled stack: the slot's number plus
/// one (zero: none).
const LINK_SLOT: u64 = (1 << 32) - 1;
/// The recycled stack's head once the table is dropped ([`Slots::close`]):
/// no slot is pushed any more.
const CLOSED: u64 = 1 << 63;
/// The head's tag (its high half less [`CLOSED`]).
const TAG: u64 = (1 << 31) - 1;

pub(crate) struct Slots<K, V> {
    /// Chunk `c`, once allocated: `FIRST_CHUNK << c` nodes, never freed
    /// before the slots are dropped.
    chunks: [AtomicPtr<Node<K, V>>; CHUNKS],
    /// The stack of slots given back (after their grace period), newest
    /// on top: a lock-free (Treiber) stack whose links are in the vacant
    /// nodes themselves (`Node::vacancy`: the next slot, and the
    /// generation the slot is reused with). The head is the top slot's
    /// number plus one in its low half (zero: empty) and a tag in its high
    /// half, changed by every push and pop, so that a pop whose top was
    /// popped and pushed back meanwhile (ABA) fails its compare-and-swap.
    /// A node's link may be read after it was popped by another thread:
    /// the memory is type-stable, and the tag then fails the swap. Its
    /// top bit is [`CLOSED`] once the table is dropped.
    ///
    /// A slot keeps its hold on the table's state (`Node::shared`) from
    /// its first entry on, through its vacancies on this stack, so that an
    /// entry's fill and recycling touch no shared count; the holds of the
    /// slots on the stack are let go when the table closes it, and a slot
    /// recycled after that, or retired, lets go of its own.
    recycled: AtomicU64,
    /// Slots never used from here on (the next one's number), under its
    /// lock, which also orders the allocation of chunks.
    fresh: Mutex<u64>,
    first_id: u64,
}

/// The chunk of `slot` and its place there.
#[inline]
fn split(slot: u64) -> Option<(usize, usize)> {
    let c = (slot / FIRST_CHUNK + 1).ilog2() as usize;
    let start = FIRST_CHUNK * ((1 << c) - 1);
    (c < CHUNKS).then(|| (c, (slot - start) as usize))
}

fn chunk_len(c: usize) -> usize {
    (FIRST_CHUNK << c) as usize
}

impl<K, V> Slots<K, V> {
    pub(crate) fn new(first_id: u64) -> Self {
        assert!(
            first_id <= MAX_FIRST_ID,
            "Config::first_id is at most 2^62, not {first_id}"
        );
        Slots {
            chunks: core::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            recycled: AtomicU64::new(0),
            fresh: Mutex::new(0),
            first_id,
        }
    }

    /// The node of `slot`, if its chunk is allocated. Valid while the
    /// slots live; it may hold any entry, or none.
    #[inline]
    fn node(&self, slot: u64) -> Option<NonNull<Node<K, V>>> {
        let (c, at) = split(slot)?;
        // Acquire: pairs with the Release store of a new chunk, whose
        // nodes are then seen initialized.
        let chunk = NonNull::new(self.chunks[c].load(Ordering::Acquire))?;
        // SAFETY: `at` is within the chunk's `chunk_len(c)` nodes.
        Some(unsafe { chunk.add(at) })
    }

    /// The slot that `id` names, without any check of what it holds now
    /// (compare its id). `None` if no slot has that number.
    #[inline]
    pub(crate) fn locate(&self, id: u64) -> Option<NonNull<Node<K, V>>> {
        // A vacant slot's id is `VACANT`: never a slot's name, or a lookup
        // of it would find every vacant slot's id equal.
        if id == VACANT {
            return None;
        }
        let relative = id.checked_sub(self.first_id)?;
        self.node(relative & ((1 << SLOT_BITS) - 1))
    }

    /// A slot to fill, and the id of the entry that fills it: a recycled
    /// one first (its next generation), else a fresh one.
    ///
    /// # Panics
    ///
    /// When every slot is in use or retired (about 2^32 entries).
    pub(crate) fn take(&self) -> Vacancy<K, V> {
        let (slot, generation) = match self.pop_recycled() {
            Some(reused) => reused,
            None => {
                let mut fresh = lock(&self.fresh);
                let slot = *fresh;
                let (c, at) = split(slot).expect("a table holds fewer than 2^32 entries");
                if at == 0 {
                    self.allocate(c);
                }
                *fresh += 1;
                (slot as u32, 0)
            }
        };
        Vacancy {
            node: self.node(u64::from(slot)).expect("allocated"),
            id: self.first_id + (u64::from(generation) << SLOT_BITS | u64::from(slot)),
        }
    }

    /// Gives back a vacancy that was never filled (its `make` panicked):
    /// the slot holds nothing, so no grace period is needed; it is reused
    /// with the next generation, as `id` may have been seen. The table is
    /// open (an insert is running), so the push cannot fail.
    pub(crate) fn give_back(&self, vacancy: &Vacancy<K, V>) {
        // SAFETY: the slots' memory lives while `self` does.
        let node = unsafe { vacancy.node.as_ref() };
        if let Some(generation) = self.next_generation(vacancy.id) {
            push_recycled(&self.recycled, &node.vacancy, node.slot, generation);
        }
    }

    /// Allocates chunk `c`: vacant nodes. Under the lock of `fresh`.
    fn allocate(&self, c: usize) {
        let chunk: Box<[Node<K, V>]> = (0..chunk_len(c))
            .map(|at| Node::vacant((FIRST_CHUNK * ((1 << c) - 1)) as u32 + at as u32))
            .collect();
        let chunk = Box::into_raw(chunk).cast::<Node<K, V>>();
        // Release: the nodes' initialization, for `node`'s Acquire.
        self.chunks[c].store(chunk, Ordering::Release);
    }

    /// The generation a slot whose entry had `id` is reused with, or
    /// `None` if that was its last (the slot is retired).
    pub(crate) fn next_generation(&self, id: u64) -> Option<u32> {
        let generation = ((id - self.first_id) >> SLOT_BITS) as u32;
        (generation < LAST_GENERATION).then_some(generation + 1)
    }

    /// The stack of recycled slots, for [`push_recycled`].
    pub(crate) fn recycled(&self) -> &AtomicU64 {
        &self.recycled
    }

    /// Closes the recycled stack (the table's drop): no slot is pushed on
    /// it any more, and `let_go` is called with each slot it held, whose
    /// hold on the table's state the caller then lets go of. Called once,
    /// when no insert can run (so nothing pops).
    pub(crate) fn close(&self, mut let_go: impl FnMut(NonNull<Node<K, V>>)) {
        // Acquire: every push's Release, so the links are seen.
        let head = self.recycled.swap(CLOSED, Ordering::Acquire);
        let mut next = head & LINK_SLOT;
        while let Some(slot) = next.checked_sub(1) {
            let node = self.node(slot).expect("allocated");
            // SAFETY: type-stable memory; the stack is this call's alone.
            next = unsafe { node.as_ref() }.vacancy.load(Ordering::Relaxed) & LINK_SLOT;
            let_go(node);
        }
    }

    /// The newest recycled slot and the generation it is reused with, off
    /// the stack, or `None` if it is empty.
    fn pop_recycled(&self) -> Option<(u32, u32)> {
        // Acquire: pairs with the push's Release, so the top's link is
        // seen (and, on success, everything before its recycling).
        let mut head = self.recycled.load(Ordering::Acquire);
        loop {
            // A closed stack is empty (and no insert runs then).
            let top = (head & LINK_SLOT).checked_sub(1)?;
            // SAFETY: type-stable memory, valid while `self` is.
            let node = unsafe { self.node(top).expect("allocated").as_ref() };
            // Relaxed: read after the Acquire of the head that named it;
            // if the top was popped (and its link changed) since, the tag
            // has changed and the swap fails.
            let vacancy = node.vacancy.load(Ordering::Relaxed);
            let tag = ((head >> 32) + 1) & TAG;
            // Acquire: as above. Failure Acquire too: the next head's
            // link is read next.
            match self.recycled.compare_exchange_weak(
                head,
                tag << 32 | (vacancy & LINK_SLOT),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some((top as u32, (vacancy >> 32) as u32)),
                Err(now) => head = now,
            }
        }
    }

    /// Every slot ever used (for teardown and iteration): each may hold an
    /// entry, or none.
    pub(crate) fn used(&self) -> impl Iterator<Item = NonNull<Node<K, V>>> + '_ {
        let fresh = *lock(&self.fresh);
        (0..fresh).filter_map(|slot| self.node(slot))
    }
}

/// Pushes `slot`, whose link is `vacancy`, on the `recycled` stack, to be
/// reused with `generation`. `false` if the stack is closed (the table is
/// dropped): nothing was pushed. A free function of cells only: once the
/// push lands, the slot may be taken, and the table's state (and with it
/// these atomics) let go by other threads, while this call returns.
pub(crate) fn push_recycled(
    recycled: &AtomicU64,
    vacancy: &AtomicU64,
    slot: u32,
    generation: u32,
) -> bool {
    // Relaxed: a guess; the compare-and-swap checks it.
    let mut head = recycled.load(Ordering::Relaxed);
    loop {
        if head & CLOSED != 0 {
            return false;
        }
        // Relaxed: nobody pops this slot before the swap below publishes
        // it (Release).
        vacancy.store(
            u64::from(generation) << 32 | (head & LINK_SLOT),
            Ordering::Relaxed,
        );
        let tag = ((head >> 32) + 1) & TAG;
        // Release: the link and the slot's last writes (its key dropped)
        // happen before the pop that takes it (Acquire), and before the
        // close that lets its hold go. Failure Relaxed: the next guess.
        match recycled.compare_exchange_weak(
            head,
            tag << 32 | (u64::from(slot) + 1),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => return true,
            Err(now) => head = now,
        }
    }
}

impl<K, V> Drop for Slots<K, V> {
    fn drop(&mut self) {
        for (c, chunk) in self.chunks.iter().enumerate() {
            // Relaxed: `&mut self`, nothing else is left to store one.
            let chunk = chunk.load(Ordering::Relaxed);
            if !chunk.is_null() {
                let chunk = ptr::slice_from_raw_parts_mut(chunk, chunk_len(c));
                // SAFETY: made by `Box::into_raw` in `allocate`; the slots
                // are dropped with the table's shared state, when no entry,
                // handle or lookup is left to point into them.
                drop(unsafe { Box::from_raw(chunk) });
            }
        }
    }
}
