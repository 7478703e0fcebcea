//! What the filesystem needs of an inode table, implemented twice: on
//! lockref's [`CountedRef`](lockref::CountedRef)
//! ([`LockrefTable`](crate::LockrefTable)) and as virtiofsd counts
//! ([`VirtiofsdTable`](crate::VirtiofsdTable)), so one binary measures both.

use std::fmt;
use std::ops::Deref;

use crate::host_inode::HostInode;

/// A host inode's identity: device, inode number and birth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// Its birth time (`statx`'s `btime`) in nanoseconds since the epoch,
    /// or 0 where the host keeps none: tells a file from a later one the
    /// host gave the same inode number after the first was deleted.
    pub birth: u64,
}

/// What the table keeps per inode.
#[derive(Debug)]
pub struct InodeData {
    /// The FUSE node id handed to the kernel: the table's own id for the
    /// inode, by which [`InodeTable::get`] reaches it; [`ROOT_ID`] for the
    /// root. Not the inode number the kernel reports (`st_ino`), which is
    /// the host's (`inode_numbers.rs`).
    pub id: u64,
    /// The host inode.
    pub key: Key,
    /// The host inode: a descriptor held, or a file handle reopened when a
    /// request needs a descriptor (every operation on the inode goes
    /// through one: `*at` calls, `/proc/self/fd`).
    pub host: HostInode,
}

/// The FUSE root's node id.
pub const ROOT_ID: u64 = 1;

/// The hash of the server's maps keyed by node ids, handle numbers and
/// uids: foldhash, seeded per map. These keys are handed out by the host
/// filesystem or the server (no user picks a node id or a uid), so the
/// DoS resistance SipHash buys for chosen keys is not needed here, and
/// SipHash cost 140 instructions a hash, about one instruction in nine
/// of the server's in a cold `git status` (callgrind). The three inode
/// tables use it alike, so that they are measured on equal terms.
pub(crate) type ServerHasher = foldhash::fast::RandomState;

/// A refused `FORGET`: the kernel's input is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForgetError {
    /// No inode has this node id (never handed out, or already forgotten).
    UnknownInode(u64),
    /// The kernel forgot more lookups than it was given; nothing changed.
    MoreThanHeld {
        /// The node id.
        id: u64,
        /// What the kernel asked to forget.
        forget: u64,
        /// What it holds.
        held: u64,
    },
}

impl fmt::Display for ForgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForgetError::UnknownInode(id) => write!(f, "FORGET of unknown inode {id}"),
            ForgetError::MoreThanHeld { id, forget, held } => write!(
                f,
                "FORGET of {forget} lookups on inode {id}, which holds {held}: refused"
            ),
        }
    }
}

impl std::error::Error for ForgetError {}

/// An inode table: host inodes by key and by node id, each counted. The
/// table gives each inode its node id, unique while the kernel may name
/// the inode: a node id is never that of another inode the kernel still
/// holds, and one the kernel forgot may be given again later (the kernel
/// tells them apart by nothing else while it holds neither).
///
/// Three kinds of reference keep an inode: the kernel's lookup count
/// (counted by [`lookup`](Self::lookup), given back by
/// [`forget`](Self::forget)), open handles, and requests in flight (both
/// [`Self::Ref`]s).
pub trait InodeTable: Send + Sync + 'static {
    /// A counted reference to an inode; dropping it gives it back.
    type Ref: Deref<Target: Deref<Target = InodeData>> + Send + Sync + 'static;

    /// Which table this is, for reports.
    const NAME: &'static str;

    /// A table holding the root, the host inode `root`.
    fn new(root: HostInode, key: Key) -> Self;

    /// One more of the kernel's lookups (for a `LOOKUP`, `CREATE`,
    /// `MKDIR`, ... reply, sent right after) on the inode of `key`,
    /// inserted as the host inode `host` returns if absent (`host` is not
    /// called, and whatever it owns is dropped, if the inode is there).
    /// Returns the node id to reply with. Each key (with its birth) is its
    /// own inode: a number the host gave a new file while the kernel still
    /// holds the deleted one's inode is a second inode, with a node id of
    /// its own.
    fn lookup<F: FnOnce() -> HostInode>(&self, key: Key, host: F) -> u64;

    /// One more of the kernel's lookups on the inode of `key` if the table
    /// has it, live or [kept](Self::kept): its node id; `None`, with
    /// nothing counted, otherwise
    /// (the caller then opens the host inode and calls
    /// [`lookup`](Self::lookup)). A `READDIRPLUS` entry the kernel looked
    /// up already, or a `LOOKUP` of an inode it forgot and the table kept,
    /// costs one `statx` this way, no `openat` and `close`.
    fn lookup_known(&self, key: Key) -> Option<u64>;

    /// The inode of `key`, referenced (no kernel lookup counted), if the
    /// table has it, live or kept (as [`lookup_known`](Self::lookup_known)
    /// finds it): on any device, so that a removal through the mount marks
    /// a file gone on a btrfs subvolume or a mount inside the share too.
    fn find_known(&self, key: Key) -> Option<Self::Ref>;

    /// Whether the table keeps inodes the kernel forgot (then a removal
    /// through the mount marks its file's inode gone first, so that it is
    /// not kept).
    const KEEPS_FORGOTTEN: bool = false;

    /// The file of `inode` was removed through the mount: once the kernel
    /// forgets it, it is not kept (its host file's blocks are freed).
    fn mark_gone(inode: &Self::Ref) {
        if let crate::host_inode::HostInode::Handle(slot) = &inode.host {
            slot.mark_gone();
        }
    }

    /// The inode of node id `id`, referenced, if the kernel may name it.
    fn get(&self, id: u64) -> Option<Self::Ref>;

    /// The kernel gives back `n` lookups (`FORGET`).
    ///
    /// # Errors
    ///
    /// [`ForgetError`] for an unknown node id or more than the kernel
    /// holds; nothing changes.
    fn forget(&self, id: u64, n: u64) -> Result<(), ForgetError>;

    /// Inodes in the table, the root included (never empty: the table
    /// holds the root).
    fn inodes(&self) -> usize;

    /// Inodes the kernel forgot that the table keeps, found again by
    /// [`lookup_known`](Self::lookup_known) (none but in a table that
    /// keeps them, `LockrefTable`'s; there, those revived since may still
    /// be counted: an upper bound). While there are any, a `LOOKUP` asks
    /// `statx` by name first.
    fn kept(&self) -> usize {
        0
    }

    /// Whether only the root is left.
    fn only_root(&self) -> bool {
        self.inodes() == 1
    }

    /// The kernel's lookups on the inode of node id `id` (for tests).
    fn kernel_lookups(&self, id: u64) -> Option<u64>;
}
