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
//! A new inode's slot comes with the descriptor its lookup opened and no
//! file handle; its first eviction makes the handle from that descriptor
//! (`DescriptorSlot`), so the inodes that stay cached, the common case,
//! cost no `name_to_handle_at`.
//!
//! Accounting: every descriptor in a slot was installed with one entry in
//! the clock, and an entry leaves the clock when its inode died (its
//! descriptor closed with it) or when the hand picks it, and then the
//! installing thread empties its slot right after the clock's lock, or
//! pins it (its filesystem gave no handle, counted in
//! [`DescriptorStats::unhandled`]). A pinned slot keeps its descriptor for
//! its inode's life, out of the clock but within the budget: the clock has
//! what the pinned leave ([`DescriptorStats::pinned`]). Slots are pinned
//! from the start where their mount has no descriptor to reopen through
//! (`mounts.rs`), and lookups stop making such inodes once they hold half
//! the budget ([`Descriptors::may_pin`]). So once an install returns, the
//! descriptors the cache holds exceed the budget by at most the victims
//! other installs are emptying at that moment (one each, usually);
//! requests in flight hold at most one more each.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::file_handle;
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
    /// Descriptors kept out of the clock for good: inodes whose
    /// filesystem gave no handle when they were first evicted (none on a
    /// filesystem that gives handles, which the share's root's must).
    pub unhandled: u64,
    /// Descriptors evicted because their file was deleted on the host
    /// (`sweep.rs`).
    pub deleted_closed: u64,
    /// Descriptors held now for their inode's life, never evicted (the
    /// unhandled ones, and those of inodes on a mount with no descriptor
    /// to reopen by): within the budget, which leaves the clock the rest.
    pub pinned: usize,
}

/// The bounded cache of reopened descriptors.
pub(crate) struct Descriptors {
    budget: usize,
    clock: Mutex<VecDeque<Weak<DescriptorSlot>>>,
    /// Live slots whose descriptor is never evicted (each slot's drop
    /// takes itself off).
    pinned: Arc<AtomicUsize>,
    deleted_closed: AtomicU64,
    reopens: AtomicU64,
    evictions: AtomicU64,
    unhandled: AtomicU64,
}

