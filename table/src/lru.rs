//! The list of unused entries (count zero, kept by the user's `keep`),
//! oldest first, reclaimed past the table's bound. An entry revived by a
//! lookup stays listed (the lookup writes nothing but the entry's count);
//! the reclaimer skips it, and its next last put lists it again.

use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};

use crate::node::{Node, ON_LRU};
use crate::sync::{lock, AtomicUsize, Mutex, Ordering};

/// The previous (older) and the next (newer) node on the list.
type Neighbours<K, V> = (*mut Node<K, V>, *mut Node<K, V>);

/// A node's links on the list, used only under the list's lock.
pub(crate) struct LruLinks<K, V> {
    links: UnsafeCell<Neighbours<K, V>>,
}

impl<K, V> LruLinks<K, V> {
    pub(crate) fn new() -> Self {
        LruLinks {
            links: UnsafeCell::new((ptr::null_mut(), ptr::null_mut())),
        }
    }
}

struct List<K, V> {
    /// The oldest and the newest listed nodes.
    oldest: *mut Node<K, V>,
    newest: *mut Node<K, V>,
}

// SAFETY: the pointers are to `Sync` nodes, used under the list's lock.
unsafe impl<K: Send + Sync, V: Send + Sync> Send for List<K, V> {}

/// The list, and its length for a lockless read.
pub(crate) struct Lru<K, V> {
    list: Mutex<List<K, V>>,
    len: AtomicUsize,
}

impl<K, V> Lru<K, V> {
    pub(crate) fn new() -> Self {
        Lru {
            list: Mutex::new(List {
                oldest: ptr::null_mut(),
                newest: ptr::null_mut(),
            }),
            len: AtomicUsize::new(0),
        }
    }

    /// Listed nodes now (in use ones among them until the reclaimer meets
    /// them).
    pub(crate) fn len(&self) -> usize {
        // Relaxed: a snapshot for a bound or a report.
        self.len.load(Ordering::Relaxed)
    }

    /// Lists `node` as the newest, unless listed, if the list has room
    /// for it within `bound`: listed nodes found in use (revived since
    /// they were listed) are unlisted first to make room (their next last
    /// put lists them again). Returns whether `node` is listed; `false`
    /// means `bound` unused nodes are listed already, and the caller kills
    /// `node` instead of keeping it, so that the bound holds at rest. The
    /// caller holds the node's lock at count zero (its last put).
    ///
    /// A node listed already costs no list lock, as the kernel's
    /// `retain_dentry` tests `DCACHE_LRU_LIST` under the dentry's lock:
    /// the flag read under the node's lock is exact, since every clearing
    /// of it is ordered with that lock. The in-use unlisting below clears
    /// it holding the unlisted node's lock; `pop_oldest` clears it before
    /// its caller takes the node's lock (`kill_unused`), which then kills
    /// a node kept at zero meanwhile; `remove` only for a dead node.
    pub(crate) fn retain(&self, node: &Node<K, V>, bound: usize) -> bool {
        // Relaxed: under the node's lock (see above).
        if node.flags.load(Ordering::Relaxed) & ON_LRU != 0 {
            return true;
        }
        // Read clear, it stays clear: only this node's own last put (this
        // call, under the node's lock) sets it.
        let mut list = lock(&self.list);
        while self.len() >= bound {
            let Some(oldest) = NonNull::new(list.oldest) else {
                break;
            };
            // SAFETY: listed, so live: unlisted under this lock by its
            // release, before its slot is recycled.
            let oldest = unsafe { oldest.as_ref() };
            // Its lock, if free: waiting for it here (holding `node`'s and
            // the list's) could deadlock with its own last put, which
            // holds it and waits for the list. Under it the count is
            // exact, and the unlisting is ordered with the node's next
            // last put, which then finds it unlisted and lists it again.
            let Some(oldest_locked) = oldest.counts.lockref.try_lock() else {
                break;
            };
            if oldest_locked.count().is_some_and(|n| n > 0) {
                // SAFETY: listed, under the lock.
                unsafe { Self::unlink(&mut list, oldest) };
                self.len.fetch_sub(1, Ordering::Relaxed);
            } else {
                break;
            }
        }
        if self.len() >= bound {
            return false;
        }
        node.flags.fetch_or(ON_LRU, Ordering::Relaxed);
        let this = ptr::from_ref(node).cast_mut();
        // SAFETY: under the list's lock; `node` is not listed, the newest
        // (if any) is, and both are live (a listed node is unlisted by its
        // release, before its slot is recycled).
        unsafe {
            *node.lru.links.get() = (list.newest, ptr::null_mut());
            match NonNull::new(list.newest) {
                Some(newest) => (*newest.as_ref().lru.links.get()).1 = this,
                None => list.oldest = this,
            }
        }
        list.newest = this;
        self.len.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Unlists the oldest node and returns it, or `None` if the list is
    /// empty. The node holds its entry while the caller's epoch pin, taken
    /// before this call, is held (its slot is recycled only after).
    pub(crate) fn pop_oldest(&self) -> Option<NonNull<Node<K, V>>> {
        let mut list = lock(&self.list);
        let oldest = NonNull::new(list.oldest)?;
        // SAFETY: listed, so live: unlisted under this lock by its release,
        // before its slot is recycled.
        unsafe { Self::unlink(&mut list, oldest.as_ref()) };
        self.len.fetch_sub(1, Ordering::Relaxed);
        Some(oldest)
    }

    /// Unlists a node being released, if listed. A node never listed (a
    /// table that keeps none, or a node killed at its first last put)
    /// costs no list lock: a dead node is never listed again (`retain`
    /// runs only in a last put, before the death), so a flag read clear
    /// stays clear.
    pub(crate) fn remove(&self, node: &Node<K, V>) {
        // Relaxed: the death, under the node's lock, came after any
        // listing (under the same lock) and before this release.
        if node.flags.load(Ordering::Relaxed) & ON_LRU == 0 {
            return;
        }
        let mut list = lock(&self.list);
        if node.flags.load(Ordering::Relaxed) & ON_LRU != 0 {
            // SAFETY: listed, under the lock.
            unsafe { Self::unlink(&mut list, node) };
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// # Safety
    ///
    /// The list's lock is held (`list`), and `node` is listed.
    unsafe fn unlink(list: &mut List<K, V>, node: &Node<K, V>) {
        // SAFETY: under the lock; listed neighbours are live.
        unsafe {
            let (prev, next) = *node.lru.links.get();
            match NonNull::new(prev) {
                Some(p) => (*p.as_ref().lru.links.get()).1 = next,
                None => list.oldest = next,
            }
            match NonNull::new(next) {
                Some(n) => (*n.as_ref().lru.links.get()).0 = prev,
                None => list.newest = prev,
            }
            *node.lru.links.get() = (ptr::null_mut(), ptr::null_mut());
        }
        node.flags.fetch_and(!ON_LRU, Ordering::Relaxed);
    }
}
