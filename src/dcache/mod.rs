//! A minimal dentry cache built on [`LockRef`](crate::LockRef) (feature
//! `dcache`): the paths of the five seeds, each with its before and after
//! behaviour selectable at run time, so one benchmark run measures both.
//!
//! ```
//! use lockref::dcache::{Config, Dcache, Errno, OpenFlags};
//!
//! let cache = Dcache::new(Config::default());
//! cache.mkdir("/etc").unwrap();
//! let f = cache.open("/etc/passwd", OpenFlags::WRONLY.creat()).unwrap();
//! cache.close(f);
//! let f = cache.open("/etc/passwd", OpenFlags::RDONLY).unwrap();
//! assert_eq!(f.path().name(), b"passwd");
//! cache.close(f);
//! assert_eq!(cache.open("/etc/shadow", OpenFlags::RDONLY).err(), Some(Errno::NoEnt));
//! cache.check_balanced().unwrap();
//! ```
//!
//! # What it models
//!
//! | piece | kernel | here |
//! |---|---|---|
//! | dentry | `struct dentry`, `d_lockref` | a [`LockRef`](crate::LockRef) guarding the revalidation state; name, parent, inode, flags |
//! | hash table | `dentry_hashtable`, `hlist_bl` | buckets of lock-free chains, a spinlock per bucket for writers |
//! | lookup | `__d_lookup_rcu` + `lockref_get_not_dead` | [`epoch`](crossbeam_epoch)-pinned chain walk, then `get_not_dead` |
//! | path walk | RCU walk, ref walk on `-ECHILD` | the same: no references while walking, one on the result; retried taking references on a miss or a revalidating filesystem |
//! | `dput` | `fast_dput`, `retain_dentry`, `dentry_kill` | the same rules: hashed dentries stay at zero, others are killed, the parent is put |
//! | `i_rwsem` | per-inode rw semaphore | `RwLock` on the directory's entries (this filesystem's disk) |
//! | `mnt_count` | per-cpu | split per thread |
//! | `task_work` / `fput` | deferred `__fput` | a per-thread list drained when the operation returns |
//!
//! # Reclamation
//!
//! Lookups walk hash chains without locks or references while a dentry on
//! the chain may be killed at any moment. Killed dentries are unhashed and
//! then freed through [`crossbeam_epoch`] after every thread that was
//! pinned when it was unhashed has unpinned, the RCU grace period of the
//! kernel. A lookup pins (a write to a thread-local epoch word, no shared
//! line), walks, and takes a reference with `get_not_dead`, which fails on
//! a dead dentry; a dentry's name and parent never change, so no further
//! validation is needed. Type-stable memory (the kernel's
//! `SLAB_TYPESAFE_BY_RCU`) was the alternative: it would let a lookup read
//! a recycled dentry's name while it is being rewritten, which Rust can
//! only allow through atomics on every byte or a seqlock over racy reads;
//! epochs keep the memory of anything a pinned reader can reach, so plain
//! reads stay sound. Never-hashed dentries (pseudo ones) are freed at once.
//! Dropping the cache frees every cached dentry.
//!
//! # Before and after
//!
//! [`Variants`] selects, per cache, each seed's old or new behaviour.

mod cache;
mod counter;
mod dentry;
mod errno;
mod file;
mod inode;
mod mount;
mod name;
mod ops;
pub(crate) mod task_work;
#[cfg(test)]
mod tests;

use core::fmt;
use core::ptr::NonNull;
use std::boxed::Box;
use std::string::String;

use self::cache::Bucket;
use self::counter::ShardedCount;
use self::dentry::Dentry;
use self::mount::Mount;
use crate::sync::{AtomicU64, Ordering};

pub use self::errno::Errno;
pub use self::file::{EmptyFile, FileRef, OpenFlags, StrayReference};
pub use self::inode::InodeKind;
pub use self::name::NAME_MAX;
pub use self::ops::{Balance, Imbalance, Stat};
pub use self::task_work::deferred_on_this_thread;

/// The longest path, in bytes (`PATH_MAX` less its NUL).
///
/// ```
/// use lockref::dcache::{Dcache, Errno, PATH_MAX};
///
/// let cache = Dcache::new(Default::default());
/// assert_eq!(cache.stat(&"/".repeat(PATH_MAX + 1)), Err(Errno::NameTooLong));
/// ```
pub const PATH_MAX: usize = 4095;

/// The most components a path may have; deeper ones fail with
/// [`Errno::NameTooLong`].
///
/// ```
/// use lockref::dcache::{Dcache, Errno, MAX_DEPTH};
///
/// let cache = Dcache::new(Default::default());
/// assert_eq!(cache.stat(&"/a".repeat(MAX_DEPTH + 1)), Err(Errno::NameTooLong));
/// ```
pub const MAX_DEPTH: usize = 256;

