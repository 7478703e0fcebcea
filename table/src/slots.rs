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
use crate::sync::{lock, AtomicPtr, Mutex, Ordering};

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

/// The slots not in use, under the slots' lock.
struct Unused {
    /// Slots given back (after their grace period), with the generation
    /// each is reused with.
    recycled: Vec<(u32, u32)>,
    /// Slots never used from here on.
    fresh: u64,
}

pub(crate) struct Slots<K, V> {
    /// Chunk `c`, once allocated: `FIRST_CHUNK << c` nodes, never freed
    /// before the slots are dropped.
    chunks: [AtomicPtr<Node<K, V>>; CHUNKS],
    unused: Mutex<Unused>,
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
            unused: Mutex::new(Unused {
                recycled: Vec::new(),
                fresh: 0,
            }),
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
        let mut unused = lock(&self.unused);
        let (slot, generation) = match unused.recycled.pop() {
            Some(reused) => reused,
            None => {
                let slot = unused.fresh;
                let (c, at) = split(slot).expect("a table holds fewer than 2^32 entries");
                if at == 0 {
                    self.allocate(c);
                }
                unused.fresh += 1;
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
    /// with the next generation, as `id` may have been seen.
    pub(crate) fn give_back(&self, vacancy: &Vacancy<K, V>) {
        // SAFETY: the slots' memory lives while `self` does.
        let slot = unsafe { vacancy.node.as_ref() }.slot;
        self.recycle(slot, vacancy.id);
    }

    /// Allocates chunk `c`: vacant nodes. Under the slots' lock.
    fn allocate(&self, c: usize) {
        let chunk: Box<[Node<K, V>]> = (0..chunk_len(c))
            .map(|at| Node::vacant((FIRST_CHUNK * ((1 << c) - 1)) as u32 + at as u32))
            .collect();
        let chunk = Box::into_raw(chunk).cast::<Node<K, V>>();
        // Release: the nodes' initialization, for `node`'s Acquire.
        self.chunks[c].store(chunk, Ordering::Release);
    }

    /// Gives back a slot whose entry had `id`, after its grace period: it
    /// is reused with the next generation, or retired after the last.
    pub(crate) fn recycle(&self, slot: u32, id: u64) {
        let generation = ((id - self.first_id) >> SLOT_BITS) as u32;
        if generation < LAST_GENERATION {
            lock(&self.unused).recycled.push((slot, generation + 1));
        }
    }

    /// Every slot ever used (for teardown and iteration): each may hold an
    /// entry, or none.
    pub(crate) fn used(&self) -> impl Iterator<Item = NonNull<Node<K, V>>> + '_ {
        let fresh = lock(&self.unused).fresh;
        (0..fresh).filter_map(|slot| self.node(slot))
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
