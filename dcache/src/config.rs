//! How a [`Dcache`](crate::Dcache) is built, and which of the five seeds'
//! behaviours it runs.
//!
//! # The seeds
//!
//! Each seed is a kernel patch this cache reproduces. Its old and new
//! behaviour are both compiled in and chosen per cache by a [`Variants`]
//! field, so one run of the harness (`wis`, in `harness/`) measures both
//! side by side. This is the one table that ties them together:
//!
//! | seed | kernel patch | `Variants` field | harness testcase |
//! |---|---|---|---|
//! | 000 | fs: add `vfs_open_consume()` (the open consumes the walk's path reference) | [`open_consume`](Variants::open_consume) | `open3`, `open1` |
//! | 001 | fs: release a never-opened file at once (`release_empty_file()`) | [`failed_open_token`](Variants::failed_open_token) | `openneg` |
//! | 002 | fs: pseudo dentries are their own parent (`d_alloc_pseudo()`) | [`pseudo_self_parent`](Variants::pseudo_self_parent) | `pseudo` |
//! | 003 | fs: `O_CREAT` looks the name up before taking the directory lock | [`creat_lookup_first`](Variants::creat_lookup_first) | `creat` |
//! | 004 | fs: `try_lookup_noperm()` does not revalidate | [`try_lookup_skips_revalidate`](Variants::try_lookup_skips_revalidate) | `trylookup` |
//!
//! The harness's `stat2` (the lockref on its own cache line) and `lockref`
//! (the bare word against `fetch_add`) testcases measure the primitive, not
//! a seed.

/// Each seed's behaviour, old (`false`) or new (`true`).
///
/// ```
/// use lockref_dcache::{Config, Dcache, Variants};
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

/// How to build a [`Dcache`](crate::Dcache).
///
/// ```
/// use lockref_dcache::{Config, Dcache};
///
/// let nfs_like = Dcache::new(Config { revalidate: true, buckets: 1 << 16, ..Config::default() });
/// assert!(nfs_like.stat("/").is_ok());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Hash buckets: clamped to `1 ..=` [`MAX_BUCKETS`], then rounded up
    /// to a power of two; `0` (the default) sizes the table for
    /// [`max_unused`](Self::max_unused): one bucket per unused dentry kept,
    /// at least 16 and at most [`MAX_AUTO_BUCKETS`] (a larger table must be
    /// asked for). The table is never resized (the kernel's
    /// `dentry_hashtable` is sized once, at boot): with the shrinker
    /// keeping the entries near that number, chains stay short unless far
    /// more dentries than that are in use at once.
    pub buckets: usize,
    /// The most unused dentries (cached names and cached misses at count
    /// zero) kept on the LRU. The allocation of a new dentry first
    /// reclaims the oldest until the new one fits (the kernel's shrinker),
    /// so after a lookup or a create that allocated, at most this many are
    /// unused, the new one included once it is put; `0` keeps none (a
    /// dentry's last put kills it). [`Dcache::shrink`](crate::Dcache::shrink)
    /// reclaims on demand. Dentries in use are not bounded by it, and a put
    /// never reclaims (as `dput` never runs the shrinker): dentries in use
    /// that fall unused with no allocation after them wait on the LRU for
    /// the next allocation or shrink. `usize::MAX` never reclaims by
    /// itself. Default 4096.
    pub max_unused: usize,
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
            buckets: 0,
            max_unused: 4096,
            revalidate: false,
            variants: Variants::AFTER,
        }
    }
}

/// The fewest buckets a table sized from [`Config::max_unused`] gets.
pub(crate) const MIN_AUTO_BUCKETS: usize = 16;

/// The most buckets a table sized from [`Config::max_unused`] gets (2^16,
/// 1 MiB): an unbounded `max_unused` does not allocate the largest table.
pub const MAX_AUTO_BUCKETS: usize = 1 << 16;

impl Config {
    /// The bucket count this configuration builds: a power of two in
    /// `1 ..=` [`MAX_BUCKETS`].
    ///
    /// ```
    /// use lockref_dcache::{Config, MAX_AUTO_BUCKETS, MAX_BUCKETS};
    ///
    /// assert_eq!(Config::default().table_buckets(), 4096); // sized for max_unused
    /// assert_eq!(Config { buckets: 1000, ..Config::default() }.table_buckets(), 1024);
    /// assert_eq!(Config { buckets: usize::MAX, ..Config::default() }.table_buckets(), MAX_BUCKETS);
    /// assert_eq!(Config { max_unused: usize::MAX, ..Config::default() }.table_buckets(), MAX_AUTO_BUCKETS);
    /// ```
    pub fn table_buckets(&self) -> usize {
        let wanted = if self.buckets == 0 {
            self.max_unused.clamp(MIN_AUTO_BUCKETS, MAX_AUTO_BUCKETS)
        } else {
            self.buckets
        };
        wanted.clamp(1, MAX_BUCKETS).next_power_of_two()
    }
}

/// The most hash buckets a cache takes (2^20: 1 Mi chains, 16 MiB of
/// buckets); [`Config::buckets`] beyond it (or a `max_unused` that would
/// size it beyond) is clamped.
///
/// ```
/// use lockref_dcache::{Config, Dcache};
///
/// let cache = Dcache::new(Config { buckets: usize::MAX, ..Config::default() });
/// assert!(cache.stat("/").is_ok());
/// ```
pub const MAX_BUCKETS: usize = 1 << 20;
