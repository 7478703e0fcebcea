//! A safe concurrent table of counted objects on [`lockref`]: the layer a
//! FUSE inode map, a virtiofsd inode store, an fd table or a name cache is,
//! without `unsafe` for its user.
//!
//! See [`Table`] for the design and a runnable inode cache, and the
//! crate's README (`table/README.md`) for when to use it and its figures.
//!
//! | what | how |
//! |---|---|
//! | lookup by key | lockless chain walk under an epoch pin, one atomic on the entry (`lockref_get_not_dead`) |
//! | lookup by id | no lock and no pin: the id names a type-stable slot, its id compared before and after the one atomic |
//! | insert | under the key's bucket lock; one entry per key; a dying one replaced |
//! | last put | one compare-and-swap to zero under an epoch pin, then the entry's flags: a listed entry stays; a removed or marked one (or any, on a table that keeps none) is dropped and killed in one compare-and-swap, with no pin; only an entry not yet listed takes its lock, for the user's `keep` to decide and the LRU to list it |
//! | kill | the entry leaves its key's chain under its lock, and the LRU; its value is dropped; its key after the grace period, when its slot is recycled for a later entry (never freed while the table's state lives) |
//! | protocol ids | `hand_out` (and `hand_out_if`, which checks the entry under the reference) and `Handle::into_id` count the peer's references, which hold one of the entry's between them (one more, or a forget not the last: one atomic, no lock); `forget` (and `Handle::forget`) refuses more than the peer holds; no id handed out twice (a slot's generation is in it) |
//! | unused entries | an LRU bounded by `Config::max_unused`, reclaimed oldest first on insert and by `shrink` |
//! | teardown | dropping the table ends the peer's references, kills the unused; handles keep what they point into |
//!
//! Reclamation is crossbeam-epoch's. Its collector breaks Stacked Borrows
//! before any of the table's code runs (crossbeam #545), so Miri checks the
//! table under Tree Borrows, which it passes (`.ci/run`), without the leak
//! check (garbage left in the global collector at exit, crossbeam #579).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod chain;
mod error;
mod handle;
mod lru;
mod node;
mod peer_refs;
mod release_queue;
mod shared;
mod slots;
mod sync;
mod table;

pub use error::TableError;

// The front page's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
pub use handle::Handle;
pub use table::{Config, Table};
