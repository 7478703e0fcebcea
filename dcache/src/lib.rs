//! A minimal dentry cache built on [`lockref`]: hashed lockless lookup,
//! negative and pseudo dentries, consumable path references, a one-shot
//! token for files that were never opened, and deferred file release, over
//! an in-memory filesystem.
//!
//! It is a model of the kernel's dcache small enough to read in an
//! afternoon and complete enough that the kernel's hot paths (the RCU path
//! walk, `dput`'s keep-or-kill at zero, open and close) run here with the
//! same shared-memory traffic. Each of the five kernel patches it was
//! built from (the *seeds*) can be switched between its old and new
//! behaviour at run time ([`Variants`]; see [`config`] for the table).
//!
//! ```
//! use lockref_dcache::{Config, Dcache, Errno, OpenFlags};
//!
//! let cache = Dcache::new(Config::default());
//! cache.mkdir("/etc").unwrap();
//! let f = cache.open("/etc/passwd", OpenFlags::WRONLY.creat()).unwrap();
//! cache.close(f);
//! let f = cache.open("/etc/passwd", OpenFlags::RDONLY).unwrap();
//! assert_eq!(f.path().dentry().name(), b"passwd");
//! cache.close(f);
//! assert_eq!(cache.open("/etc/shadow", OpenFlags::RDONLY).err(), Some(Errno::NoEnt));
//! ```
//!
//! # What it models
//!
//! | piece | kernel | here |
//! |---|---|---|
//! | dentry | `struct dentry`, `d_lockref` | a [`LockRef`](lockref::LockRef) (or [the `fetch_add` word](#the-dentrys-word)) guarding the revalidation state; name, parent, inode, flags |
//! | hash table | `dentry_hashtable`, `hlist_bl` | buckets of lock-free chains, a spinlock per bucket for writers |
//! | lookup | `__d_lookup_rcu` + `lockref_get_not_dead` | [`epoch`](crossbeam_epoch)-pinned chain walk, then `get_not_dead` |
//! | path walk | RCU walk, ref walk on `-ECHILD` | the same: no references while walking, one on the result; retried taking references on a miss or a revalidating filesystem |
//! | `dput` | `fast_dput`, `retain_dentry`, `dentry_kill` | the same rules: hashed dentries stay at zero, others are killed, the parent is put |
//! | LRU, shrinker | `s_dentry_lru`, `prune_dcache_sb` | unused dentries on an LRU with a second chance, reclaimed past [`Config::max_unused`] or by [`Dcache::shrink`] |
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
//! # Features
//!
//! | feature | what it does |
//! |---|---|
//! | `testing` | the `testing` module and the accounting methods tests and the harness use: the leak check, per-dentry lockref counters (turns on `lockref/stats`), the pseudo root, the deferred-job count. Not for production use. |
//!
//! # The dentry's word
//!
//! Each dentry's lockref is a [`lockref::LockRef`] on the compare-and-swap
//! word ([`lockref::CasWord`]). Built with `RUSTFLAGS="--cfg
//! lockref_dcache_add_word"`, it is on the experimental
//! `lockref::experimental::AddWord` (the `fetch_add` word) instead, with the same code on every path ([`DENTRY_WORD`] says
//! which), so that each seed can be measured on both. A build-time choice:
//! the word is in the dentry's layout and on every hot path. On that word
//! the per-dentry lockref counters do not exist.
//!
//! # Loom
//!
//! Under `--cfg loom` (with `--cfg crossbeam_loom` for the epoch
//! collector) every atomic, lock and thread-local comes from loom, so the
//! models in `loom-tests/` explore the real code.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cache;
pub mod config;
mod dentry;
mod dentry_ref;
mod dentry_word;
mod empty_file;
mod errno;
mod file;
mod hash_table;
mod inode;
mod lru;
mod mount;
mod name;
mod names;
mod open_flags;
mod ops;
mod path_ref;
mod sharded_count;
mod sync;
mod task_work;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
mod walk;

pub use crate::cache::Dcache;
pub use crate::config::{Config, Variants, MAX_AUTO_BUCKETS, MAX_BUCKETS};
pub use crate::dentry_ref::DentryRef;
pub use crate::dentry_word::DENTRY_WORD;
pub use crate::empty_file::EmptyFile;
pub use crate::errno::Errno;
pub use crate::file::FileRef;
pub use crate::inode::InodeKind;
pub use crate::name::NAME_MAX;
pub use crate::open_flags::OpenFlags;
pub use crate::ops::Stat;
pub use crate::path_ref::{MountRef, PathRef};
pub use crate::walk::{MAX_DEPTH, PATH_MAX};
