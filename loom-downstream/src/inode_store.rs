//! An inode store as a FUSE author would write it on `lockref-table`, with
//! no `unsafe`: LOOKUP hands the kernel a node id, FORGET gives references
//! back, an inode the kernel forgot stays cached (up to the bound) and is
//! found again. Its loom models (`tests/loom_table.rs`) follow the
//! README's recipe for a crate on the table: the third cfg
//! (`crossbeam_loom`, for the table's epoch collector) and a small
//! `Config`.

use lockref_table::{Config, Table, TableError};

/// An inode of the store.
pub struct Inode {
    /// The host's inode number.
    pub ino: u64,
}

/// The store: host inode numbers to inodes, with node ids for the kernel.
pub struct InodeStore {
    table: Table<u64, Inode>,
}

impl InodeStore {
    /// A store caching up to `max_unused` forgotten inodes. Under loom a
    /// model wants the table small: one bucket, a bound of one or two.
    pub fn new(buckets: usize, max_unused: usize) -> Self {
        let config = Config {
            buckets,
            max_unused,
            ..Config::default()
        };
        InodeStore {
            table: Table::with_keep(config, |_, _| true),
        }
    }

    /// LOOKUP: the node id of `ino`, one more reference for the kernel.
    pub fn lookup(&self, ino: u64) -> u64 {
        self.table.hand_out(ino, |_id| Inode { ino })
    }

    /// GETATTR and the like: the host inode number behind a node id.
    pub fn inode(&self, id: u64) -> Result<u64, TableError> {
        self.table.get(id).map(|inode| inode.ino)
    }

    /// FORGET: `n` of the kernel's references back.
    pub fn forget(&self, id: u64, n: u64) -> Result<(), TableError> {
        self.table.forget(id, n)
    }

    /// The kernel's references on `id`, if it is there.
    pub fn kernel_refs(&self, id: u64) -> Option<u64> {
        self.table.peer_refs(id)
    }

    /// Inodes in the store, cached ones included.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Cached (forgotten) inodes.
    pub fn cached(&self) -> usize {
        self.table.unused()
    }
}
