//! A decided request's reply written for its transport: into a ring
//! entry's buffers, or as one `/dev/fuse` write of the header and the
//! payload, both through [`Reply`].

use std::ffi::OsStr;
use std::time::Duration;

use fuser::{Errno, FileType, Generation, INodeNo};

use crate::dirs::{DirPage, DirPlusPage};
use crate::dispatch::{decide_request, Answer, OPEN_FILE_FLAGS};
use crate::fs::{Entry, Passthrough, GENERATION};
use crate::table::InodeTable;
use crate::wire::{Malformed, Overflow, Reply, Request, HEADER_LEN, OUT_HEADER_LEN};

impl From<Malformed> for Errno {
    fn from(_: Malformed) -> Self {
        Errno::EINVAL
    }
}

impl From<Overflow> for Errno {
    fn from(_: Overflow) -> Self {
        Errno::EIO
    }
}

/// Answers the request in a ring entry's `header` and `payload` (handed
/// over by the kernel's completion) into the same buffers, and returns the
/// id its commit names.
pub(crate) fn answer_ring<T: InodeTable>(
    fs: &Passthrough<T>,
    header: &mut [u8; HEADER_LEN],
    payload: &mut [u8],
) -> u64 {
    let unique = Request::unique_of(header);
    let commit_id = Request::commit_id_of(header);
    let answer = match Request::from_ring(header, payload) {
        Ok(req) => decide_request(fs, &req),
        // A filled length past the buffer: nothing of it is read.
        Err(Malformed) => Err(Errno::EIO),
    };
    let mut reply = Reply::new(payload);
    let error = match answer.and_then(|a| write(fs, &mut reply, a)) {
        Ok(()) => 0,
        Err(e) => i32::from(e),
    };
    reply.finish(unique, error).into_ring(header);
    commit_id
}

/// Answers `request`, a `/dev/fuse` request read into `buf` (its first
/// `len` bytes), into `buf` itself: the reply's header then its payload.
/// Returns the reply's length, or `None` for a request too malformed to
/// have a `unique` to answer.
pub(crate) fn answer_device<T: InodeTable>(
    fs: &Passthrough<T>,
    buf: &mut [u8],
    len: usize,
) -> Option<usize> {
    let request = buf.get(..len)?;
    let unique = crate::wire::unique_of_device(request)?;
    let answer = match Request::from_device(request) {
        Ok(req) => decide_request(fs, &req),
        Err(Malformed) => Err(Errno::EINVAL),
    };
    let (header, payload) = buf.split_at_mut(OUT_HEADER_LEN);
    let mut reply = Reply::new(payload);
    let error = match answer.and_then(|a| write(fs, &mut reply, a)) {
        Ok(()) => 0,
        Err(e) => i32::from(e),
    };
    let finished = reply.finish(unique, error);
    header.copy_from_slice(&finished.header);
    Some(OUT_HEADER_LEN + finished.len)
}

/// Writes `answer` into `reply`.
fn write<T: InodeTable>(
    fs: &Passthrough<T>,
    reply: &mut Reply<'_>,
    answer: Answer,
) -> Result<(), Errno> {
    let ttl = fs.ttl;
    match answer {
        Answer::Empty => {}
        Answer::Entry(entry) => reply.put_entry(ttl, &entry, GENERATION)?,
        Answer::Attr(attr) => reply.put_attr_out(ttl, &attr)?,
        Answer::Data(data) => reply.put(&data)?,
        Answer::Open(fh, flags, backing) => reply.put_open(fh.0, flags, backing)?,
        Answer::Created(entry, fh, backing) => {
            reply.put_entry(ttl, &entry, GENERATION)?;
            reply.put_open(fh.0, OPEN_FILE_FLAGS, backing)?;
        }
        Answer::Written(n) => {
            reply.put_u32(n)?;
            reply.put_u32(0)?;
        }
        Answer::Statfs(s) => {
            for v in [
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
            ] {
                reply.put_u64(v)?;
            }
            let bsize = u32::try_from(s.block_size()).unwrap_or(4096);
            let namelen = u32::try_from(s.name_max()).unwrap_or(255);
            let frsize = u32::try_from(s.fragment_size()).unwrap_or(4096);
            for v in [bsize, namelen, frsize, 0, 0, 0, 0, 0, 0, 0] {
                reply.put_u32(v)?;
            }
        }
        Answer::XattrSize(n) => {
            reply.put_u32(n)?;
            reply.put_u32(0)?;
        }
        Answer::Offset(o) => reply.put_u64(o as u64)?,
        Answer::Read { fh, offset, size } => {
            reply.fill(size as usize, |buf| fs.do_read_into(fh, offset, buf))?;
        }
        Answer::Listing {
            plus,
            fh,
            offset,
            size,
        } => {
            let max = (size as usize).min(reply.room());
            let mut page = Page {
                reply,
                max,
                failed: None,
            };
            match plus {
                Some((caller, dir)) => fs.do_readdirplus(&caller, dir, fh, offset, &mut page)?,
                None => fs.do_readdir(fh, offset, &mut page)?,
            }
            if let Some(e) = page.failed {
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// A directory page written into a reply, at most `max` bytes.
pub(crate) struct Page<'r, 'a> {
    reply: &'r mut Reply<'a>,
    max: usize,
    failed: Option<Overflow>,
}

impl DirPage for Page<'_, '_> {
    fn room(&self) -> usize {
        self.max.saturating_sub(self.reply.len())
    }

    fn add(&mut self, ino: INodeNo, offset: u64, kind: FileType, name: &OsStr) -> bool {
        match self.reply.put_dirent(self.max, ino, offset, kind, name) {
            Ok(added) => !added,
            Err(e) => {
                self.failed = Some(e);
                true
            }
        }
    }
}

impl DirPlusPage for Page<'_, '_> {
    fn room(&self) -> usize {
        self.max.saturating_sub(self.reply.len())
    }

    fn add(
        &mut self,
        offset: u64,
        name: &OsStr,
        ttl: &Duration,
        entry: &Entry,
        generation: Generation,
    ) -> bool {
        match self
            .reply
            .put_direntplus(self.max, *ttl, entry, generation, offset, name)
        {
            Ok(added) => !added,
            Err(e) => {
                self.failed = Some(e);
                true
            }
        }
    }
}
