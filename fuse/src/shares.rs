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
//! lock and *closes* the word: swaps it for `CLOSED` and moves its count
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

/// The users' requests in service and waiting, with the threads serving.
pub(crate) struct Shares<J> {
    threads: AtomicUsize,
    /// One user's turns, counted without the lock: `uid << 32 | turns`,
    /// or [`CLOSED`] while the state counts every turn (the module's text).
    alone: AtomicU64,
    state: Mutex<State<J>>,
    /// Requests that waited their turn, since the start.
    waited: AtomicU64,
}

/// `alone` while the users' map counts every turn. No user and count make
/// it: a count never reaches `u32::MAX`.
const CLOSED: u64 = u64::MAX;

/// `alone` open with nobody's turn in it.
const OPEN: u64 = 0;

fn alone_word(uid: u32, turns: u64) -> u64 {
    u64::from(uid) << 32 | turns
}

/// The user and the turn count of an open `alone` word.
fn alone_parts(word: u64) -> (u32, u64) {
    ((word >> 32) as u32, word & 0xffff_ffff)
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
            alone: AtomicU64::new(OPEN),
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
        if self.admit_alone(uid) {
            return Some(Turn { shares: self, uid });
        }
        let mut state = self.state();
        self.close_alone(&mut state);
        self.counted_in(&mut state, uid)
            .then(|| Turn { shares: self, uid })
    }

    /// Counts a turn of `uid` in the `alone` word, if it is open, holds no
    /// other user's turns, and `uid` holds fewer than every serving thread
    /// (a user's share when alone).
    fn admit_alone(&self, uid: u32) -> bool {
        // Relaxed: read as `limits` reads it.
        let threads = self.threads.load(Ordering::Relaxed) as u64;
        let most = threads.min(u64::from(u32::MAX - 1));
        // Relaxed: the word is a count alone, published to nobody: every
        // change of it is a read-modify-write (or a store under the lock
        // while it counts nothing), so each reads the latest; the requests
        // that wait move under the lock, never through it.
        let mut word = self.alone.load(Ordering::Relaxed);
        loop {
            if word == CLOSED {
                return false;
            }
            let (owner, turns) = alone_parts(word);
            if (turns > 0 && owner != uid) || turns >= most {
                return false;
            }
            match self.alone.compare_exchange_weak(
                word,
                alone_word(uid, turns + 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
    }

    /// Closes the `alone` word, its turns moved into `state`: from now on
    /// the lock counts every turn.
    fn close_alone(&self, state: &mut State<J>) {
        // Relaxed: as in `admit_alone`; the lock orders this with the
        // word's opening and with every turn ended under it.
        let word = self.alone.swap(CLOSED, Ordering::Relaxed);
        if word == CLOSED {
            return;
        }
        let (owner, turns) = alone_parts(word);
        if turns > 0 {
            debug_assert!(state.users.is_empty(), "an open word: nobody else counted");
            let turns = turns as usize;
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
        // Relaxed: as in `admit_alone`.
        let mut word = self.alone.load(Ordering::Relaxed);
        while word != CLOSED {
            // Open: this turn is counted in it (a turn counted under the
            // lock keeps the word closed until it ends), and nothing waits.
            debug_assert_eq!(alone_parts(word).0, uid, "the word's user's turn");
            debug_assert!(alone_parts(word).1 > 0, "the word counts this turn");
            match self.alone.compare_exchange_weak(
                word,
                word - 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return None,
                Err(now) => word = now,
            }
        }
        let mut state = self.state();
        let next = self.end_counted(&mut state, uid, pick);
        if state.users.is_empty() {
            // Nobody counted, nothing waiting: the word counts again.
            // Relaxed: as in `close_alone`.
            self.alone.store(OPEN, Ordering::Relaxed);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Drains a turn as a serving thread does, returning what it served.
    fn serve_on(turn: Turn<'_, u32>) -> Vec<u32> {
        let mut served = Vec::new();
        let mut next = turn.next();
        while let Some((turn, request)) = next {
            served.push(request);
            next = turn.next();
        }
        served
    }

    #[test]
    fn a_user_alone_holds_every_serving_thread() {
        let shares = Shares::<u32>::new(4);
        let turns: Vec<_> = (0..4).map_while(|_| shares.admit(1000)).collect();
        assert_eq!(turns.len(), 4);
        assert!(
            shares.admit(1000).is_none(),
            "the thread more is left to read"
        );
        assert!(shares.wait(1000, 7).is_none());
        assert!(shares.admit(0).is_some(), "another user is served at once");
        let mut turns = turns.into_iter();
        assert_eq!(serve_on(turns.next().unwrap()), vec![7]);
        assert_eq!((shares.waiting(), shares.waited()), (0, 1));
    }

    /// A user alone is counted in the word, not the map; a second user
    /// moves the first's turns under the lock, where they end; the last
    /// end opens the word again.
    #[test]
    fn a_lone_users_turns_are_counted_in_the_word_until_another_comes() {
        let shares = Shares::<u32>::new(4);
        let alone = |s: &Shares<u32>| s.alone.load(Ordering::Relaxed);
        let (t1, t2) = (shares.admit(1).unwrap(), shares.admit(1).unwrap());
        assert_eq!(alone(&shares), alone_word(1, 2));
        assert!(shares.state().users.is_empty(), "no lock taken");
        let t3 = shares.admit(2).expect("a second user within its share");
        assert_eq!(alone(&shares), CLOSED);
        {
            let state = shares.state();
            assert_eq!((state.users[&1].serving, state.users[&2].serving), (2, 1));
            assert_eq!(state.serving, 3);
        }
        drop((t1, t3));
        assert_eq!(
            alone(&shares),
            CLOSED,
            "a turn still counted under the lock"
        );
        drop(t2);
        assert_eq!(alone(&shares), OPEN, "nobody counted: open again");
        assert_eq!(shares.state().serving, 0);
        let t = shares.admit(2).unwrap();
        assert_eq!(alone(&shares), alone_word(2, 1));
        drop(t);
        assert_eq!(alone(&shares), alone_word(2, 0));
    }

    #[test]
    fn two_users_share_the_threads_by_turns() {
        let shares = Shares::<u32>::new(4);
        let a: Vec<_> = (0..4).map_while(|_| shares.admit(1)).collect();
        let b = shares.admit(2).expect("a second user within its share");
        // Two users: a share of 2 each; the first holds 4 until they end.
        assert!(shares.admit(1).is_none());
        assert!(shares.wait(1, 10).is_none());
        assert!(shares.wait(1, 11).is_none());
        assert!(shares.admit(2).is_some_and(|t| {
            drop(t);
            true
        }));
        let mut a = a.into_iter();
        // The first user holds 3, over its share of 2, and the two users
        // hold 4 - 1 = 3: nothing more is served until a turn ends.
        assert!(
            a.next().unwrap().next().is_none(),
            "at its share: nothing taken"
        );
        assert_eq!(shares.waiting(), 2);
        let (turn, first) = a.next().unwrap().next().expect("under its share now");
        assert_eq!(first, 10);
        drop(b);
        assert_eq!(
            serve_on(turn),
            vec![11],
            "the other user gone: a share of 3"
        );
        drop(a);
        assert_eq!(shares.state().users.len(), 0, "nobody left counted");
    }

    /// The turns of a refused request's user end before it is kept: it is
    /// served at once, not kept where no thread would hand it over.
    #[test]
    fn a_request_refused_as_its_users_turns_end_is_served_at_once() {
        let shares = Shares::<u32>::new(1);
        let t = shares.admit(5).unwrap();
        assert!(shares.admit(5).is_none());
        assert!(t.next().is_none());
        let (turn, request) = shares.wait(5, 9).expect("within its share again");
        assert_eq!((request, shares.waiting()), (9, 0));
        drop(turn);
        assert_eq!(shares.state().users.len(), 0);
    }

    #[test]
    fn a_panicked_turn_is_given_back_and_the_waiting_are_served_next() {
        let shares = Shares::<u32>::new(1);
        let t = shares.admit(5).unwrap();
        assert!(shares.admit(5).is_none());
        assert!(shares.wait(5, 1).is_none());
        drop(t); // as an unwinding request would
        let turn = shares.admit(6).expect("nobody served: admitted");
        assert_eq!(serve_on(turn), vec![1]);
        assert_eq!(shares.state().serving, 0);
    }
}

/// Loom models of the shares' races, run by `.ci/run` with `RUSTFLAGS="--cfg
/// loom --cfg lockref_loom --cfg crossbeam_loom"` (the crate's table needs
/// the other two).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Serves a request of `uid` as a serving thread does: now, or kept,
    /// or handed back by `wait`; then every request its turns hand over.
    fn serve(shares: &Shares<u32>, uid: u32, request: u32, served: &Mutex<Vec<u32>>) {
        let mut next = match shares.admit(uid) {
            Some(turn) => Some((turn, request)),
            None => shares.wait(uid, request),
        };
        while let Some((turn, request)) = next {
            served.lock().unwrap().push(request);
            next = turn.next();
        }
    }

    /// Once every turn has ended: nobody counted under the lock, and the
    /// `alone` word open, counting nobody.
    fn assert_nobody_counted(shares: &Shares<u32>) {
        let state = shares.state();
        assert_eq!(
            (state.users.len(), state.serving),
            (0, 0),
            "nobody left counted"
        );
        let word = shares.alone.load(Ordering::Relaxed);
        assert!(
            word != CLOSED && alone_parts(word).1 == 0,
            "the word open, counting nobody"
        );
    }

    /// Each `(uid, request)` served on a thread of its own, on shares of
    /// `threads` serving threads; returns what was served, sorted, once
    /// every thread has ended, and checks that nobody is left counted and
    /// the `alone` word is open.
    fn race(threads: usize, requests: &[(u32, u32)]) -> Vec<u32> {
        let shares = Arc::new(Shares::<u32>::new(threads));
        let served = Arc::new(Mutex::new(Vec::new()));
        let sides: Vec<_> = requests
            .iter()
            .map(|&(uid, request)| {
                let (shares, served) = (shares.clone(), served.clone());
                thread::spawn(move || serve(&shares, uid, request, &served))
            })
            .collect();
        for side in sides {
            side.join().unwrap();
        }
        assert_nobody_counted(&shares);
        let mut served = served.lock().unwrap().clone();
        served.sort_unstable();
        served
    }

    /// A request refused while its user's only turn ends on another
    /// thread: kept and handed over by that turn's end, or handed back by
    /// `wait` itself; either way served exactly once, nothing left kept.
    #[test]
    fn a_refused_request_races_the_end_of_its_users_turn() {
        loom::model(|| assert_eq!(race(1, &[(5, 1), (5, 2)]), [1, 2], "each served once"));
    }

    /// Two users' requests on one serving thread's shares: each user is
    /// within its share, so both are served at once, whichever comes
    /// first.
    #[test]
    fn two_users_race_for_one_thread() {
        loom::model(|| assert_eq!(race(1, &[(5, 1), (6, 3)]), [1, 3], "each served once"));
    }

    /// A user's two turns counted in the `alone` word, ended one by one
    /// while another user's request closes the word: each turn ends once,
    /// in the word or under the lock where the close moved it, and the
    /// word opens again once the last has ended.
    #[test]
    fn a_second_user_closes_the_word_while_the_first_users_turns_end() {
        loom::model(|| {
            let shares = Arc::new(Shares::<u32>::new(2));
            let served = Arc::new(Mutex::new(Vec::new()));
            let other = {
                let (shares, served) = (shares.clone(), served.clone());
                thread::spawn(move || serve(&shares, 6, 3, &served))
            };
            let first = shares.admit(5).expect("alone, within the threads");
            let second = shares.admit(5);
            drop(first);
            drop(second);
            other.join().unwrap();
            assert_eq!(*served.lock().unwrap(), [3], "served once");
            assert_nobody_counted(&shares);
        });
    }
}
