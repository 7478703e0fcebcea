//! The lockref each dentry embeds, chosen when the cache is built: the
//! compare-and-swap word ([`lockref::LockRef`], the default) or, with
//! `--cfg lockref_dcache_add_word`, the experimental `fetch_add` word
//! ([`lockref::experimental::AddLockRef`]), so that the harness can run
//! every seed on both words (a build-time choice: the word is in the
//! dentry's layout and on every hot path, where a run-time switch would
//! cost what is being measured).
//!
//! Everything the cache does with a dentry's lockref goes through
//! [`LockRefWord`] or the helpers here, so both words run the same code.

use lockref::LockRefWord;

use crate::dentry::Revalidation;

/// A dentry's lockref: the `fetch_add` word.
#[cfg(lockref_dcache_add_word)]
pub(crate) type DentryWord = lockref::experimental::AddLockRef<Revalidation>;
/// A dentry's lockref: the compare-and-swap word.
#[cfg(not(lockref_dcache_add_word))]
pub(crate) type DentryWord = lockref::LockRef<Revalidation>;

/// The word this build's dentries use: `"fetch_add"` (built with `--cfg
/// lockref_dcache_add_word`) or `"compare-and-swap"`.
///
/// ```
/// # if cfg!(not(lockref_dcache_add_word)) {
/// assert_eq!(lockref_dcache::DENTRY_WORD, "compare-and-swap");
/// # }
/// ```
pub const DENTRY_WORD: &str = if cfg!(lockref_dcache_add_word) {
    "fetch_add"
} else {
    "compare-and-swap"
};

/// The count now (a snapshot), [`lockref::DEAD`] if dead.
#[cfg(lockref_dcache_add_word)]
pub(crate) fn count(word: &DentryWord) -> i32 {
    // A live count is below 2^29, so it fits.
    word.count().map_or(lockref::DEAD, |n| n as i32)
}

/// The count now (a snapshot), [`lockref::DEAD`] if dead.
#[cfg(not(lockref_dcache_add_word))]
pub(crate) fn count(word: &DentryWord) -> i32 {
    word.count()
}

/// The held lock of a dentry.
pub(crate) type DentryGuard<'a> = <DentryWord as LockRefWord>::Guard<'a>;
