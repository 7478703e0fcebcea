//! [`PeerRefs`]: the references a peer holds on an entry (a FUSE node id's
//! lookups), counted apart from the entry's lockref.

use crate::sync::{AtomicU64, Ordering};

/// The references a peer holds on an entry: handed out by
/// `Table::hand_out` and `Handle::into_id`, given back by `Table::forget`,
/// ended by the table's teardown.
///
/// Between them they hold one reference of the entry's lockref: taken when
/// this count leaves zero, given back when it returns to zero. So handing
/// out one more, and a forget that is not the last, are one atomic here and
/// none on the lockref, and the count is a `u64` (FUSE's `nlookup`) that
/// never saturates the lockref's.
///
/// In the lockref's cache line (see `Counts`).
pub(crate) struct PeerRefs {
    held: AtomicU64,
}

impl PeerRefs {
    pub(crate) fn new() -> Self {
        PeerRefs {
            held: AtomicU64::new(0),
        }
    }

    /// The references held now (a snapshot).
    pub(crate) fn held(&self) -> u64 {
        // Relaxed: a snapshot.
        self.held.load(Ordering::Relaxed)
    }

    /// One more reference, handed out by a holder of one of the entry's
    /// references. `true` if it is the first: the caller's lockref
    /// reference becomes the one the peer's hold; otherwise the caller
    /// still owns it.
    pub(crate) fn add_first_or_more(&self) -> bool {
        // SeqCst, with `Handle::into_id`'s load of the table's state after
        // it: pairs with the teardown's store of that state and its swap
        // (`end`), so that one of the two sees this reference.
        self.held.fetch_add(1, Ordering::SeqCst) == 0
    }

    /// The first reference, on an entry not yet published (`Node::fill`):
    /// a store, no read-modify-write.
    pub(crate) fn set_first(&self) {
        // Relaxed: the revival's Release publishes it with the entry; a
        // vacant slot's count is zero (its last entry's peer references
        // were all given back, or ended), and nobody else writes it.
        self.held.store(1, Ordering::Relaxed);
    }

    /// One more reference, if the peer holds the entry already: one
    /// atomic, and none on the lockref. `false` if the peer holds none (or
    /// as many as a `u64` counts): the caller takes a reference and hands
    /// it out with `add_first_or_more`.
    pub(crate) fn add_another(&self) -> bool {
        // Relaxed: the entry stays alive because the count read is above
        // zero (the peer's lockref reference is given back only after a
        // forget brings it to zero, later in this atomic's order); the
        // lockref's own orderings publish and tear down the entry.
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                if held > 0 {
                    held.checked_add(1)
                } else {
                    None
                }
            })
            .is_ok()
    }

    /// Gives back `n` references. `Ok(true)` if they were the last: their
    /// lockref reference is then the caller's to put. `Err(held)` if the
    /// peer holds fewer than `n`: nothing changes.
    pub(crate) fn forget(&self, n: u64) -> Result<bool, u64> {
        // Relaxed: as in `add_another`; the put of the lockref reference,
        // after this, is the releasing operation.
        let held = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_sub(n)
            })?;
        Ok(n > 0 && held == n)
    }

    /// Ends every reference (the table's teardown, or a handle handed out
    /// after it). `true` if there were any: their lockref reference is then
    /// the caller's to put.
    pub(crate) fn end(&self) -> bool {
        // SeqCst: see `add_first_or_more`. Either the teardown's swap sees
        // `into_id`'s increment, or `into_id` sees the table closed and
        // swaps itself; a swap that finds references owns their one.
        self.held.swap(0, Ordering::SeqCst) > 0
    }
}
