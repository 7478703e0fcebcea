//! A hash bucket: a chain of nodes that lookups by key walk without locks
//! or references (under an epoch pin, the kernel's RCU walk), and a lock
//! that serializes the chain's writers.

use core::ptr::NonNull;

use crossbeam_epoch::{self as epoch, Guard, Shared};

use crate::node::Node;
use crate::sync::{AtomicUsize, Mutex, Ordering};

/// A chain and the lock of its writers.
pub(crate) struct Bucket<K, V> {
    pub(crate) lock: Mutex<()>,
    head: epoch::Atomic<Node<K, V>>,
    /// The entries of this bucket's keys inserted and not yet released
    /// (on the chain or taken off it), written only under `lock`: a
    /// plain load and store beside the lock's line, where one count for
    /// the whole table was a read-modify-write on a line every insert
    /// and release of every thread moved.
    entries: AtomicUsize,
}

impl<K, V> Bucket<K, V> {
    pub(crate) fn new() -> Self {
        Bucket {
            lock: Mutex::new(()),
            head: epoch::Atomic::null(),
            entries: AtomicUsize::new(0),
        }
    }

    /// The bucket's entries now (a snapshot).
    pub(crate) fn entries(&self) -> usize {
        // Relaxed: a snapshot.
        self.entries.load(Ordering::Relaxed)
    }

    /// One entry more (`+1`) or less (`-1`). The caller holds `self.lock`.
    pub(crate) fn count_entry(&self, change: isize) {
        // Relaxed, and no read-modify-write: only the lock's holder
        // writes it, and the lock orders the writers.
        let now = self.entries.load(Ordering::Relaxed);
        self.entries
            .store(now.wrapping_add_signed(change), Ordering::Relaxed);
    }

    /// The first node on the chain that `pred` accepts, without taking
    /// anything. The node holds the entry it held when reached while
    /// `guard` is held, but may be dying: take a reference with
    /// `CountedRef::try_get` before trusting it past the guard. The pointer
    /// has the slots' provenance (it is the chain's).
    pub(crate) fn find(
        &self,
        guard: &Guard,
        mut pred: impl FnMut(&Node<K, V>) -> bool,
    ) -> Option<NonNull<Node<K, V>>> {
        // Acquire on every link: a node published by `push` is seen fully
        // initialized.
        let mut cur = self.head.load(Ordering::Acquire, guard);
        // SAFETY: a slot reached on the chain is recycled only after a
        // grace period that cannot end while `guard` pins this thread, and
        // its memory lives while the table's state does.
        while let Some(node) = unsafe { cur.as_ref() } {
            if pred(node) {
                return NonNull::new(cur.as_raw().cast_mut());
            }
            cur = node.next().load(Ordering::Acquire, guard);
        }
        None
    }

    /// Links `node` at the head. The caller holds `self.lock`, and `node`
    /// is not on this chain.
    pub(crate) fn push(&self, node: NonNull<Node<K, V>>, guard: &Guard) {
        let head = self.head.load(Ordering::Relaxed, guard);
        // SAFETY: the caller's node is live (it is being inserted).
        let n = unsafe { node.as_ref() };
        // Relaxed: `node` is not reachable from this chain yet; the Release
        // store of the head publishes it with everything written before.
        n.next().store(head, Ordering::Relaxed);
        self.head
            .store(Shared::from(node.as_ptr().cast_const()), Ordering::Release);
    }

    /// Unlinks `node` if it is on the chain; returns whether it was. The
    /// caller holds `self.lock`. Walkers already past the link keep going:
    /// the node's own link still leads on, and its memory stays until the
    /// grace period ends.
    pub(crate) fn unlink(&self, node: &Node<K, V>, guard: &Guard) -> bool {
        let target: *const Node<K, V> = node;
        let next = node.next().load(Ordering::Relaxed, guard);
        let mut at = &self.head;
        loop {
            // Relaxed: the chain's writers are serialized by the lock.
            let cur = at.load(Ordering::Relaxed, guard);
            if cur.as_raw() == target {
                // Release: the chain stays readable from here on.
                at.store(next, Ordering::Release);
                return true;
            }
            // SAFETY: chain nodes are valid under the lock and the guard.
            match unsafe { cur.as_ref() } {
                Some(n) => at = n.next(),
                None => return false,
            }
        }
    }
}