impl Descriptors {
    /// The most descriptors the cache keeps.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// A cache keeping at most `budget` descriptors (at least one).
    pub(crate) fn new(budget: usize) -> Self {
        Descriptors {
            budget: budget.max(1),
            clock: Mutex::new(VecDeque::new()),
            pinned: Arc::new(AtomicUsize::new(0)),
            deleted_closed: AtomicU64::new(0),
            reopens: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            unhandled: AtomicU64::new(0),
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
    /// clock, and evicts past the budget. The clock's lock only picks the
    /// victims: their handles are made and their descriptors closed after
    /// it (system calls, which under the lock held every other request's
    /// install behind them).
    pub(crate) fn register(&self, slot: &Arc<DescriptorSlot>) {
        let victims = {
            let mut clock = self.clock.lock().unwrap_or_else(|e| e.into_inner());
            clock.push_back(Arc::downgrade(slot));
            Self::pick_victims(&mut clock, self.clock_budget())
        };
        for victim in victims {
            if !Self::has_handle(&victim) {
                // No handle to reopen it by: it keeps its descriptor, out
                // of the clock but within the budget.
                self.pin(&victim);
                // Relaxed: a statistic.
                self.unhandled.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let evicted = victim.fd.write().unwrap_or_else(|e| e.into_inner()).take();
            if evicted.is_some() {
                // Relaxed: a statistic.
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
            // Closed here, unless a request still holds it (then when it
            // ends).
            drop(evicted);
        }
    }

    /// What the budget leaves the clock beside the pinned descriptors.
    fn clock_budget(&self) -> usize {
        // Relaxed: a bound read afresh at every install; a slot pinned or
        // dropped meanwhile moves it by one until the next.
        self.budget
            .saturating_sub(self.pinned.load(Ordering::Relaxed))
    }

    /// Counts `slot`'s descriptor against the budget for its life, out of
    /// the clock (it is never evicted); its drop gives the place back.
    pub(crate) fn pin(&self, slot: &DescriptorSlot) {
        slot.unevictable.take(&self.pinned);
    }

    /// Whether another descriptor may be pinned: the pinned ones take at
    /// most half the budget, so that the inodes named by handle always
    /// have the other half, and nobody's `EMFILE` comes from a user who
    /// made many inodes that cannot be evicted.
    pub(crate) fn may_pin(&self) -> bool {
        // Relaxed: as in `clock_budget`; racing pins may pass the half by
        // one each.
        self.pinned.load(Ordering::Relaxed) < self.budget.div_ceil(2)
    }

    /// Evicts every cached descriptor whose file has no link left on the
    /// host (deleted behind the server's back: `sweep.rs`), if it has a
    /// handle to reopen it by; returns how many. The `fstat`s and handles
    /// are made outside the clock's lock; the descriptors are taken out,
    /// and their entries off the clock, in one pass under it, so that a
    /// slot's entry and its descriptor still come and go together.
    pub(crate) fn close_deleted(&self) -> usize {
        let cached: Vec<Weak<DescriptorSlot>> = {
            let mut clock = self.clock.lock().unwrap_or_else(|e| e.into_inner());
            // Dead inodes' entries leave too: each holds its slot's
            // memory (a `Weak`), which the clock's hand frees only past
            // the budget; after a mass `FORGET`, thousands of them.
            let before = clock.len();
            clock.retain(|entry| entry.strong_count() > 0);
            if before - clock.len() >= crate::trim::FORGETS_PER_TRIM as usize {
                crate::trim::trim();
            }
            clock.iter().cloned().collect()
        };
        let deleted: Vec<Arc<DescriptorSlot>> = cached
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|slot| {
                let fd = slot.fd.read().unwrap_or_else(|e| e.into_inner()).clone();
                fd.is_some_and(|fd| nix::sys::stat::fstat(&*fd).is_ok_and(|st| st.st_nlink == 0))
            })
            .filter(|slot| Self::has_handle(slot))
            .collect();
        drop(cached);
        if deleted.is_empty() {
            return 0;
        }
        let mut closed = Vec::with_capacity(deleted.len());
        {
            let mut clock = self.clock.lock().unwrap_or_else(|e| e.into_inner());
            clock.retain(|entry| {
                let Some(slot) = deleted
                    .iter()
                    .find(|s| Weak::as_ptr(entry) == Arc::as_ptr(s))
                else {
                    return true;
                };
                closed.push(slot.fd.write().unwrap_or_else(|e| e.into_inner()).take());
                false
            });
        }
        let n = closed.iter().filter(|fd| fd.is_some()).count();
        // Relaxed: a statistic.
        self.deleted_closed.fetch_add(n as u64, Ordering::Relaxed);
        // Closed here, after the lock, unless a request still holds one.
        drop(closed);
        n
    }

    /// Takes the clock's entries past `budget` off it, second chances
    /// given: the slots to empty.
    fn pick_victims(
        clock: &mut VecDeque<Weak<DescriptorSlot>>,
        budget: usize,
    ) -> Vec<Arc<DescriptorSlot>> {
        let mut victims = Vec::new();
        // Second chances are bounded: after one full turn the hand evicts
        // whatever it meets, however often it is used.
        let mut chances = clock.len();
        while clock.len() > budget {
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
            victims.push(victim);
        }
        victims
    }

    /// Whether `slot` has its file handle, made now from its descriptor
    /// if it had none: its first eviction. A slot is emptied only after
    /// this (under the slot's write lock, which a request finding it
    /// empty takes after), so a request always finds the handle to reopen
    /// by. Made past the budget only, once per inode (two evictions of one
    /// slot may both make it: the first set is kept).
    fn has_handle(slot: &DescriptorSlot) -> bool {
        if slot.handle.get().is_some() {
            return true;
        }
        let fd = slot.fd.read().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(fd) = fd else {
            // Emptied with no handle: nothing to evict (never happens:
            // only an eviction empties a slot).
            return false;
        };
        match file_handle::handle_of(fd.as_fd()) {
            Ok((handle, _)) => {
                // Another eviction of the slot may have set it meanwhile:
                // the same inode's handle either way.
                let _ = slot.handle.set(handle);
                true
            }
            Err(_) => false,
        }
    }

    pub(crate) fn stats(&self) -> DescriptorStats {
        DescriptorStats {
            budget: self.budget,
            cached: self.clock.lock().unwrap_or_else(|e| e.into_inner()).len(),
            reopens: self.reopens.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            unhandled: self.unhandled.load(Ordering::Relaxed),
            pinned: self.pinned.load(Ordering::Relaxed),
            deleted_closed: self.deleted_closed.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests;