/// Each seed's behaviour, old (`false`) or new (`true`).
///
/// ```
/// use lockref::dcache::{Config, Dcache, Variants};
///
/// let before = Dcache::new(Config { variants: Variants::BEFORE, ..Config::default() });
/// assert!(!before.variants().open_consume);
/// assert_eq!(Variants::default(), Variants::AFTER);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variants {
    /// Seed 000: the open consumes the walk's path reference
    /// (`vfs_open_consume`) instead of taking its own and dropping the
    /// walk's (`vfs_open`: two more atomic operations on the dentry).
    pub open_consume: bool,
    /// Seed 001: a failed open releases its unopened file at once through
    /// the token (`release_empty_file`) instead of `fput`'s deferred work.
    pub failed_open_token: bool,
    /// Seed 002: pseudo dentries are their own parent
    /// (`d_alloc_pseudo`) instead of children of a shared root
    /// (`d_alloc(root)`: its lock and count on every alloc and free).
    pub pseudo_self_parent: bool,
    /// Seed 003: `O_CREAT` looks the name up first and takes the
    /// directory's write lock only if it does not exist, instead of always.
    pub creat_lookup_first: bool,
    /// Seed 004: `try_lookup_noperm` does not revalidate what it finds.
    pub try_lookup_skips_revalidate: bool,
}

impl Variants {
    /// Every seed applied.
    pub const AFTER: Variants = Variants {
        open_consume: true,
        failed_open_token: true,
        pseudo_self_parent: true,
        creat_lookup_first: true,
        try_lookup_skips_revalidate: true,
    };

    /// No seed applied: the kernel before each patch.
    pub const BEFORE: Variants = Variants {
        open_consume: false,
        failed_open_token: false,
        pseudo_self_parent: false,
        creat_lookup_first: false,
        try_lookup_skips_revalidate: false,
    };
}

impl Default for Variants {
    fn default() -> Self {
        Variants::AFTER
    }
}

/// How to build a [`Dcache`].
///
/// ```
/// use lockref::dcache::{Config, Dcache};
///
/// let nfs_like = Dcache::new(Config { revalidate: true, buckets: 1 << 16, ..Config::default() });
/// assert!(nfs_like.stat("/").is_ok());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Hash buckets; rounded up to a power of two. Default 4096.
    pub buckets: usize,
    /// Whether the filesystem has a revalidate hook (`d_revalidate`, as a
    /// network filesystem has). It takes the directory's `i_rwsem` shared
    /// and the dentry's lock and compares the directory's generation with
    /// the one the dentry last verified. Default `false`.
    pub revalidate: bool,
    /// Old or new behaviour per seed. Default [`Variants::AFTER`].
    pub variants: Variants,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            buckets: 4096,
            revalidate: false,
            variants: Variants::AFTER,
        }
    }
}

/// A dentry cache over an in-memory filesystem. See the [module
/// docs](self).
pub struct Dcache {
    buckets: Box<[Bucket]>,
    root: NonNull<Dentry>,
    root_mnt: Mount,
    pseudo_root: NonNull<Dentry>,
    pseudo_mnt: Mount,
    /// Dentries allocated and not yet killed.
    live: ShardedCount,
    /// File objects allocated and not yet freed.
    files: ShardedCount,
    next_ino: AtomicU64,
    variants: Variants,
}

// SAFETY: the raw pointers are to the roots, owned by the cache and shared
// only through the synchronization of dentries themselves.
unsafe impl Send for Dcache {}
// SAFETY: as for `Send`: all shared state is atomic or locked.
unsafe impl Sync for Dcache {}

impl Dcache {
    /// An empty filesystem: a root directory, and a pseudo filesystem root
    /// for pipes and sockets.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.live_dentries(), 2); // the two roots
    /// ```
    pub fn new(config: Config) -> Self {
        let buckets = config.buckets.max(1).next_power_of_two();
        let mut cache = Dcache {
            buckets: (0..buckets).map(|_| Bucket::new()).collect(),
            root: NonNull::dangling(),
            root_mnt: Mount::new(),
            pseudo_root: NonNull::dangling(),
            pseudo_mnt: Mount::new(),
            live: ShardedCount::new(),
            files: ShardedCount::new(),
            next_ino: AtomicU64::new(1),
            variants: config.variants,
        };
        let flags = if config.revalidate {
            dentry::REVALIDATE
        } else {
            0
        };
        let root_inode = inode::Inode::new(cache.alloc_ino(), InodeKind::Dir);
        cache.root = cache.d_alloc(None, b"/", flags, Some(root_inode));
        let pseudo_inode = inode::Inode::new(cache.alloc_ino(), InodeKind::Dir);
        cache.pseudo_root = cache.d_alloc(None, b"pipe:", 0, Some(pseudo_inode));
        cache
    }

