//! A safe concurrent table of counted objects on [`lockref`]: the layer a
//! FUSE inode map, a virtiofsd inode store, an fd table or a name cache is,
//! without `unsafe` for its user.
//!
//! See [`Table`] for the design and a runnable inode cache.
//!
//! | what | how |
//! |---|---|
//! | lookup by key or id | lockless chain walk under an epoch pin, one atomic on the entry (`lockref_get_not_dead`) |
//! | insert | under the key's bucket lock; one entry per key; a dying one replaced |
//! | last put | lockref's `put_or_lock`; the user's `keep` decides under the entry's lock |
//! | kill | the entry leaves both chains under their locks and the LRU; its value is dropped; its memory after the grace period |
//! | protocol ids | `Handle::into_id` counts the peer's reference, `forget` refuses more than it holds; ids never reused |
//! | unused entries | an LRU bounded by `Config::max_unused`, reclaimed oldest first on insert and by `shrink` |
//! | teardown | dropping the table ends the peer's references, kills the unused; handles keep what they point into |
//!
//! Reclamation is crossbeam-epoch's, so under Miri the tests run without
//! an aliasing model (crossbeam-epoch 0.9 breaks Stacked Borrows, and its
//! integer-to-pointer casts defeat Tree Borrows), as the dcache's do.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod chain;
mod error;
mod handle;
mod lru;
mod node;
mod peer_refs;
mod shared;
mod sync;
mod table;

pub use error::TableError;
pub use handle::Handle;
pub use table::{Config, Table};
