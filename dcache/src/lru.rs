//! The LRU of unused dentries and the shrinker that reclaims them (the
//! kernel's `s_dentry_lru`, `retain_dentry`'s `d_lru_add`, and
//! `prune_dcache_sb` with `dentry_lru_isolate`).
//!
//! # Rules
//!
//! - A hashed dentry whose count reaches zero under its lock is put on the
//!   list (`last_put`, with the dentry's lock held: the list's lock nests
//!   inside dentry locks). If it is already listed it is marked
//!   [`REFERENCED`] instead, its second chance.
//! - A dentry is taken off the list by the shrinker, or by its kill
//!   (`release`) if still listed. Dentries that are in use again stay on
//!   the list until the shrinker meets them (the kernel's lazy LRU).
//! - The shrinker holds the list's lock and only *tries* dentry locks (the
//!   reverse order), skipping busy ones. Under both locks a dentry's count
//!   cannot move (a lockless get or put fails while the lock is held), so
//!   the shrinker sees a stable count when it decides, and a lockless put
//!   that reads [`ON_LRU`] and [`REFERENCED`] afterwards sees what the
//!   shrinker left (its compare-and-swap read the shrinker's unlock).
//! - A victim (count zero, not referenced) is taken off the list under both
//!   locks, and killed after the list's lock is dropped, with
//!   [`CountedRef::kill_unused`], which takes the dentry's lock again and
//!   kills only if the count is still zero. Between the two, a lookup may
//!   have revived it (then it is left alone) or someone may have killed it
//!   (then `kill_unused` finds it dead): the shrinker stays pinned
//!   throughout, so the memory is valid in both cases (every listed dentry
//!   was hashed, so it is freed only after a grace period).
//!
//! Dentries that are in use are not on the list: the bound is on unused
//! ones, as the kernel's shrinker bounds only what it can free.

use core::cell::UnsafeCell;
use core::ptr::{self, NonNull};
use std::vec::Vec;

use crossbeam_epoch as epoch;
use lockref::{CountedRef, LockRef};

use crate::dentry::{Dentry, ON_LRU, REFERENCED};
use crate::sync::{AtomicUsize, Ordering};

/// A dentry's links in the list, read and written only under the list's
/// lock.
pub(crate) struct LruLinks(UnsafeCell<Links>);

#[derive(Clone, Copy)]
struct Links {
    /// Towards the most recently added end.
    newer: *mut Dentry,
    /// Towards the oldest end.
    older: *mut Dentry,
}

impl LruLinks {
    pub(crate) fn new() -> Self {
        LruLinks(UnsafeCell::new(Links {
            newer: ptr::null_mut(),
            older: ptr::null_mut(),
        }))
    }
}

/// The list proper: guarded by [`Lru::list`]'s lock.
struct List {
    /// Most recently added.
    newest: *mut Dentry,
    /// Next to reclaim.
    oldest: *mut Dentry,
    len: usize,
}

// SAFETY: the pointers are to dentries, which are Send + Sync; the list
// is only reached under its lock.
unsafe impl Send for List {}

impl List {
    /// # Safety
    ///
    /// The list's lock is held (`&mut self` from its guard) and `d` is a
    /// live dentry on no list.
    unsafe fn push_newest(&mut self, d: *mut Dentry) {
        // SAFETY: the caller's guarantee; links are ours under the lock.
        let links = unsafe { &mut *(*d).lru.0.get() };
        links.newer = ptr::null_mut();
        links.older = self.newest;
        if self.newest.is_null() {
            self.oldest = d;
        } else {
            // SAFETY: listed dentries are valid while listed.
            unsafe { (*(*self.newest).lru.0.get()).newer = d };
        }
        self.newest = d;
        self.len += 1;
    }

    /// # Safety
    ///
    /// The list's lock is held and `d` is on this list.
    unsafe fn unlink(&mut self, d: *mut Dentry) {
        // SAFETY: the caller's guarantee.
        let Links { newer, older } = unsafe { *(*d).lru.0.get() };
        if newer.is_null() {
            self.newest = older;
        } else {
            // SAFETY: a listed neighbour.
            unsafe { (*(*newer).lru.0.get()).older = older };
        }
        if older.is_null() {
            self.oldest = newer;
        } else {
            // SAFETY: a listed neighbour.
            unsafe { (*(*older).lru.0.get()).newer = newer };
        }
        self.len -= 1;
    }
}

