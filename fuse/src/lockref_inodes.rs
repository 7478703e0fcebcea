//! [`LockrefTable`]: the inode table on [`lockref_table::Table`], lockref's
//! safe table of counted objects, keyed by host inode. The node id the
//! kernel is given is the table's own id for the entry (the root's
//! excepted: FUSE fixes it at 1): a request naming a node id reaches its
//! inode with [`Table::get`], which locates the entry's type-stable slot
//! from the id and takes its reference with one atomic on the entry, with
//! no hash, no lock and no epoch pin (the id is compared after the
//! reference is taken). A `LOOKUP` walks a bucket's chain by key under an
//! epoch pin (no lock, no other shared write). The kernel's lookups are
//! the table's peer references (`Table::hand_out`), given back by `FORGET`
//! without a lock unless they are the last.
//!
//! **Keep or kill at zero.** An inode the kernel forgot is kept, up to
//! [`KEEP_FORGOTTEN`] of them on the table's LRU (oldest dropped first),
//! when it is named by file handle on the share's own mount (one inside
//! the share is left free to unmount), born at a known time, and its file
//! was not removed through the mount: the kernel forgets inodes it will
//! ask for again (`drop_caches`, memory pressure), and a `LOOKUP` of a
//! kept one is one `statx` by name and one atomic on the entry, with no
//! `openat`, no new entry, no descriptor registered
//! ([`InodeTable::lookup_known`]). The decision makes no system call: a
//! kept inode keeps its cached descriptor, within the descriptor cache's
//! budget like any other. A removal through the mount marks the file's
//! inode gone first (`names.rs`), so an unlinked file is not kept and the
//! host frees it at the `FORGET`; a file deleted on the host directly is
//! held until the cache evicts its descriptor or the bound drops it, as
//! a live inode's is. The birth time makes the key one no later file has,
//! where a reused inode number alone could be (N2). Every other inode
//! dies at zero (the table removes it and drops its host descriptor). No
//! `unsafe` here: the table does the counting, the keeping, the removal
//! and the deferred reuse.

use std::ops::Deref;

use lockref_table::{Config, Handle, Table, TableError};

use crate::host_inode::HostInode;
use crate::table::{ForgetError, InodeData, InodeTable, Key, ServerHasher, ROOT_ID};

/// The forgotten inodes the server's table keeps (at about 300 bytes
/// each: the entry's slot, its handle and the descriptor slot, 2.4 MiB
/// at most).
pub const KEEP_FORGOTTEN: usize = 8_192;

/// Whether an inode whose last reference went is kept (the module's
/// text): named by file handle, with a birth time, and its file not
/// removed through the mount. Called by the table under the entry's lock
/// when the inode is not on its LRU yet (a listed inode is kept at its
/// later last puts without asking: a removal says so with
/// `Handle::dont_keep`, in `mark_gone`), only while the bound keeps any:
/// no system call.
fn kept_when_forgotten(inode: &InodeData) -> bool {
    match &inode.host {
        // A descriptor held for the inode's life (its mount has none to
        // reopen it by) would take its place in the budget while kept;
        // and an inode on a mount inside the share would keep that mount
        // busy (its reopening descriptor): only the share's are kept.
        HostInode::Handle(slot) => {
            inode.key.birth != 0 && slot.may_keep() && slot.on_the_share() && !slot.is_unevictable()
        }
        HostInode::Descriptor(_) => false,
    }
}

/// An inode of the counted table.
#[derive(Debug)]
pub struct LockrefInode {
    data: InodeData,
}

impl Deref for LockrefInode {
    type Target = InodeData;
    fn deref(&self) -> &InodeData {
        &self.data
    }
}

/// The inode table on [`lockref_table::Table`]: lockless hits, a `FORGET`
/// that takes no lock unless it is the last, the kernel's lookups counted
/// and checked by the table.
///
/// `KEEP_UNUSED` is the table's [`Config::max_unused`]: the forgotten
/// inodes kept, findable again ([`KEEP_FORGOTTEN`] by default, the
/// server's; the module's text says which). `0` keeps none: an inode the
/// kernel forgot dies at once. The harness's `hotinode` testcase runs
/// both, since the kept entry's last put takes the LRU's lock beside the
/// entry's.
pub struct LockrefTable<const KEEP_UNUSED: usize = KEEP_FORGOTTEN> {
    table: Table<Key, LockrefInode>,
    /// The root's id in the table, which the kernel knows as [`ROOT_ID`].
    root_id: u64,
    /// The table's own reference on the root, which never leaves.
    _root: Handle<Key, LockrefInode>,
}

