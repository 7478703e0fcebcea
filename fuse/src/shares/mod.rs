//! [`Shares`]: each user's share of the serving threads, so that one user
//! cannot hold every thread while another's requests wait (N4).
//!
//! The kernel queues a mount's requests first come, first served, and each
//! serving thread takes the next one. A user with many requests in flight
//! (a build's processes, a loop of opens, or requests the host is slow to
//! answer) then fills the queue and every thread, and another user's
//! request waits behind all of them. So a request is served at once only
//! while its user (its uid) holds fewer than its share of the threads;
//! past it, the request waits here, off the kernel's queue, and the thread
//! goes back to reading. A thread that finishes a request serves the next
//! one waiting, by turns among the users under their share. So the other
//! threads keep reading, and a request of a user within its share is
//! served as soon as it is read.
//!
//! - The server reads the kernel's queue on one thread more than it serves
//!   on ([`MountConfig::threads`](crate::MountConfig::threads) serving, one
//!   more reading): a user alone may hold every serving thread, and the
//!   one more is left to read, so a new user's request is seen and served
//!   while the first user's are held.
//! - A user's share: the serving threads divided among the users with
//!   requests served or waiting, at least one each.
//! - Work-conserving: with nobody under their share waiting, a thread still
//!   serves the first request waiting, while fewer requests than serving
//!   threads are served (so one thread is left to read).
//! - No order is kept between one user's requests (the kernel sends them
//!   concurrently, to any thread, already): a request admitted now may
//!   pass one of its user's that waits.
//!
//! FORGET has no reply and costs nothing: it never waits.
//!
//! **One user alone takes no lock.** While a single user has requests in
//! service and none wait (a busy server's usual state, and every
//! single-user one's), its turns are counted in one atomic word, `alone`
//! (the user and its count), by one compare-and-swap to begin a turn and
//! one to end it, where the lock, the map's insert and its removal were
//! taken for each. A request that the word cannot take (another user's
//! while the first has some in service, or one past the threads) takes the
//! lock and *closes* the word: marks it closed and moves its count
//! into the users' map, all under the lock. From then on everything is
//! counted under the lock, turns begun in the word included (their end
//! finds the word closed); the last turn to end under the lock, leaving
//! nobody counted, opens the word again. While the word is open the map is
//! empty and nothing waits, so the two never count one turn twice.

use std::collections::{HashMap, VecDeque};
use std::mem::ManuallyDrop;

use crate::table::ServerHasher;

#[cfg(loom)]
use loom::sync::{
    atomic::{AtomicU64, AtomicUsize, Ordering},
    Mutex, MutexGuard,
};
#[cfg(not(loom))]
use std::sync::{
    atomic::{AtomicU64, AtomicUsize, Ordering},
    Mutex, MutexGuard,
};

mod alone;
#[cfg(all(test, loom))]
mod loom_models;
#[cfg(all(test, not(loom)))]
mod tests;

use alone::AloneWord;

/// The users' requests in service and waiting, with the threads serving.
pub(crate) struct Shares<J> {
    threads: AtomicUsize,
    /// One user's turns, counted without the lock while it is alone (the
    /// module's text).
    alone: AloneWord,
    state: Mutex<State<J>>,
    /// Requests that waited their turn, since the start.
    waited: AtomicU64,
}

struct State<J> {
    /// The users with a request served or waiting, and only those.
    users: HashMap<u32, User<J>, ServerHasher>,
    /// The users with requests waiting, in the order of their turns.
    turns: VecDeque<u32>,
    /// Requests in service, every user's.
    serving: usize,
}

struct User<J> {
    serving: usize,
    waiting: VecDeque<J>,
}

/// A request in service, counted in its user's share until this is
/// ended: by [`next`](Turn::next), which hands the thread the next request
/// waiting, or by its drop (a request that panicked), which does not.
pub(crate) struct Turn<'a, J> {
    shares: &'a Shares<J>,
    uid: u32,
}

impl<J> Shares<J> {
    pub(crate) fn new(threads: usize) -> Self {
        Shares {
            threads: AtomicUsize::new(threads.max(1)),
            alone: AloneWord::new(),
            state: Mutex::new(State {
                users: HashMap::default(),
                turns: VecDeque::new(),
                serving: 0,
            }),
            waited: AtomicU64::new(0),
        }
    }

    /// The serving threads (set when mounted).
    pub(crate) fn set_threads(&self, threads: usize) {
        // Relaxed: read under the state's lock, set before the mount.
        self.threads.store(threads.max(1), Ordering::Relaxed);
    }

    fn state(&self) -> MutexGuard<'_, State<J>> {
        // A panic under the lock leaves the counts as they were: no
        // update here is half done across a call that can panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The most threads one user may hold with `active` users, and the
    /// most that the requests waiting are handed (the serving threads: the
    /// one more, left to read, serves only a user within its share).
    fn limits(&self, active: usize) -> (usize, usize) {
        let threads = self.threads.load(Ordering::Relaxed);
        ((threads / active.max(1)).max(1), threads)
    }