/// The LRU of unused dentries and its bound.
pub(crate) struct Lru {
    /// The list, behind a spinlock (a `LockRef` used only as a lock, as
    /// the hash buckets' are).
    list: LockRef<List>,
    /// The list's length, stored under the lock, read without it to decide
    /// whether to shrink.
    len: AtomicUsize,
    /// Unused dentries kept before the shrinker runs.
    max_unused: usize,
}

/// Victims collected per pass of the shrinker: the list's lock is dropped
/// and taken again between passes (the kernel's `SHRINK_BATCH`).
const SHRINK_BATCH: usize = 128;

impl Lru {
    pub(crate) fn new(max_unused: usize) -> Self {
        Lru {
            list: LockRef::new(List {
                newest: ptr::null_mut(),
                oldest: ptr::null_mut(),
                len: 0,
            }),
            len: AtomicUsize::new(0),
            max_unused,
        }
    }

    /// Dentries on the list now.
    pub(crate) fn len(&self) -> usize {
        // Relaxed: a snapshot for a heuristic or a report.
        self.len.load(Ordering::Relaxed)
    }

    /// How many unused dentries to reclaim before one more dentry is
    /// allocated, so that the new one, once it too is unused, still fits
    /// the bound: the list may hold at most `max_unused - 1` before an
    /// allocation. (Reclaiming to `max_unused` let the LRU rest at
    /// `max_unused + 1`.) Never more than the list holds.
    #[inline]
    pub(crate) fn excess_before_alloc(&self) -> usize {
        let len = self.len();
        (len + 1).saturating_sub(self.max_unused).min(len)
    }

    /// Whether the bound lets any unused dentry be kept (`max_unused` is
    /// not zero).
    #[inline]
    pub(crate) fn keeps_any(&self) -> bool {
        self.max_unused != 0
    }

    /// `retain_dentry`'s LRU step, with `d`'s lock held at count zero, `d`
    /// hashed and not dead: lists it, or marks a listed one referenced.
    pub(crate) fn retain(&self, d: &Dentry) {
        if d.flags() & ON_LRU != 0 {
            // Release: pairs with the Acquire flag reads of a lockless
            // put. Set under `d`'s lock; the shrinker clears it under the
            // same lock, so no update is lost (and it is atomic anyway).
            d.flags.fetch_or(REFERENCED, Ordering::Release);
            return;
        }
        let mut list = self.list.lock();
        // SAFETY: the list's lock is held, and `d` is not listed: ON_LRU
        // is set and cleared only under the list's lock, and was clear.
        unsafe { list.push_newest(ptr::from_ref(d).cast_mut()) };
        // Release: a lockless put that reads it also sees the links.
        d.flags.fetch_or(ON_LRU, Ordering::Release);
        self.len.store(list.len, Ordering::Relaxed);
    }

    /// Takes a killed dentry off the list if it is on it (`d_lru_del` in
    /// `__dentry_kill`).
    pub(crate) fn remove_dead(&self, d: &Dentry) {
        // A dead dentry is never listed again (`retain` runs only on live
        // ones), so a clear flag stays clear; a set one is checked again
        // under the lock, as the shrinker may be taking it off.
        if d.flags() & ON_LRU == 0 {
            return;
        }
        let mut list = self.list.lock();
        if d.flags() & ON_LRU != 0 {
            // SAFETY: the lock is held and ON_LRU says it is listed.
            unsafe { list.unlink(ptr::from_ref(d).cast_mut()) };
            // Relaxed: ordered by the list's lock.
            d.flags.fetch_and(!(ON_LRU | REFERENCED), Ordering::Relaxed);
            self.len.store(list.len, Ordering::Relaxed);
        }
    }

