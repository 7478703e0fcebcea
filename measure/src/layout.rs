//! The two dentry layouts of the `stat2` comparison: the fields a lookup
//! reads (hash, parent, name) and the lockref in one cache line, or the
//! lockref on a line of its own. The kernel moved `d_lockref` out of the
//! lookup line in 2024 and reported +55% on will-it-scale's stat2; the
//! dcache uses the split layout (asserted at compile time in its
//! `dentry.rs`).
//!
//! A *lookup* reads the key fields and compares the name; a *stat* is a
//! lookup followed by a reference taken (`get_not_dead`) and dropped, as
//! `stat(2)` does on a cached dentry.

use std::hint::black_box;

use crossbeam_utils::CachePadded;
use lockref::LockRef;

use crate::get_put::lockref_get_put;

const HASH: u64 = 0x5eed;
const PARENT: usize = 1;
const NAME: [u8; 32] = *b"passwd\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";

/// What both layouts answer.
pub trait DentryLayout: Sync {
    /// The lookup's reads: hash, parent, name compare. `true` on a match
    /// (always, for these fixed fields).
    fn lookup(&self) -> bool;
    /// The dentry's lockref.
    fn lockref(&self) -> &LockRef<()>;

    /// A lookup, then a reference taken and dropped.
    #[inline]
    fn stat(&self) {
        if self.lookup() && self.lockref().get_not_dead() {
            let _ = self.lockref().put_return();
        }
    }

    /// A reference taken and dropped, without a lookup.
    #[inline]
    fn get_put(&self) {
        lockref_get_put(self.lockref());
    }
}

#[inline]
fn matches(hash: &u64, parent: &usize, name: &[u8; 32]) -> bool {
    black_box(*hash) == HASH && black_box(*parent) == PARENT && black_box(name)[..6] == NAME[..6]
}

/// A dentry's lookup fields and its lockref, held as `L`: the lockref
/// itself ([`LookupLine`]) or padded to a line of its own ([`OwnLine`]).
#[repr(C, align(64))]
pub struct Dentry<L> {
    hash: u64,
    parent: usize,
    name: [u8; 32],
    lockref: L,
}

/// The lookup fields and the lockref in one 64-byte line.
///
/// ```
/// use lockref_measure::layout::{DentryLayout, LookupLine};
///
/// let d = LookupLine::new();
/// assert!(d.lookup());
/// d.stat();
/// assert_eq!(d.lockref().count(), Some(1));
/// ```
pub type LookupLine = Dentry<LockRef<()>>;

/// The lookup fields on one line, the lockref on its own
/// ([`CachePadded`], as the dcache's dentry).
///
/// ```
/// use lockref_measure::layout::{DentryLayout, OwnLine};
///
/// let d = OwnLine::new();
/// d.stat();
/// assert_eq!(d.lockref().count(), Some(1));
/// ```
pub type OwnLine = Dentry<CachePadded<LockRef<()>>>;

// The two layouts are what their names say.
const _: () = assert!(std::mem::offset_of!(LookupLine, lockref) + 8 <= 64);
const _: () = assert!(std::mem::offset_of!(OwnLine, lockref) >= 64);

/// How a layout holds its lockref.
pub trait LockRefSlot: Sync {
    /// A new lockref with one reference (the cache's), held this way.
    fn new() -> Self;
    /// The lockref.
    fn lockref(&self) -> &LockRef<()>;
}

impl LockRefSlot for LockRef<()> {
    fn new() -> Self {
        LockRef::new(())
    }

    #[inline]
    fn lockref(&self) -> &LockRef<()> {
        self
    }
}

impl LockRefSlot for CachePadded<LockRef<()>> {
    fn new() -> Self {
        CachePadded::new(LockRef::new(()))
    }

    #[inline]
    fn lockref(&self) -> &LockRef<()> {
        self
    }
}

impl<L: LockRefSlot> Dentry<L> {
    /// A cached dentry with one reference (the cache's).
    pub fn new() -> Self {
        Dentry {
            hash: HASH,
            parent: PARENT,
            name: NAME,
            lockref: L::new(),
        }
    }
}

impl<L: LockRefSlot> Default for Dentry<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: LockRefSlot> DentryLayout for Dentry<L> {
    #[inline]
    fn lookup(&self) -> bool {
        matches(&self.hash, &self.parent, &self.name)
    }

    #[inline]
    fn lockref(&self) -> &LockRef<()> {
        self.lockref.lockref()
    }
}
