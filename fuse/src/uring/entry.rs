//! [`Entry`]: one ring entry's buffers, shared with the kernel: a
//! 288-byte header buffer and a payload buffer it fills with a request and
//! reads a reply from, and the two iovecs its `REGISTER` names.

use std::cell::UnsafeCell;

use crate::wire::HEADER_LEN;

/// One entry's buffers, shared with the kernel.
pub(super) struct Entry {
    /// `fuse_uring_req_header`, from `Box::into_raw`, freed on drop.
    pub(super) header: *mut [u8; HEADER_LEN],
    /// The payload buffer, from `Box::into_raw`, freed on drop.
    pub(super) payload: *mut [u8],
    /// The two iovecs the `REGISTER` names, read by the kernel then.
    pub(super) iov: UnsafeCell<[libc::iovec; 2]>,
}

// SAFETY: an entry's buffers are touched by one party at a time
// (`queue.rs`'s text): the kernel between a command and its completion, then
// the one thread that holds the entry until it commits.
unsafe impl Send for Entry {}
// SAFETY: as for `Send`; `iov` is written once, before the entry is shared.
unsafe impl Sync for Entry {}

impl Entry {
    pub(super) fn new(payload_len: usize) -> Self {
        let header = Box::into_raw(Box::new([0u8; HEADER_LEN]));
        let payload = Box::into_raw(vec![0u8; payload_len].into_boxed_slice());
        let iov = [
            libc::iovec {
                iov_base: header.cast(),
                iov_len: HEADER_LEN,
            },
            libc::iovec {
                iov_base: payload.cast(),
                iov_len: payload_len,
            },
        ];
        Entry {
            header,
            payload,
            iov: UnsafeCell::new(iov),
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: both came from `Box::into_raw` and are freed once, here;
        // an entry is dropped only when no command of it is with the
        // kernel (the rings are leaked otherwise, see `threads.rs`'s `reap`).
        unsafe {
            drop(Box::from_raw(self.header));
            drop(Box::from_raw(self.payload));
        }
    }
}