    /// One pass of `dentry_lru_isolate` from the oldest end: collects up
    /// to `want` victims, each already off the list, scanning at most
    /// `scan` dentries.
    fn isolate(&self, want: usize, scan: usize, victims: &mut Vec<NonNull<Dentry>>) -> usize {
        let mut list = self.list.lock();
        let mut scanned = 0;
        while victims.len() < want && scanned < scan && !list.oldest.is_null() {
            scanned += 1;
            let d = list.oldest;
            // SAFETY: listed dentries are valid: a kill takes its dentry
            // off the list, under this lock, before freeing it.
            let dentry = unsafe { &*d };
            let Some(guard) = dentry.lockref.try_lock() else {
                // Busy (being put, revalidated or killed): give it a turn
                // at the newest end so this pass moves on.
                // SAFETY: the lock is held and `d` is listed.
                unsafe {
                    list.unlink(d);
                    list.push_newest(d);
                }
                continue;
            };
            if guard.count() == Some(0) && dentry.flags() & REFERENCED != 0 {
                // Used since it was listed: a second chance.
                // Relaxed: ordered by the dentry's lock, which we hold.
                dentry.flags.fetch_and(!REFERENCED, Ordering::Relaxed);
                // SAFETY: as above.
                unsafe {
                    list.unlink(d);
                    list.push_newest(d);
                }
                continue;
            }
            // In use again (dropped lazily: listed again at its next last
            // put), dead (its kill's `remove_dead` is waiting for this
            // lock, or will find the flag clear), or a victim: off the list.
            // SAFETY: as above.
            unsafe { list.unlink(d) };
            // Release: a lockless put that reads the flag after our unlock
            // takes the locked path and lists it again. On the `fetch_add`
            // word a revive and its put can land while we hold the lock:
            // `count` below is then a read-modify-write of the count
            // (`AcqRel`), so either it sees the put (a victim) or the put,
            // landing after it, sees the flag cleared (and lists it again).
            dentry
                .flags
                .fetch_and(!(ON_LRU | REFERENCED), Ordering::Release);
            if guard.count() == Some(0) {
                // SAFETY: `Box::into_raw` pointers are never null.
                victims.push(unsafe { NonNull::new_unchecked(d) });
            }
        }
        self.len.store(list.len, Ordering::Relaxed);
        scanned
    }
}

impl Lru {
    /// [`Dcache::shrink`]: reclaims up to `count` unused dentries, oldest
    /// first, with a second chance. Returns how many were freed.
    pub(crate) fn shrink(&self, count: usize) -> usize {
        let lru = self;
        // Pinned for the whole call: a victim collected under the list's
        // lock stays in memory until `kill_unused` has looked at it, even
        // if someone else kills and releases it meanwhile.
        let _pin = epoch::pin();
        let mut freed = 0;
        let mut victims = Vec::new();
        // Each listed dentry is scanned at most twice (a second chance,
        // then its fate) plus what is listed meanwhile: the budget stops
        // a pass that only ever meets busy or referenced dentries.
        let mut budget = lru.len().saturating_mul(2).saturating_add(SHRINK_BATCH);
        while freed < count && budget > 0 {
            let want = (count - freed).min(SHRINK_BATCH);
            let scanned = lru.isolate(want, budget.min(SHRINK_BATCH * 2), &mut victims);
            budget = budget.saturating_sub(scanned);
            if scanned == 0 {
                break;
            }
            for victim in victims.drain(..) {
                // SAFETY: `_pin` was taken before the victim was found on
                // the list, where it was alive, and it is a hashed (so
                // grace-freed) dentry: its memory outlives the call.
                if unsafe { CountedRef::kill_unused(victim) } {
                    freed += 1;
                }
            }
        }
        freed
    }

    /// Before allocating a dentry that will be hashed: brings the unused
    /// dentries back to the bound.
    #[inline]
    pub(crate) fn shrink_to_bound(&self) {
        let excess = self.excess_before_alloc();
        if excess > 0 {
            self.shrink_cold(excess);
        }
    }

    #[cold]
    #[inline(never)]
    fn shrink_cold(&self, excess: usize) {
        self.shrink(excess);
    }
}
