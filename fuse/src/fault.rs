//! Fault hooks in the host layer (feature `testing`):
//! - [`LookupFault`]: after a number of successful lookups, the next ones
//!   fail with a chosen errno, so that the tests can break a reply that
//!   carries entries part-way (a `READDIRPLUS`) and check that every lookup
//!   counted reaches the kernel;
//! - [`Stall`]: one user's lookups held until released, as a host that is
//!   slow to answer that user would hold them, for the test of each user's
//!   share of the serving threads.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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

/// One user's lookups, held in the server until released.
#[derive(Default)]
pub(crate) struct Stall {
    state: Mutex<Stalled>,
    changed: Condvar,
}

#[derive(Default)]
struct Stalled {
    /// Whose lookups are held.
    uid: Option<u32>,
    /// Lookups held now.
    held: usize,
}

impl Stall {
    fn state(&self) -> MutexGuard<'_, Stalled> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds the lookups of `uid` from now on.
    pub(crate) fn hold(&self, uid: u32) {
        self.state().uid = Some(uid);
    }

    /// Lets every held lookup go on, and holds no more.
    pub(crate) fn release(&self) {
        self.state().uid = None;
        self.changed.notify_all();
    }

    /// Waits until `n` lookups are held, for at most `limit`; whether they
    /// are.
    pub(crate) fn wait_held(&self, n: usize, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let mut state = self.state();
        while state.held < n {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// Lookups held now.
    pub(crate) fn held(&self) -> usize {
        self.state().held
    }

    /// Before a lookup by `uid`: waits while that user's are held.
    pub(crate) fn check(&self, uid: u32) {
        let mut state = self.state();
        if state.uid != Some(uid) {
            return;
        }
        state.held += 1;
        self.changed.notify_all();
        while state.uid == Some(uid) {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.held -= 1;
    }
}

/// The hooks, on the server (test builds only).
impl<T: crate::table::InodeTable> crate::fs::Passthrough<T> {
    /// Test builds (feature `testing`): after `allowed` more lookups, every
    /// lookup fails with `errno` until [`heal`](Self::heal).
    pub fn fail_lookups_after(&self, allowed: u32, errno: i32) {
        self.fault.arm(allowed, errno);
    }

    /// Test builds: lookups succeed again.
    pub fn heal(&self) {
        self.fault.disarm();
    }

    /// Test builds: the lookups of user `uid` are held in the server, each
    /// on the thread serving it, until [`release_held`](Self::release_held)
    /// (a host slow to answer that user).
    pub fn hold_lookups_of(&self, uid: u32) {
        self.stall.hold(uid);
    }

    /// Test builds: waits until `n` lookups are held, for at most `limit`;
    /// whether they are.
    pub fn wait_until_held(&self, n: usize, limit: std::time::Duration) -> bool {
        self.stall.wait_held(n, limit)
    }

    /// Test builds: the lookups held now.
    pub fn held_lookups(&self) -> usize {
        self.stall.held()
    }

    /// Test builds: the held lookups go on; none is held after.
    pub fn release_held(&self) {
        self.stall.release();
    }
}
