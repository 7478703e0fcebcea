//! A fault hook in the host layer (feature `testing`): after a number of
//! successful lookups, the next ones fail with a chosen errno, so that the
//! tests can break a reply that carries entries part-way (a `READDIRPLUS`)
//! and check that every lookup counted reaches the kernel.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};

use fuser::Errno;

/// Off, or the lookups still allowed before the failures start.
pub(crate) struct LookupFault {
    /// Lookups left to succeed; negative: no fault armed.
    allowed: AtomicI64,
    errno: AtomicI32,
}

impl LookupFault {
    pub(crate) fn new() -> Self {
        LookupFault {
            allowed: AtomicI64::new(-1),
            errno: AtomicI32::new(0),
        }
    }

    /// Lets `allowed` more lookups succeed, then fails every one with
    /// `errno` until [`disarm`](Self::disarm).
    pub(crate) fn arm(&self, allowed: u32, errno: i32) {
        // Relaxed (all): a test's switch, ordered by the requests that
        // follow it through the kernel.
        self.errno.store(errno, Ordering::Relaxed);
        self.allowed.store(i64::from(allowed), Ordering::Relaxed);
    }

    pub(crate) fn disarm(&self) {
        self.allowed.store(-1, Ordering::Relaxed);
    }

    /// Before a lookup: the injected error, if it is due.
    pub(crate) fn check(&self) -> Result<(), Errno> {
        let left = self
            .allowed
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n > 0).then(|| n - 1)
            });
        match left {
            Err(0) => Err(Errno::from_i32(self.errno.load(Ordering::Relaxed))),
            _ => Ok(()),
        }
    }
}
