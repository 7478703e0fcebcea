//! What exists only for tests and measurements (feature `testing`): the
//! leak check, the pseudo root, the per-thread count of deferred jobs, and
//! the per-dentry lockref counters. Not for production use.

use std::collections::HashMap;
use std::format;
use std::string::String;
use std::vec::Vec;

use crossbeam_epoch as epoch;

use crate::cache::Dcache;
use crate::dentry::{Dentry, ON_LRU};
use crate::dentry_ref::DentryRef;
use crate::path_ref::MountRef;
use crate::sync::Ordering;

pub use crate::task_work::{deferred_on_this_thread, task_work_atomics_on_this_thread};

/// A reference count that [`Dcache::check_balanced`] found off its cached
/// baseline, or a count of objects that does not match what the cache
/// holds.
///
/// ```
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// let root = cache.root(); // an outstanding handle
/// let err = cache.check_balanced().unwrap_err();
/// assert!(err.to_string().contains("root"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imbalance(pub String);

impl core::fmt::Display for Imbalance {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "dcache imbalance: {}", self.0)
    }
}

impl std::error::Error for Imbalance {}

/// What [`Dcache::check_balanced`] counted.
///
/// ```
/// use lockref_dcache::testing::Balance;
/// use lockref_dcache::{Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let _ = cache.open("/missing", OpenFlags::RDONLY);
/// assert_eq!(cache.check_balanced().unwrap(), Balance { hashed: 1, negative: 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Balance {
    /// Hashed (cached) dentries, negative ones included.
    pub hashed: usize,
    /// Of those, negative (cached misses).
    pub negative: usize,
}

impl Dcache {
    /// The pseudo filesystem's root, referenced (for accounting tests).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.pseudo_root().count(), 2); // the cache's and ours
    /// ```
    pub fn pseudo_root(&self) -> DentryRef<'_> {
        // SAFETY: the cache holds a reference on the pseudo root.
        unsafe { self.pseudo_root.as_ref() }.lockref.get();
        // SAFETY: this cache's pseudo root; the reference was just taken.
        unsafe { DentryRef::from_raw(self.pseudo_root) }
    }

    // ----- accounting -----

    /// Checks that every count is at its cached baseline, as it must be
    /// when no handle (path, dentry, file) is outstanding: each hashed
    /// dentry's count is the number of its live children, each root's is
    /// one more (the cache's own), the mounts hold no references, no file
    /// is alive, the live dentries are exactly the hashed ones, the two
    /// roots, and the unhashed directories that hashed children keep
    /// (renamed or removed with cached children, each counted by them),
    /// and every unused one is on the LRU, which holds nothing else.
    ///
    /// # Errors
    ///
    /// [`Imbalance`] naming the first count found off.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// assert_eq!(cache.check_balanced().unwrap().hashed, 1);
    /// ```
    pub fn check_balanced(&self) -> Result<Balance, Imbalance> {
        let guard = epoch::pin();
        let mut hashed: Vec<&Dentry> = Vec::new();
        for bucket in self.table.buckets.iter() {
            let mut cur = bucket.head.load(Ordering::Acquire, &guard);
            // SAFETY: as in `lookup_rcu`.
            while let Some(d) = unsafe { cur.as_ref() } {
                if d.is_hashed() {
                    hashed.push(d);
                }
                cur = d.next.load(Ordering::Acquire, &guard);
            }
        }
        // Unhashed directories that cached children keep alive (a rename or
        // rmdir drops a directory's name, not its children's): each is
        // counted by its children and may sit on the LRU until they go.
        let is_hashed: std::collections::HashSet<*const Dentry> =
            hashed.iter().map(|d| *d as *const Dentry).collect();
        let mut kept: Vec<&Dentry> = Vec::new();
        let mut seen: std::collections::HashSet<*const Dentry> = std::collections::HashSet::new();
        for d in &hashed {
            let mut p = d.parent();
            while !core::ptr::eq(p, *d)
                && !p.is_self_parented()
                && !is_hashed.contains(&(p as *const Dentry))
                && seen.insert(p as *const Dentry)
            {
                kept.push(p);
                p = p.parent();
            }
        }
        let mut children: HashMap<*const Dentry, u32> = HashMap::new();
        for d in hashed.iter().chain(&kept) {
            *children.entry(d.parent.as_ptr().cast_const()).or_default() += 1;
        }
        let kids = |d: *const Dentry| children.get(&d).copied().unwrap_or(0);
        let mut negative = 0;
        let mut listed = 0;
        for d in &kept {
            listed += usize::from(d.flags() & ON_LRU != 0);
            let (have, want) = (d.lockref.count(), Some(kids(*d as *const Dentry)));
            if have != want || want == Some(0) {
                return Err(Imbalance(format!(
                    "unhashed dentry {:?}: count {have:?}, expected {want:?} (its cached children)",
                    String::from_utf8_lossy(d.name.as_bytes())
                )));
            }
        }
        for d in &hashed {
            let on_lru = d.flags() & ON_LRU != 0;
            if d.lockref.count() == Some(0) && !on_lru {
                return Err(Imbalance(format!(
                    "dentry {:?}: unused, but not on the LRU (never reclaimable)",
                    String::from_utf8_lossy(d.name.as_bytes())
                )));
            }
            listed += usize::from(on_lru);
            let want = Some(kids(*d as *const Dentry));
            let have = d.lockref.count();
            if have != want {
                return Err(Imbalance(format!(
                    "dentry {:?}: count {have:?}, expected {want:?} (its cached children)",
                    String::from_utf8_lossy(d.name.as_bytes())
                )));
            }
            negative += usize::from(d.inode().is_none());
        }
        if listed != self.table.lru.len() {
            return Err(Imbalance(format!(
                "the LRU holds {} dentries, {listed} hashed ones (or unhashed ones their children keep) say they are on it",
                self.table.lru.len()
            )));
        }
        for (what, root) in [("root", self.root), ("pseudo root", self.pseudo_root)] {
            // SAFETY: the roots live as long as the cache.
            let have = unsafe { root.as_ref() }.lockref.count();
            let want = Some(1 + kids(root.as_ptr()));
            if have != want {
                return Err(Imbalance(format!(
                    "{what}: count {have:?}, expected {want:?}"
                )));
            }
        }
        for (what, mnt) in [
            ("root mount", &self.root_mnt),
            ("pseudo mount", &self.pseudo_mnt),
        ] {
            if mnt.count() != 0 {
                return Err(Imbalance(format!(
                    "{what}: {} references held",
                    mnt.count()
                )));
            }
        }
        if self.live_files() != 0 {
            return Err(Imbalance(format!("{} files alive", self.live_files())));
        }
        if self.live_dentries() != hashed.len() + kept.len() + 2 {
            return Err(Imbalance(format!(
                "{} live dentries, {} hashed + {} unhashed their children keep + 2 roots",
                self.live_dentries(),
                hashed.len(),
                kept.len()
            )));
        }
        Ok(Balance {
            hashed: hashed.len(),
            negative,
        })
    }
}

