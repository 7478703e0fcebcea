//! The operations on open directories: `OPENDIR`, `READDIR`,
//! `READDIRPLUS` and `FSYNCDIR` (`RELEASEDIR` is a file's release).

use std::ffi::OsStr;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;

use std::time::Duration;

use fuser::{Errno, FileHandle, FileType, FopenFlags, Generation, INodeNo};
use nix::fcntl::AtFlags;

use crate::creds::Caller;
use crate::fs::{Entry, Passthrough, GENERATION};
use crate::handles::{DirStream, Open};
use crate::host::errno;
use crate::table::{InodeTable, ROOT_ID};

/// Where a `READDIR` page goes: the reply being written (`answer.rs`).
pub(crate) trait DirPage {
    /// The bytes the page has room for.
    fn room(&self) -> usize;

    /// Adds an entry; `true` if the page is full (this entry not added).
    fn add(&mut self, ino: INodeNo, offset: u64, kind: FileType, name: &OsStr) -> bool;
}

/// Where a `READDIRPLUS` page goes.
pub(crate) trait DirPlusPage {
    /// The bytes the page has room for.
    fn room(&self) -> usize;

    /// Adds an entry; `true` if the page is full (this entry not added).
    fn add(
        &mut self,
        offset: u64,
        name: &OsStr,
        ttl: &Duration,
        entry: &Entry,
        generation: Generation,
    ) -> bool;
}

impl<T: InodeTable> Passthrough<T> {
    pub(crate) fn do_opendir(
        &self,
        caller: &Caller,
        ino: INodeNo,
    ) -> Result<(FileHandle, FopenFlags), Errno> {
        let inode = self.inode(ino)?;
        let _as = self.as_caller(caller)?;
        self.handles.may_add(caller.uid)?;
        let stream = DirStream::open(inode.fd())?;
        // With entries cached at all, the kernel may cache the listing too
        // (`FOPEN_CACHE_DIR`) and keep it across opens (`FOPEN_KEEP_CACHE`),
        // as libfuse's passthrough does with caching on: it drops it when
        // the directory changes through this mount (its version moves) or
        // its mtime does (seen after the attribute timeout, for changes
        // made on the host directly).
        let flags = if self.ttl.is_zero() {
            FopenFlags::empty()
        } else {
            FopenFlags::FOPEN_CACHE_DIR | FopenFlags::FOPEN_KEEP_CACHE
        };
        let fh = self
            .handles
            .add(inode.inode, Open::Dir(stream), caller.uid, None)?;
        Ok((fh, flags))
    }

    pub(crate) fn do_readdirplus(
        &self,
        caller: &Caller,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: &mut impl DirPlusPage,
    ) -> Result<(), Errno> {
        // Relaxed: a counter for tests and reports.
        self.listings.fetch_add(1, Ordering::Relaxed);
        let dir = self.inode(ino)?;
        let h = self.handles.dir(fh)?;
        let Open::Dir(stream) = &h.open else {
            return Err(Errno::ENOTDIR);
        };
        let _as = self.as_caller(caller)?;
        // A lookup is counted for every entry added: once one is, an error
        // must not turn the reply into an error reply, which would carry
        // none of them to the kernel (and so none would ever be forgotten).
        // Then what was gathered is sent, as the kernel itself returns a
        // partial listing, and the error comes with the next call.
        let mut added = false;
        let mut failed = None;
        // An entry with attributes takes 128 bytes more than its name's
        // host entry (about 32): a fifth of the room, in host entries.
        let wanted = reply.room() / 5;
        let listed = stream.list_from(offset, wanted, |entry| {
            let name = OsStr::from_bytes(entry.name);
            if name == "." || name == ".." {
                // The kernel counts no lookup for these: none is taken.
                let st = match nix::sys::stat::fstatat(dir.fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW)
                {
                    Ok(st) => st,
                    Err(e) => {
                        failed = Some(errno(e));
                        return ControlFlow::Break(());
                    }
                };
                // Node id ROOT_ID, no lookup counted for it (the kernel
                // makes no entry of these).
                let dot = Entry {
                    node: ROOT_ID,
                    attr: self.attr(&st),
                };
                if reply.add(entry.next, name, &self.ttl, &dot, GENERATION) {
                    return ControlFlow::Break(());
                }
                added = true;
                return ControlFlow::Continue(());
            }
            let found = match self.lookup_listed_child(&dir, name) {
                Ok(found) => found,
                // Gone since the host listed it: skipped, as the host would
                // now.
                Err(Errno::ENOENT) => return ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
            };
            if reply.add(entry.next, name, &self.ttl, &found, GENERATION) {
                // The buffer is full: this entry was not sent, so neither
                // was its lookup.
                let _ = self.table.forget(found.node, 1);
                return ControlFlow::Break(());
            }
            added = true;
            ControlFlow::Continue(())
        });
        match failed.map_or(listed, Err) {
            Err(e) if !added => Err(e),
            _ => Ok(()),
        }
    }

    /// A `READDIR` page: names, kinds and the host's inode numbers, added
    /// to `reply` from the host's seek cookie `offset`; an error once
    /// something was added comes with the next call.
    pub(crate) fn do_readdir(
        &self,
        fh: FileHandle,
        offset: u64,
        reply: &mut impl DirPage,
    ) -> Result<(), Errno> {
        // Relaxed: a counter for tests and reports.
        self.listings.fetch_add(1, Ordering::Relaxed);
        let h = self.handles.dir(fh)?;
        let Open::Dir(stream) = &h.open else {
            return Err(Errno::ENOTDIR);
        };
        let mut added = false;
        let wanted = reply.room();
        let listed = stream.list_from(offset, wanted, |entry| {
            let kind = entry.kind.unwrap_or(fuser::FileType::RegularFile);
            if reply.add(
                INodeNo(entry.ino),
                entry.next,
                kind,
                OsStr::from_bytes(entry.name),
            ) {
                return ControlFlow::Break(());
            }
            added = true;
            ControlFlow::Continue(())
        });
        match listed {
            // Nothing sent yet: the error is the reply. Otherwise the
            // entries gathered go, and the error comes with the next call.
            Err(e) if !added => Err(e),
            _ => Ok(()),
        }
    }

    /// `FSYNCDIR`: the handle's own descriptor of the directory synced
    /// (no open, so no credentials: the caller opened it).
    pub(crate) fn do_fsyncdir(&self, fh: FileHandle) -> Result<(), Errno> {
        let h = self.handles.dir(fh)?;
        let Open::Dir(stream) = &h.open else {
            return Err(Errno::ENOTDIR);
        };
        stream.sync()
    }
}
