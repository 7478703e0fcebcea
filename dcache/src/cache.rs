//! [`Dcache`]: the cache itself, its construction, its counters and its
//! teardown.

use core::ptr::NonNull;
use std::boxed::Box;

use crossbeam_epoch::{self as epoch, Owned};

use crate::config::{Config, Variants};
use crate::dentry::{self, Dentry};
use crate::dentry_ref::DentryRef;
use crate::hash_table::Table;
use crate::inode::{self, InodeKind};
use crate::mount::Mount;
use crate::path_ref::{MountRef, PathRef};
use crate::sharded_count::ShardedCount;
use crate::sync::{AtomicU64, Ordering, RwLock};

/// A dentry cache over an in-memory filesystem. See the [crate
/// docs](crate).
///
/// Its methods live with the concept they implement:
///
/// | file | methods |
/// |---|---|
/// | `cache.rs` | [`new`](Self::new), [`variants`](Self::variants), [`set_variants`](Self::set_variants), [`live_dentries`](Self::live_dentries), [`live_files`](Self::live_files), [`root`](Self::root) |
/// | `lru.rs` | [`shrink`](Self::shrink), [`unused_dentries`](Self::unused_dentries): the LRU of unused dentries and the shrinker |
/// | `ops.rs` | [`stat`](Self::stat), [`lookup_path`](Self::lookup_path), [`open`](Self::open), [`close`](Self::close), [`mkdir`](Self::mkdir), [`unlink`](Self::unlink), [`try_lookup_noperm`](Self::try_lookup_noperm), [`lookup_noperm_unlocked`](Self::lookup_noperm_unlocked), [`alloc_pseudo`](Self::alloc_pseudo) |
/// | `names.rs` | [`rmdir`](Self::rmdir), [`link`](Self::link), [`rename`](Self::rename): the calls that remove, add and move names |
/// | `file.rs` | [`alloc_file`](Self::alloc_file) |
/// | `testing.rs` (feature `testing`) | `check_balanced`, `pseudo_root` |
/// | `walk.rs` (private) | the RCU and ref walks, per-component lookup, revalidation |
/// | `hash_table.rs` (private) | `d_lookup`, `d_add`, `d_drop` |
/// | `dentry_ref.rs` (private) | `d_alloc`, `dget`, `dput`, the kill |
pub struct Dcache {
    /// The hash table and the live-dentry count, where dentries can point
    /// to them.
    pub(crate) table: Box<Table>,
    pub(crate) root: NonNull<Dentry>,
    pub(crate) root_mnt: Mount,
    pub(crate) pseudo_root: NonNull<Dentry>,
    pub(crate) pseudo_mnt: Mount,
    /// File objects allocated and not yet freed.
    pub(crate) files: ShardedCount,
    next_ino: AtomicU64,
    pub(crate) variants: Variants,
    /// Held (write) by every `rename`: the kernel's `s_vfs_rename_mutex`.
    pub(crate) rename_lock: RwLock<()>,
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
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.live_dentries(), 2); // the two roots
    /// ```
    pub fn new(config: Config) -> Self {
        let mut cache = Dcache {
            table: Table::new(config.table_buckets(), config.max_unused),
            root: NonNull::dangling(),
            root_mnt: Mount::new(),
            pseudo_root: NonNull::dangling(),
            pseudo_mnt: Mount::new(),
            files: ShardedCount::new(),
            next_ino: AtomicU64::new(1),
            rename_lock: RwLock::new(()),
            variants: config.variants,
        };
        let flags = if config.revalidate {
            dentry::REVALIDATE
        } else {
            0
        };
        let root_inode = inode::Inode::new(cache.alloc_ino(), InodeKind::Dir);
        cache.root = cache.table.d_alloc(None, b"/", flags, Some(root_inode));
        let pseudo_inode = inode::Inode::new(cache.alloc_ino(), InodeKind::Dir);
        cache.pseudo_root = cache.table.d_alloc(None, b"pipe:", 0, Some(pseudo_inode));
        cache
    }

    /// The behaviour selected per seed.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.variants(), lockref_dcache::Variants::AFTER);
    /// ```
    pub fn variants(&self) -> Variants {
        self.variants
    }

    /// Selects each seed's behaviour for the operations that follow.
    ///
    /// ```
    /// use lockref_dcache::{Dcache, Variants};
    ///
    /// let mut cache = Dcache::new(Default::default());
    /// cache.set_variants(Variants::BEFORE);
    /// assert_eq!(cache.variants(), Variants::BEFORE);
    /// ```
    pub fn set_variants(&mut self, variants: Variants) {
        self.variants = variants;
    }

    pub(crate) fn alloc_ino(&self) -> u64 {
        // Relaxed: a unique number is all that is needed.
        self.next_ino.fetch_add(1, Ordering::Relaxed)
    }

    /// Dentries allocated and not yet killed (cached ones included).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/a").unwrap();
    /// assert_eq!(cache.live_dentries(), 3); // two roots and /a
    /// ```
    pub fn live_dentries(&self) -> usize {
        self.table.live.sum().max(0) as usize
    }

    /// File objects allocated and not yet freed.
    ///
    /// ```
    /// use lockref_dcache::{Dcache, OpenFlags};
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
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().dentry().name(), b"/");
    /// ```
    pub fn root(&self) -> PathRef<'_> {
        PathRef::new(MountRef::new(&self.root_mnt), self.root_ref())
    }

    /// A reference on the root dentry.
    pub(crate) fn root_ref(&self) -> DentryRef<'_> {
        // SAFETY: the cache holds a reference on the root for its lifetime.
        unsafe { self.root.as_ref() }.lockref.get();
        // SAFETY: the root is this cache's; the reference was just taken.
        unsafe { DentryRef::from_raw(self.root) }
    }

    /// Reclaims up to `count` unused dentries (cached names and cached
    /// misses at count zero), oldest first, each used one getting a second
    /// chance (the kernel's `prune_dcache_sb`). Returns how many were
    /// freed. Dentries in use are never touched; a directory becomes
    /// unused once its cached children are gone, so `usize::MAX` empties
    /// the cache of everything unused (`echo 2 > drop_caches`).
    ///
    /// The cache also shrinks itself, past
    /// [`Config::max_unused`](crate::Config::max_unused) unused dentries,
    /// when it allocates one.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// cache.mkdir("/a").unwrap();
    /// assert!(cache.stat("/a/missing").is_err()); // a cached miss
    /// assert_eq!(cache.unused_dentries(), 2); // "/a" and the miss
    /// assert_eq!(cache.shrink(usize::MAX), 2);
    /// assert_eq!(cache.live_dentries(), 2); // the two roots
    /// assert!(cache.stat("/a").is_ok()); // looked up again
    /// ```
    pub fn shrink(&self, count: usize) -> usize {
        self.table.lru.shrink(count)
    }

    /// Unused dentries on the LRU now (some may be in use again, until the
    /// shrinker meets them).
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.unused_dentries(), 0);
    /// cache.mkdir("/a").unwrap();
    /// assert_eq!(cache.unused_dentries(), 1);
    /// ```
    pub fn unused_dentries(&self) -> usize {
        self.table.lru.len()
    }
}

