//! A hash bucket: a chain of nodes that lookups walk without locks or
//! references (under an epoch pin, the kernel's RCU walk), and a lock that
//! serializes the chain's writers. Every node is on two chains, one by key
//! and one by id ([`Link`]).

use core::ptr::NonNull;

use crossbeam_epoch::{self as epoch, Guard, Shared};

use crate::node::Node;
use crate::sync::{Mutex, Ordering};

/// Which of a node's two chains.
#[derive(Clone, Copy)]
pub(crate) enum Link {
    /// The chain of its key's hash.
    Key,
    /// The chain of its id.
    Id,
}

/// A chain and the lock of its writers.
pub(crate) struct Bucket<K, V> {
    pub(crate) lock: Mutex<()>,
    head: epoch::Atomic<Node<K, V>>,
}

impl<K, V> Bucket<K, V> {
    pub(crate) fn new() -> Self {
        Bucket {
            lock: Mutex::new(()),
            head: epoch::Atomic::null(),
        }
    }

    /// The first node on the chain that `pred` accepts, without taking
    /// anything. The node is valid while `guard` is held but may be dying:
    /// take a reference with `CountedRef::try_get` before trusting it past
    /// the guard. The pointer has the allocation's provenance (it is the
    /// chain's), so it may be used to free.
    pub(crate) fn find(
        &self,
        link: Link,
        guard: &Guard,
        mut pred: impl FnMut(&Node<K, V>) -> bool,
    ) -> Option<NonNull<Node<K, V>>> {
        // Acquire on every link: a node published by `push` is seen fully
        // initialized.
        let mut cur = self.head.load(Ordering::Acquire, guard);
        // SAFETY: chain nodes are destroyed only after a grace period that
        // cannot end while `guard` pins this thread.
        while let Some(node) = unsafe { cur.as_ref() } {
            if pred(node) {
                return NonNull::new(cur.as_raw().cast_mut());
            }
            cur = node.next(link).load(Ordering::Acquire, guard);
        }
        None
    }

    /// Every node on the chain now (for teardown and iteration).
    pub(crate) fn collect(&self, link: Link, guard: &Guard, out: &mut Vec<NonNull<Node<K, V>>>) {
        let _ = self.find(link, guard, |node| {
            out.push(NonNull::from(node));
            false
        });
    }

    /// Links `node` at the head. The caller holds `self.lock`, and `node`
    /// is not on this chain.
    pub(crate) fn push(&self, link: Link, node: NonNull<Node<K, V>>, guard: &Guard) {
        let head = self.head.load(Ordering::Relaxed, guard);
        // SAFETY: the caller's node is live (it is being inserted).
        let n = unsafe { node.as_ref() };
        // Relaxed: `node` is not reachable from this chain yet; the Release
        // store of the head publishes it with everything written before.
        n.next(link).store(head, Ordering::Relaxed);
        self.head
            .store(Shared::from(node.as_ptr().cast_const()), Ordering::Release);
    }

    /// Unlinks `node` if it is on the chain; returns whether it was. The
    /// caller holds `self.lock`. Walkers already past the link keep going:
    /// the node's own link still leads on, and its memory stays until the
    /// grace period ends.
    pub(crate) fn unlink(&self, link: Link, node: &Node<K, V>, guard: &Guard) -> bool {
        let target: *const Node<K, V> = node;
        let next = node.next(link).load(Ordering::Relaxed, guard);
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
                Some(n) => at = n.next(link),
                None => return false,
            }
        }
    }
}