    /// The behaviour selected per seed.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.variants(), lockref::dcache::Variants::AFTER);
    /// ```
    pub fn variants(&self) -> Variants {
        self.variants
    }

    /// Selects each seed's behaviour for the operations that follow.
    ///
    /// ```
    /// use lockref::dcache::{Dcache, Variants};
    ///
    /// let mut cache = Dcache::new(Default::default());
    /// cache.set_variants(Variants::BEFORE);
    /// assert_eq!(cache.variants(), Variants::BEFORE);
    /// ```
    pub fn set_variants(&mut self, variants: Variants) {
        self.variants = variants;
    }

    fn alloc_ino(&self) -> u64 {
        // Relaxed: a unique number is all that is needed.
        self.next_ino.fetch_add(1, Ordering::Relaxed)
    }

    /// Dentries allocated and not yet killed (cached ones included).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/a").unwrap();
    /// assert_eq!(cache.live_dentries(), 3); // two roots and /a
    /// ```
    pub fn live_dentries(&self) -> usize {
        self.live.sum().max(0) as usize
    }

    /// File objects allocated and not yet freed.
    ///
    /// ```
    /// use lockref::dcache::{Dcache, OpenFlags};
    ///
    /// let cache = Dcache::new(Default::default());
    /// let f = cache.open("/", OpenFlags::RDONLY).unwrap();
    /// assert_eq!(cache.live_files(), 1);
    /// cache.close(f);
    /// assert_eq!(cache.live_files(), 0);
    /// ```
    pub fn live_files(&self) -> usize {
        self.files.sum().max(0) as usize
    }

    /// The root directory, referenced.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().name(), b"/");
    /// ```
    pub fn root(&self) -> PathRef<'_> {
        self.root_mnt.get();
        PathRef {
            mnt: &self.root_mnt,
            dentry: self.root_ref(),
        }
    }
}

/// A counted reference to a dentry (the kernel's `struct dentry *` with a
/// reference held). Cloning is `dget`, dropping is `dput`.
///
/// ```
/// let cache = lockref::dcache::Dcache::new(Default::default());
/// cache.mkdir("/d").unwrap();
/// let path = cache.lookup_path("/d").unwrap();
/// let d = path.dentry().clone(); // dget
/// assert_eq!(d.count(), 2); // the path's and this clone's
/// ```
pub struct DentryRef<'c> {
    cache: &'c Dcache,
    ptr: NonNull<Dentry>,
}

// SAFETY: a reference may be used and dropped from any thread; the dentry
// is `Sync`.
unsafe impl Send for DentryRef<'_> {}
// SAFETY: `&DentryRef` only reads immutable or atomic dentry fields.
unsafe impl Sync for DentryRef<'_> {}

impl<'c> DentryRef<'c> {
    /// Wraps a reference the caller already counted.
    pub(crate) fn from_counted(cache: &'c Dcache, ptr: NonNull<Dentry>) -> Self {
        DentryRef { cache, ptr }
    }

    pub(crate) fn dentry(&self) -> &Dentry {
        // SAFETY: we hold a reference, so the dentry is alive.
        unsafe { self.ptr.as_ref() }
    }

    /// The name (empty for a pseudo dentry, `/` for the root).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().name(), b"/");
    /// ```
    pub fn name(&self) -> &[u8] {
        self.dentry().name.as_bytes()
    }

    /// The inode's kind, or `None` for a negative dentry (a cached miss).
    ///
    /// ```
    /// use lockref::dcache::{Dcache, InodeKind};
    ///
    /// let cache = Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().kind(), Some(InodeKind::Dir));
    /// ```
    pub fn kind(&self) -> Option<InodeKind> {
        self.dentry().kind()
    }

    /// The inode number, or `None` for a negative dentry.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().ino(), Some(cache.stat("/").unwrap().ino));
    /// ```
    pub fn ino(&self) -> Option<u64> {
        self.dentry().inode().map(|i| i.ino)
    }

    /// The reference count now (a snapshot: `d_count`).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().count(), 2); // the cache's and ours
    /// ```
    pub fn count(&self) -> i32 {
        self.dentry().lockref.0.count()
    }

    /// Whether the dentry is in the hash table.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// assert!(cache.lookup_path("/d").unwrap().dentry().is_hashed());
    /// ```
    pub fn is_hashed(&self) -> bool {
        self.dentry().is_hashed()
    }

    /// Whether the dentry is its own parent (a root or a pseudo dentry).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert!(cache.root().dentry().is_self_parented());
    /// ```
    pub fn is_self_parented(&self) -> bool {
        self.dentry().is_self_parented()
    }

