//! What the server has done and holds, for tests and reports: the
//! requests of each kind it served, the lookups answered from the table,
//! the descriptor cache's figures, the credential switches. Every counter
//! is read `Relaxed`: a snapshot, ordered with nothing.

use std::sync::atomic::Ordering;

use crate::descriptors::DescriptorStats;
use crate::fs::Passthrough;
use crate::table::InodeTable;

impl<T: InodeTable> Passthrough<T> {
    /// The descriptor cache's budget and what it has done.
    pub fn descriptor_stats(&self) -> DescriptorStats {
        self.descriptors.stats()
    }

    /// The inode table.
    pub fn table(&self) -> &T {
        &self.table
    }

    /// Open file and directory handles.
    pub fn open_handles(&self) -> usize {
        self.handles.len()
    }

    /// `FORGET`s refused (unknown inode, more than the kernel held).
    pub fn refused_forgets(&self) -> u64 {
        self.refused_forgets.load(Ordering::Relaxed)
    }

    /// `LOOKUP` requests served, whether the name was found or not (a
    /// lookup the kernel answered from its cache never comes here).
    pub fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    /// `READDIR` and `READDIRPLUS` requests served (a listing the kernel
    /// answered from its cache of the directory never comes here).
    pub fn listings(&self) -> u64 {
        self.listings.load(Ordering::Relaxed)
    }

    /// `LOOKUP`s and `READDIRPLUS` entries whose host inode the table had
    /// live (a listed name looked up before the listing) or kept (an inode
    /// the kernel forgot): each answered with one `statx` by name, no
    /// descriptor opened or closed.
    pub fn found_known(&self) -> u64 {
        self.found_known.load(Ordering::Relaxed)
    }

    /// `GETXATTR` requests for a POSIX ACL: the kernel's permission checks
    /// of callers other than an inode's owner, once per inode while it
    /// caches the inode's ACLs (every time for an inode it does not:
    /// `root_alias.rs`).
    pub fn acl_reads(&self) -> u64 {
        self.acl_reads.load(Ordering::Relaxed)
    }

    /// Requests that waited for their user's turn (a user past its share
    /// of the serving threads), since the start.
    pub fn waited_requests(&self) -> u64 {
        self.shares.waited()
    }

    /// Whether open files are read and written by the kernel from the host
    /// file (FUSE passthrough: asked for, offered by the kernel at `INIT`,
    /// and no backing refused since).
    pub fn kernel_passthrough(&self) -> bool {
        self.backings.enabled()
    }

    /// `READ` requests served (a read the kernel served from its page
    /// cache, or from the host file by passthrough, never comes here).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// `WRITE` requests served (a write the kernel made to the host file
    /// by passthrough never comes here).
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// `FLUSH` requests served: none on a kernel that honours
    /// `FOPEN_NOFLUSH` (Linux 5.16+), which every open asks for.
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
    }

    /// `setfsuid`, `setfsgid` and `setgroups` calls made for callers.
    pub fn credential_switches(&self) -> u64 {
        self.cred_counts.switches.load(Ordering::Relaxed)
    }

    /// Reads of a caller's groups from `/proc`.
    pub fn group_reads(&self) -> u64 {
        self.cred_counts.group_reads.load(Ordering::Relaxed)
    }

    /// Times the C allocator's free pages were given back to the host
    /// after many `FORGET`s (`trim.rs`).
    pub fn memory_trims(&self) -> u64 {
        self.memory_trims.load(Ordering::Relaxed)
    }
}
