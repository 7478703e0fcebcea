//! The descriptor cache: a bounded number of reopened `O_PATH`
//! descriptors for the inodes the table names by file handle.
//!
//! A request on such an inode clones the descriptor from the inode's slot
//! (a hit takes the slot's read lock and nothing shared), or reopens the
//! inode by its handle and installs the descriptor (a miss takes the
//! cache's lock). Past the budget, installing evicts with a clock (second
//! chance): the hand passes over slots used since its last visit, clearing
//! their mark, and empties the first unused one. An evicted descriptor
//! closes when the last request holding it ends, so a user with many files
//! costs others a reopen, never an `EMFILE`.
//!
//! Accounting: every descriptor in a slot was installed with one entry in
//! the clock, and an entry leaves the clock only after its slot was
//! emptied or skipped for good (a dead inode's entry, whose descriptor
//! closed with the inode). So the descriptors the cache holds never exceed
//! the clock's length, which never exceeds the budget once an install
//! returns; requests in flight hold at most one more each.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::host_inode::DescriptorSlot;

/// What the cache holds and has done (for tests and reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescriptorStats {
    /// The most descriptors it keeps.
    pub budget: usize,
    /// Entries in the clock: an upper bound on the descriptors it holds.
    pub cached: usize,
    /// Inodes reopened by their file handle (misses).
    pub reopens: u64,
    /// Descriptors evicted to stay within the budget.
    pub evictions: u64,
}

/// The bounded cache of reopened descriptors.
pub(crate) struct Descriptors {
    budget: usize,
    clock: Mutex<VecDeque<Weak<DescriptorSlot>>>,
    reopens: AtomicU64,
    evictions: AtomicU64,
}

impl Descriptors {
    /// A cache keeping at most `budget` descriptors (at least one).
    pub(crate) fn new(budget: usize) -> Self {
        Descriptors {
            budget: budget.max(1),
            clock: Mutex::new(VecDeque::new()),
            reopens: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The descriptor `slot` holds, if it holds one, marked used.
    pub(crate) fn cached(slot: &DescriptorSlot) -> Option<Arc<OwnedFd>> {
        let fd = slot.fd.read().unwrap_or_else(|e| e.into_inner()).clone()?;
        // Relaxed (both): a hint for the clock; a lost mark costs at most
        // one reopen. Read first, so that a hot slot's line is not
        // written on every hit.
        if !slot.used.load(Ordering::Relaxed) {
            slot.used.store(true, Ordering::Relaxed);
        }
        Some(fd)
    }

    /// Puts `fd`, just reopened, into `slot` and returns it; if another
    /// request filled the slot meanwhile, `fd` is closed and that one is
    /// returned.
    pub(crate) fn install(&self, slot: &Arc<DescriptorSlot>, fd: OwnedFd) -> Arc<OwnedFd> {
        // Relaxed: a statistic.
        self.reopens.fetch_add(1, Ordering::Relaxed);
        let fd = {
            let mut held = slot.fd.write().unwrap_or_else(|e| e.into_inner());
            if let Some(there) = held.as_ref() {
                return there.clone();
            }
            held.insert(Arc::new(fd)).clone()
        };
        self.register(slot);
        fd
    }

    /// Enters `slot`, which holds a descriptor just installed, in the
    /// clock, and evicts past the budget.
    pub(crate) fn register(&self, slot: &Arc<DescriptorSlot>) {
        let mut clock = self.clock.lock().unwrap_or_else(|e| e.into_inner());
        clock.push_back(Arc::downgrade(slot));
        // Second chances are bounded: after one full turn the hand evicts
        // whatever it meets, however often it is used.
        let mut chances = clock.len();
        while clock.len() > self.budget {
            let Some(entry) = clock.pop_front() else {
                break;
            };
            // A dead inode's entry: its descriptor closed with it.
            let Some(victim) = entry.upgrade() else {
                continue;
            };
            // Relaxed: see `cached`.
            if chances > 0 && victim.used.swap(false, Ordering::Relaxed) {
                chances -= 1;
                clock.push_back(entry);
                continue;
            }
            let evicted = victim.fd.write().unwrap_or_else(|e| e.into_inner()).take();
            if evicted.is_some() {
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn stats(&self) -> DescriptorStats {
        DescriptorStats {
            budget: self.budget,
            cached: self.clock.lock().unwrap_or_else(|e| e.into_inner()).len(),
            reopens: self.reopens.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd() -> OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    fn holds(slot: &DescriptorSlot) -> bool {
        slot.fd.read().unwrap().is_some()
    }

    #[test]
    fn the_cache_never_holds_more_than_its_budget() {
        let cache = Descriptors::new(8);
        let slots: Vec<Arc<DescriptorSlot>> = (0..100).map(|_| Arc::default()).collect();
        for (i, s) in slots.iter().enumerate() {
            drop(cache.install(s, fd()));
            assert!(cache.stats().cached <= 8);
            let held = slots[..=i].iter().filter(|s| holds(s)).count();
            assert_eq!(held, (i + 1).min(8), "descriptors past the budget");
        }
        assert_eq!(slots.iter().filter(|s| holds(s)).count(), 8);
        let stats = cache.stats();
        assert_eq!((stats.reopens, stats.evictions), (100, 92));
    }

    #[test]
    fn a_used_slot_gets_a_second_chance() {
        let cache = Descriptors::new(2);
        let (a, b, c) = (Arc::default(), Arc::default(), Arc::default());
        drop(cache.install(&a, fd()));
        drop(cache.install(&b, fd()));
        assert!(Descriptors::cached(&a).is_some(), "a hit marks a used");
        drop(cache.install(&c, fd()));
        assert!(holds(&a), "the used slot stays");
        assert!(!holds(&b), "the unused one goes");
        assert!(holds(&c));
    }

    #[test]
    fn an_evicted_descriptor_lives_while_a_request_holds_it() {
        let cache = Descriptors::new(1);
        let (a, b) = (Arc::default(), Arc::default());
        let in_flight = cache.install(&a, fd());
        drop(cache.install(&b, fd()));
        assert!(!holds(&a));
        assert_eq!(
            Arc::strong_count(&in_flight),
            1,
            "the request's is the last"
        );
        // Still open: the request can use it.
        assert!(nix::fcntl::fcntl(&*in_flight, nix::fcntl::FcntlArg::F_GETFD).is_ok());
    }

    #[test]
    fn a_dead_inodes_entry_is_reclaimed_without_counting_an_eviction() {
        let cache = Descriptors::new(1);
        let a: Arc<DescriptorSlot> = Arc::default();
        drop(cache.install(&a, fd()));
        drop(a);
        let b = Arc::default();
        drop(cache.install(&b, fd()));
        assert_eq!(cache.stats().evictions, 0);
        assert_eq!(cache.stats().cached, 1);
    }

    #[test]
    fn a_slot_filled_meanwhile_keeps_its_descriptor() {
        let cache = Descriptors::new(4);
        let a = Arc::default();
        let first = cache.install(&a, fd());
        let second = cache.install(&a, fd());
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(cache.stats().cached, 1);
    }
}
