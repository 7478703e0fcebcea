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
    /// to a power of two. Default 4096.
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

/// The most hash buckets a cache takes (2^20: 1 Mi chains, 16 MiB of
/// buckets); [`Config::buckets`] beyond it is clamped.
///
/// ```
/// use lockref_dcache::{Config, Dcache};
///
/// let cache = Dcache::new(Config { buckets: usize::MAX, ..Config::default() });
/// assert!(cache.stat("/").is_ok());
/// ```
pub const MAX_BUCKETS: usize = 1 << 20;