    /// A turn for a request of `uid` now, if the user is within its share;
    /// `None`: the request must [`wait`](Self::wait).
    pub(crate) fn admit(&self, uid: u32) -> Option<Turn<'_, J>> {
        // Made only once counted: a turn's drop ends it.
        // Relaxed: read as `limits` reads it.
        if self.alone.begin(uid, self.threads.load(Ordering::Relaxed)) {
            return Some(Turn { shares: self, uid });
        }
        let mut state = self.state();
        self.close_alone(&mut state);
        self.counted_in(&mut state, uid)
            .then(|| Turn { shares: self, uid })
    }

    /// Closes the `alone` word, its turns moved into `state`: from now on
    /// the lock counts every turn.
    fn close_alone(&self, state: &mut State<J>) {
        if let Some((owner, turns)) = self.alone.close() {
            debug_assert!(state.users.is_empty(), "an open word: nobody else counted");
            state.users.insert(
                owner,
                User {
                    serving: turns,
                    waiting: VecDeque::new(),
                },
            );
            state.serving += turns;
        }
    }

    /// Counts a request of `uid` in service, if the user is within its
    /// share (a user not counted yet is added, and then is).
    fn counted_in(&self, state: &mut State<J>, uid: u32) -> bool {
        let active = state.users.len() + usize::from(!state.users.contains_key(&uid));
        let (share, _) = self.limits(active);
        let user = state.users.entry(uid).or_insert_with(|| User {
            serving: 0,
            waiting: VecDeque::new(),
        });
        if user.serving >= share {
            return false;
        }
        user.serving += 1;
        state.serving += 1;
        true
    }

    /// Keeps a request of `uid` (refused by `admit`) until its turn; or,
    /// if the user's turns ended between the two calls, gives it back
    /// with a turn now (nothing else would hand it over).
    pub(crate) fn wait(&self, uid: u32, request: J) -> Option<(Turn<'_, J>, J)> {
        let mut state = self.state();
        let state = &mut *state;
        // The word may have opened since `admit` closed it.
        self.close_alone(state);
        if self.counted_in(state, uid) {
            return Some((Turn { shares: self, uid }, request));
        }
        let user = state.users.get_mut(&uid).expect("counted above");
        if user.waiting.is_empty() {
            state.turns.push_back(uid);
        }
        user.waiting.push_back(request);
        // Relaxed: a statistic.
        self.waited.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Ends a turn of `uid`; with `pick`, takes the next request to serve.
    fn end(&self, uid: u32, pick: bool) -> Option<(u32, J)> {
        // Ended in the word: nothing waits while it is open.
        if self.alone.end(uid) {
            return None;
        }
        let mut state = self.state();
        let next = self.end_counted(&mut state, uid, pick);
        if state.users.is_empty() {
            // Nobody counted, nothing waiting: the word counts again.
            self.alone.open();
        }
        next
    }

    /// [`end`](Self::end) under the lock.
    fn end_counted(&self, state: &mut State<J>, uid: u32, pick: bool) -> Option<(u32, J)> {
        let user = state.users.get_mut(&uid).expect("a turn's user is counted");
        user.serving -= 1;
        state.serving -= 1;
        if user.serving == 0 && user.waiting.is_empty() {
            state.users.remove(&uid);
        }
        if !pick {
            return None;
        }
        let (share, all) = self.limits(state.users.len());
        // By turns, the first user under its share; else, if a thread is
        // left to read, the first user waiting.
        let turn = (0..state.turns.len())
            .find(|&i| state.users[&state.turns[i]].serving < share)
            .or_else(|| (state.serving < all && !state.turns.is_empty()).then_some(0))?;
        let uid = state.turns.remove(turn).expect("a turn in range");
        let user = state
            .users
            .get_mut(&uid)
            .expect("a waiting user is counted");
        let request = user.waiting.pop_front().expect("a user in turn waits");
        user.serving += 1;
        state.serving += 1;
        if !user.waiting.is_empty() {
            state.turns.push_back(uid);
        }
        Some((uid, request))
    }

    /// Requests that waited their turn, since the start.
    pub(crate) fn waited(&self) -> u64 {
        self.waited.load(Ordering::Relaxed)
    }

    /// Requests waiting now.
    #[cfg(all(test, not(loom)))]
    fn waiting(&self) -> usize {
        self.state().users.values().map(|u| u.waiting.len()).sum()
    }
}

impl<'a, J> Turn<'a, J> {
    /// Ends this turn and hands over the next request waiting, with its
    /// turn, if one may be served now.
    pub(crate) fn next(self) -> Option<(Turn<'a, J>, J)> {
        let this = ManuallyDrop::new(self);
        let (uid, request) = this.shares.end(this.uid, true)?;
        Some((
            Turn {
                shares: this.shares,
                uid,
            },
            request,
        ))
    }
}

impl<J> Drop for Turn<'_, J> {
    fn drop(&mut self) {
        self.shares.end(self.uid, false);
    }
}