impl DentryRef<'_> {
    /// The counters of this dentry's lockref: how many
    /// operations each path performed on it. (On the compare-and-swap word
    /// only: the `fetch_add` word has no counters.)
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// let root = cache.root();
    /// root.dentry().reset_lockref_stats();
    /// let again = root.dentry().clone(); // dget
    /// assert_eq!(root.dentry().lockref_stats().operations, 1);
    /// ```
    #[cfg(not(lockref_dcache_add_word))]
    pub fn lockref_stats(&self) -> lockref::StatsSnapshot {
        self.dentry().lockref.raw().stats()
    }

    /// Sets this dentry's lockref counters to zero.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// let root = cache.root();
    /// root.dentry().reset_lockref_stats();
    /// assert_eq!(root.dentry().lockref_stats().operations, 0);
    /// ```
    #[cfg(not(lockref_dcache_add_word))]
    pub fn reset_lockref_stats(&self) {
        self.dentry().lockref.raw().reset_stats();
    }

    /// Exclusive acquisitions of this directory's `i_rwsem` so far
    /// ; zero for a negative dentry.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// assert_eq!(cache.root().dentry().inode_write_locks(), 1); // the mkdir
    /// ```
    pub fn inode_write_locks(&self) -> usize {
        self.dentry().inode().map_or(0, |i| {
            i.write_locks.load(core::sync::atomic::Ordering::Relaxed)
        })
    }
}

impl MountRef<'_> {
    /// The references the mount holds now (exact when nothing races).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// let root = cache.root();
    /// let again = root.clone(); // path_get: mntget + dget
    /// assert_eq!(root.mnt().count(), 2);
    /// ```
    pub fn count(&self) -> isize {
        self.mnt.count()
    }
}
