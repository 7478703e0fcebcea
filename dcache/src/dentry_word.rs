//! The word each dentry's lockref runs on, chosen when the cache is built:
//! the compare-and-swap word ([`lockref::CasWord`], the default) or, with
//! `--cfg lockref_dcache_add_word`, the experimental `fetch_add` word
//! (`lockref::experimental::AddWord`), so that the harness can run every
//! seed on both words (a build-time choice: the word is in the dentry's
//! layout and on every hot path, where a run-time switch would cost what
//! is being measured). Everything else is the same code: the cache uses
//! only what [`lockref::RawLockRef`] offers.

use lockref::{LockRef, LockRefGuard};

use crate::dentry::Revalidation;

/// A dentry's word: the `fetch_add` word.
#[cfg(lockref_dcache_add_word)]
pub(crate) type DentryWord = lockref::experimental::AddWord;
/// A dentry's word: the compare-and-swap word.
#[cfg(not(lockref_dcache_add_word))]
pub(crate) type DentryWord = lockref::CasWord;

/// A dentry's lockref: its revalidation state behind the word.
pub(crate) type DentryLockRef = LockRef<Revalidation, DentryWord>;

/// The held lock of a dentry.
pub(crate) type DentryGuard<'a> = LockRefGuard<'a, Revalidation, DentryWord>;

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
