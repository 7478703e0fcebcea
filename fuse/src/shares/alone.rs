//! [`AloneWord`]: one user's turns counted in one atomic word, while that
//! user is the only one with requests in service (the shares' text says
//! how the word and the lock hand the count over).

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

/// `uid << 32 | turns` while open; [`CLOSED`] while the users' map counts
/// every turn.
pub(super) struct AloneWord(AtomicU64);

/// The word while the users' map counts every turn. No user and count make
/// it: a count never reaches `u32::MAX`.
const CLOSED: u64 = u64::MAX;

/// The word open with nobody's turn in it.
const OPEN: u64 = 0;

fn word(uid: u32, turns: u64) -> u64 {
    u64::from(uid) << 32 | turns
}

/// The user and the turn count of an open word.
fn parts(word: u64) -> (u32, u64) {
    ((word >> 32) as u32, word & 0xffff_ffff)
}

// Every ordering here is Relaxed: the word is a count alone, published to
// nobody. Each change of it is a read-modify-write, or a store under the
// shares' lock while it counts nothing, so each reads the latest; the lock
// orders a close and an open with every turn ended under it, and the
// requests that wait move under the lock, never through the word.
impl AloneWord {
    pub(super) fn new() -> Self {
        AloneWord(AtomicU64::new(OPEN))
    }

    /// Counts a turn of `uid`, if the word is open, holds no other user's
    /// turns, and `uid` holds fewer than `most`.
    pub(super) fn begin(&self, uid: u32, most: usize) -> bool {
        let most = (most as u64).min(u64::from(u32::MAX - 1));
        let mut now = self.0.load(Ordering::Relaxed);
        loop {
            if now == CLOSED {
                return false;
            }
            let (owner, turns) = parts(now);
            if (turns > 0 && owner != uid) || turns >= most {
                return false;
            }
            match self.0.compare_exchange_weak(
                now,
                word(uid, turns + 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(seen) => now = seen,
            }
        }
    }

    /// Ends a turn of `uid` counted in the word, if it is open; `false`:
    /// closed, the turn is counted under the lock (a close moved it there,
    /// or it began there).
    pub(super) fn end(&self, uid: u32) -> bool {
        let mut now = self.0.load(Ordering::Relaxed);
        while now != CLOSED {
            // Open: this turn is counted in it (a turn counted under the
            // lock keeps the word closed until it ends).
            debug_assert_eq!(parts(now).0, uid, "the word's user's turn");
            debug_assert!(parts(now).1 > 0, "the word counts this turn");
            match self
                .0
                .compare_exchange_weak(now, now - 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => now = seen,
            }
        }
        false
    }

    /// Closes the word; the user and the turns it counted, if any, for the
    /// caller to count under the lock. Called under the shares' lock.
    pub(super) fn close(&self) -> Option<(u32, usize)> {
        let now = self.0.swap(CLOSED, Ordering::Relaxed);
        if now == CLOSED {
            return None;
        }
        let (owner, turns) = parts(now);
        (turns > 0).then_some((owner, turns as usize))
    }

    /// Opens the word, counting nobody. Called under the shares' lock, with
    /// nobody counted there.
    pub(super) fn open(&self) {
        self.0.store(OPEN, Ordering::Relaxed);
    }

    /// The user and the turns counted, `None` while closed (tests).
    #[cfg(test)]
    pub(super) fn counted(&self) -> Option<(u32, u64)> {
        let now = self.0.load(Ordering::Relaxed);
        (now != CLOSED).then(|| parts(now))
    }
}