    /// The parent, referenced (`dget_parent`).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// let d = cache.lookup_path("/d").unwrap();
    /// assert_eq!(d.dentry().parent().name(), b"/");
    /// ```
    pub fn parent(&self) -> DentryRef<'c> {
        let parent = self.dentry().parent;
        self.cache.dget(self.dentry().parent());
        DentryRef::from_counted(self.cache, parent)
    }

    /// The counters of this dentry's lockref (feature `stats`): how many
    /// operations each path performed on it.
    ///
    /// ```
    /// # #[cfg(feature = "stats")] {
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// let root = cache.root();
    /// root.dentry().reset_lockref_stats();
    /// let again = root.dentry().clone(); // dget
    /// assert_eq!(root.dentry().lockref_stats().operations, 1);
    /// # }
    /// ```
    #[cfg(feature = "stats")]
    pub fn lockref_stats(&self) -> crate::StatsSnapshot {
        self.dentry().lockref.0.stats()
    }

    /// Sets this dentry's lockref counters to zero (feature `stats`).
    ///
    /// ```
    /// # #[cfg(feature = "stats")] {
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// let root = cache.root();
    /// root.dentry().reset_lockref_stats();
    /// assert_eq!(root.dentry().lockref_stats().operations, 0);
    /// # }
    /// ```
    #[cfg(feature = "stats")]
    pub fn reset_lockref_stats(&self) {
        self.dentry().lockref.0.reset_stats();
    }

    /// Exclusive acquisitions of this directory's `i_rwsem` so far
    /// (feature `stats`); zero for a negative dentry.
    ///
    /// ```
    /// # #[cfg(feature = "stats")] {
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// cache.mkdir("/d").unwrap();
    /// assert_eq!(cache.root().dentry().inode_write_locks(), 1); // the mkdir
    /// # }
    /// ```
    #[cfg(feature = "stats")]
    pub fn inode_write_locks(&self) -> usize {
        self.dentry().inode().map_or(0, |i| {
            i.write_locks.load(core::sync::atomic::Ordering::Relaxed)
        })
    }
}

impl Clone for DentryRef<'_> {
    /// `dget`.
    fn clone(&self) -> Self {
        self.cache.dget(self.dentry());
        DentryRef {
            cache: self.cache,
            ptr: self.ptr,
        }
    }
}

impl Drop for DentryRef<'_> {
    /// `dput`.
    fn drop(&mut self) {
        self.cache.dput(self.ptr);
    }
}

impl fmt::Debug for DentryRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DentryRef")
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("count", &self.count())
            .field("kind", &self.kind())
            .finish()
    }
}

/// A path: one reference on a mount and one on a dentry (the kernel's
/// `struct path` after `path_get`). Cloning takes both references again;
/// dropping releases each exactly once. Opening a file can *consume* it
/// ([`EmptyFile::open_consume`]): the file takes over both references and
/// no count moves (seed 000).
///
/// A consumed path cannot be used again:
///
/// ```compile_fail
/// use lockref::dcache::{Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let path = cache.root();
/// let file = cache.alloc_file(OpenFlags::RDONLY).open_consume(path);
/// let again = path.clone(); // error: `path` was moved into the file
/// ```
#[must_use = "a path holds two references until it is dropped or consumed by an open"]
pub struct PathRef<'c> {
    mnt: &'c Mount,
    dentry: DentryRef<'c>,
}

impl<'c> PathRef<'c> {
    /// The dentry.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert!(cache.root().dentry().is_self_parented());
    /// ```
    pub fn dentry(&self) -> &DentryRef<'c> {
        &self.dentry
    }

    /// The dentry's name.
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().name(), b"/");
    /// ```
    pub fn name(&self) -> &[u8] {
        self.dentry.name()
    }

    /// The references the mount holds now (exact when nothing races).
    ///
    /// ```
    /// let cache = lockref::dcache::Dcache::new(Default::default());
    /// let root = cache.root();
    /// let again = root.clone(); // path_get: mntget + dget
    /// assert_eq!(root.mount_count(), 2);
    /// ```
    pub fn mount_count(&self) -> isize {
        self.mnt.count()
    }
}

impl Clone for PathRef<'_> {
    /// `path_get`: `mntget` and `dget`.
    fn clone(&self) -> Self {
        self.mnt.get();
        PathRef {
            mnt: self.mnt,
            dentry: self.dentry.clone(),
        }
    }
}

impl Drop for PathRef<'_> {
    /// `path_put`: the dentry field's drop is the `dput`; this is the
    /// `mntput`.
    fn drop(&mut self) {
        self.mnt.put();
    }
}

impl fmt::Debug for PathRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathRef")
            .field("dentry", &self.dentry)
            .finish()
    }
}