impl Drop for Dcache {
    fn drop(&mut self) {
        // No handle can outlive the cache (they borrow it), so every
        // dentry left is hashed at its cached count, a root, or an
        // unhashed directory that hashed children keep alive (renamed or
        // removed with cached children: see `names.rs`). Free them all
        // now: nothing else can reach them.
        // SAFETY: `&mut self`: no other thread walks the chains.
        let guard = unsafe { epoch::unprotected() };
        let mut hashed: Vec<*const Dentry> = Vec::new();
        for bucket in self.table.buckets.iter() {
            let mut cur = bucket.head.load(Ordering::Relaxed, guard);
            // SAFETY: chain nodes are live dentries; nothing frees them
            // while `&mut self` is held.
            while let Some(d) = unsafe { cur.as_ref() } {
                hashed.push(d);
                cur = d.next.load(Ordering::Relaxed, guard);
            }
        }
        let roots = [
            self.root.as_ptr().cast_const(),
            self.pseudo_root.as_ptr().cast_const(),
        ];
        let on_chains: std::collections::HashSet<*const Dentry> = hashed.iter().copied().collect();
        let mut kept: std::collections::HashSet<*const Dentry> = std::collections::HashSet::new();
        for &d in &hashed {
            // SAFETY: as above; a live dentry's parent is live (it holds a
            // reference on it).
            let mut p = unsafe { (*d).parent.as_ptr().cast_const() };
            while !roots.contains(&p) && !on_chains.contains(&p) && kept.insert(p) {
                // SAFETY: as above.
                p = unsafe { (*p).parent.as_ptr().cast_const() };
            }
        }
        for d in hashed.into_iter().chain(kept) {
            // SAFETY: each came from `d_alloc`'s box and is freed once here:
            // the chains' dentries and the kept ones are disjoint sets,
            // and no reference is left to any of them.
            drop(unsafe { Owned::from_raw(d.cast_mut()) });
        }
        for root in [self.root, self.pseudo_root] {
            // SAFETY: roots are never hashed or killed; freed here only.
            drop(unsafe { Owned::from_raw(root.as_ptr()) });
        }
    }
}