/// The first id the table gives: above [`ROOT_ID`], so that no entry's
/// id is the root's node id.
const FIRST_ID: u64 = ROOT_ID + 1;

impl<const KEEP_UNUSED: usize> LockrefTable<KEEP_UNUSED> {
    /// The table's id for node id `node`.
    fn table_id(&self, node: u64) -> u64 {
        if node == ROOT_ID {
            self.root_id
        } else {
            node
        }
    }

    /// The node id for the table's id `id`.
    fn node_id(&self, id: u64) -> u64 {
        if id == self.root_id {
            ROOT_ID
        } else {
            id
        }
    }
}

impl<const KEEP_UNUSED: usize> InodeTable for LockrefTable<KEEP_UNUSED> {
    type Ref = Handle<Key, LockrefInode>;
    const NAME: &'static str = if KEEP_UNUSED == 0 {
        "lockref"
    } else {
        "lockref keep"
    };

    fn new(root: HostInode, key: Key) -> Self {
        let table = Table::with_keep_and_hasher(
            Config {
                buckets: 1 << 16,
                max_unused: KEEP_UNUSED,
                first_id: FIRST_ID,
            },
            |_, inode: &LockrefInode| kept_when_forgotten(&inode.data),
            ServerHasher::default(),
        );
        let root = table.find_or_insert_with(key, |_| LockrefInode {
            data: InodeData {
                id: ROOT_ID,
                key,
                host: root,
            },
        });
        LockrefTable {
            table,
            root_id: root.id(),
            _root: root,
        }
    }

    fn lookup<F: FnOnce() -> HostInode>(&self, key: Key, host: F) -> u64 {
        // The reference is the kernel's, given back by `forget`: one
        // atomic on the inode when the table has it already.
        let id = self.table.hand_out(key, |id| LockrefInode {
            data: InodeData {
                id,
                key,
                host: host(),
            },
        });
        self.node_id(id)
    }

    fn lookup_known(&self, key: Key) -> Option<u64> {
        // That reference becomes the kernel's.
        let inode = self.find_known(key)?;
        Some(self.node_id(inode.into_id()))
    }

    fn find_known(&self, key: Key) -> Option<Self::Ref> {
        // Referenced by `find` (reviving an inode kept at zero, never a
        // dying one).
        self.table.find(&key)
    }

    const KEEPS_FORGOTTEN: bool = KEEP_UNUSED > 0;

    fn mark_gone(inode: &Self::Ref) {
        if let HostInode::Handle(slot) = &inode.data.host {
            slot.mark_gone();
        }
        // A kept inode revived by a lookup stays on the table's LRU, and
        // its next last put keeps it without asking `keep` again: the
        // table is told as well.
        inode.dont_keep();
    }

    fn get(&self, id: u64) -> Option<Self::Ref> {
        // By the id's slot: no pin, no hash.
        self.table.get(self.table_id(id)).ok()
    }

    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError> {
        // Reached by its id's slot (no pin); the kernel's references go
        // back with the one taken here.
        let inode = self.get(id).ok_or(ForgetError::UnknownInode(id))?;
        inode.forget(n).map_err(|e| match e {
            TableError::UnknownId(_) => ForgetError::UnknownInode(id),
            TableError::MoreThanHeld { forget, held, .. } => {
                ForgetError::MoreThanHeld { id, forget, held }
            }
        })
    }

    fn inodes(&self) -> usize {
        if KEEP_UNUSED == 0 {
            return self.table.len();
        }
        // The kept ones are not the kernel's, and one revived stays on the
        // LRU's count until reclaimed or kept again: the entries held are
        // counted one by one (a snapshot, for tests and reports; each
        // handle taken here counts one, so an entry someone else holds
        // counts more).
        self.table
            .handles()
            .iter()
            .filter(|inode| inode.count() > 1)
            .count()
    }

    fn kept(&self) -> usize {
        // Revived ones among them until reclaimed or kept again: a bound.
        self.table.unused()
    }

    fn kernel_lookups(&self, id: u64) -> Option<u64> {
        self.get(id).map(|inode| inode.peer_refs())
    }
}
