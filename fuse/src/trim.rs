//! Memory given back to the host after the kernel forgets many inodes.
//!
//! An inode the kernel forgets leaves the table: its slot stays with the
//! table (the slots are type-stable, so a request reaches an inode by its
//! slot without an epoch pin, and they are reused by the next inodes), and
//! what its value owned on the heap (the file handle's bytes, the
//! descriptor slot, the host descriptor) is freed to the C allocator. glibc
//! keeps freed memory mapped in its arenas, one per serving thread, for
//! the next allocation: after `drop_caches` made the kernel forget 100,000
//! inodes, the server kept its peak. So every [`FORGETS_PER_TRIM`]
//! forgets on a serving thread, [`forgotten`] asks glibc to give its free
//! pages back (`malloc_trim(0)`: every arena, the pages inside the heaps
//! too, not only the top). What stays is the peak number of slots (the
//! figure in the README), not the heap the inodes used.
//!
//! The count is the thread's own, so that a `FORGET` writes nothing
//! another thread reads; a trim walks the arenas' free lists under their
//! locks, so it runs once per many forgets, never per request. Other C
//! libraries (musl) keep no such arenas, and there is nothing to call.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Forgets on one serving thread between two trims.
pub(crate) const FORGETS_PER_TRIM: u32 = 1024;

thread_local! {
    /// Forgets on this thread since its last trim.
    static FORGETS: Cell<u32> = const { Cell::new(0) };
}

/// Counts one of the kernel's `FORGET`s on this thread (a `BATCH_FORGET`
/// counts each of its entries), and every [`FORGETS_PER_TRIM`]-th gives
/// the C allocator's free pages back to the host, counted in `trims`.
pub(crate) fn forgotten(trims: &AtomicU64) {
    let due = FORGETS.with(|n| {
        let count = n.get() + 1;
        n.set(count % FORGETS_PER_TRIM);
        count == FORGETS_PER_TRIM
    });
    if due {
        trim();
        // Relaxed: a counter for tests and reports.
        trims.fetch_add(1, Ordering::Relaxed);
    }
}

/// Gives the C allocator's free pages back to the host.
pub(crate) fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` has no precondition: it takes each arena's
    // lock and releases (madvise) whole free pages; no pointer of ours is
    // passed or invalidated (only free memory is given back).
    unsafe {
        libc::malloc_trim(0);
    }
}
