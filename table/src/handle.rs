//! [`Handle`]: an owned, counted reference to a table's entry.

use core::fmt;
use core::ops::Deref;

use lockref::CountedRef;

use crate::node::Node;
use crate::TableError;

/// An owned, counted reference to an entry of a [`Table`](crate::Table):
/// one pointer. `Clone` takes a reference (one atomic on the entry), `Drop`
/// gives it back: one atomic. When it is the last, an entry sure to die
/// (removed, marked, of a table that keeps none) is killed by that same
/// atomic; otherwise an epoch pin and a look at the entry's flags decide
/// whether it stays (unused, findable) or dies (one more atomic), with no
/// lock; only an entry not listed yet takes its lock, for the table's
/// `keep` to decide and the LRU to list it. A handle keeps the table's shared state alive: it may
/// outlive the [`Table`](crate::Table) itself.
pub struct Handle<K, V> {
    pub(crate) counted: CountedRef<Node<K, V>>,
}

impl<K: Send + Sync, V: Send + Sync> Handle<K, V> {
    /// The entry's key.
    pub fn key(&self) -> &K {
        // SAFETY: our reference keeps the entry, and its key, in its slot.
        unsafe { self.counted.key() }
    }

    /// The entry's id: unique for the table's life, never reused.
    pub fn id(&self) -> u64 {
        self.counted.id()
    }

    /// Hands this reference to a peer (a FUSE `LOOKUP` reply hands one to
    /// the kernel): the table counts it as the peer's, and
    /// [`Table::forget`](crate::Table::forget) gives it back. Returns the
    /// id to send. [`Table::hand_out`](crate::Table::hand_out) does the
    /// same for a key, in one atomic when the peer holds the entry already.
    ///
    /// All the peer's references hold one of the entry's between them:
    /// the first one handed out keeps this handle's, a later one gives it
    /// back. On a table already dropped (whose teardown ended the peer's
    /// references) the reference is given back: nobody is left to forget
    /// it.
    pub fn into_id(self) -> u64 {
        let node = &*self.counted;
        let id = node.id();
        // Before the load of the table's state (`PeerRefs::add_first_or_more`).
        let first = node.counts.peer.add_first_or_more();
        // The handle's reference, unless it became the one the peer's hold.
        let mut put = u32::from(!first);
        // SAFETY: our reference keeps the entry in its slot.
        if !unsafe { node.shared() }.is_open_now() {
            put += u32::from(node.counts.peer.end());
        }
        let ptr = CountedRef::into_raw(self.counted);
        // SAFETY: `put` counts references this call owns: the handle's,
        // unless it became the peer's, and the peer's one if the table was
        // dropped and this call ended them. Nothing reads the node after.
        unsafe { CountedRef::put_many(ptr, put) }.expect("references this call owns");
        id
    }

    /// Gives back `n` of the references the peer was handed for this
    /// entry (a FUSE `FORGET`), and this handle's with them: what
    /// [`Table::forget`](crate::Table::forget) does for an id, for a
    /// caller that reached the entry another way (by a hint, by its key).
    /// The handle holds the entry, so no epoch pin is taken; when they are
    /// the peer's last, the two references go back in one atomic.
    ///
    /// # Errors
    ///
    /// [`TableError::MoreThanHeld`] if the peer holds fewer than `n`
    /// (none, after the table was dropped): nothing changes but the
    /// handle's reference, given back as by its drop.
    pub fn forget(self, n: u64) -> Result<(), TableError> {
        let node = &*self.counted;
        let id = node.id();
        let last = match node.counts.peer.forget(n) {
            Ok(last) => last,
            Err(held) => {
                return Err(TableError::MoreThanHeld {
                    id,
                    forget: n,
                    held,
                })
            }
        };
        let ptr = CountedRef::into_raw(self.counted);
        // SAFETY: the handle's reference, and the peer's one if these were
        // its last (`PeerRefs::forget`): both this call's. Nothing reads
        // the node after.
        unsafe { CountedRef::put_many(ptr, 1 + u32::from(last)) }
            .expect("references this call owns");
        Ok(())
    }

    /// Marks the entry to die at its last put, whatever the table's
    /// `keep` says (the kernel's `d_mark_dontcache`): the way to change a
    /// decision `keep` made already, since a listed entry (kept unused
    /// once, and on the LRU since) is kept at its later last puts without
    /// asking `keep` again. It stays findable by key and by id while
    /// referenced. For an unlinked file, whose inode a peer may still
    /// name; [`Table::remove`](crate::Table::remove) also takes the entry
    /// out of the lookups by key.
    pub fn dont_keep(&self) {
        // Release: the mark happens before this handle's put, whose
        // Release the last put reads at zero (`Node::fate_without_keep`).
        self.counted
            .flags
            .fetch_or(crate::node::DONT_KEEP, crate::sync::Ordering::Release);
    }

    /// Whether lookups by key still find this entry: `false` once
    /// [`Table::remove`](crate::Table::remove) or
    /// [`Table::rename`](crate::Table::rename) took it out (the kernel's
    /// `d_unhashed`, negated). It stays so: an entry never returns to the
    /// lookups. A tree on the table asks it of a parent before a lookup
    /// below it, to refuse one under a removed or renamed directory.
    pub fn is_findable(&self) -> bool {
        self.counted.on_key_chain()
    }

    /// Whether two handles are to the same entry.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        CountedRef::ptr_eq(&a.counted, &b.counted)
    }

    /// The references the peer holds on this entry now (a snapshot).
    pub fn peer_refs(&self) -> u64 {
        self.counted.counts.peer.held()
    }

    /// The entry's count now (a snapshot): its handles, and one for all
    /// the peer's references if it holds any.
    pub fn count(&self) -> u32 {
        self.counted.counts.lockref.count().unwrap_or(0)
    }

    /// The operation counters of the entry's lockref (feature `testing`),
    /// for tests that count the atomics a path performs.
    #[cfg(feature = "testing")]
    pub fn lockref_stats(&self) -> lockref::StatsSnapshot {
        self.counted.counts.lockref.raw().stats()
    }

    /// Sets the entry's lockref counters to zero (feature `testing`).
    #[cfg(feature = "testing")]
    pub fn reset_lockref_stats(&self) {
        self.counted.counts.lockref.raw().reset_stats();
    }
}

impl<K: Send + Sync, V: Send + Sync> Clone for Handle<K, V> {
    fn clone(&self) -> Self {
        Handle {
            counted: self.counted.clone(),
        }
    }
}

impl<K: Send + Sync, V: Send + Sync> Deref for Handle<K, V> {
    type Target = V;

    fn deref(&self) -> &V {
        // SAFETY: our reference keeps the entry, and its value, alive.
        unsafe { self.counted.value() }
    }
}

impl<K: Send + Sync + fmt::Debug, V: Send + Sync + fmt::Debug> fmt::Debug for Handle<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("id", &self.id())
            .field("key", self.key())
            .field("value", &**self)
            .finish()
    }
}
