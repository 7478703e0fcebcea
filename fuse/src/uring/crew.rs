//! [`Crew`]: who serves one ring queue (`queue.rs`), leader and followers.
//! A thread is a *reaper* while it holds or waits for the queue's reaping
//! lock, then *answers* the request it took, then either reaps again or,
//! if another thread already reaps, goes on *standby* until the watchdog
//! calls it back for a queue stalled with every thread answering.
//!
//! The invariant: every thread counted in [`Crew::reapers`] is one that
//! will reap, and one that is about to stand by has counted one that
//! will; so a queue with requests never has all its threads on standby.
//! (A called-back thread is counted by [`Crew::call`], not again by
//! itself: counted twice, the phantom reaper sent every thread to
//! standby and the queue stopped.) Loom models below.

#[cfg(loom)]
use loom::sync::{
    atomic::{AtomicUsize, Ordering},
    Condvar, Mutex, MutexGuard,
};
#[cfg(not(loom))]
use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Condvar, Mutex, MutexGuard,
};

/// A queue's threads on standby.
#[derive(Default)]
struct Standby {
    /// Threads waiting.
    waiting: usize,
    /// Calls back by the watchdog, each for one of them.
    calls: usize,
}

/// The threads of one queue.
#[derive(Default)]
pub(crate) struct Crew {
    /// Threads holding or waiting for the reaping lock.
    reapers: AtomicUsize,
    /// Threads serving the queue, on standby included.
    threads: AtomicUsize,
    standby: Mutex<Standby>,
    called: Condvar,
}

fn lock<G>(m: &Mutex<G>) -> MutexGuard<'_, G> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Crew {
    /// A new thread joins, as a reaper.
    pub(crate) fn join(&self) {
        // Relaxed (all of this type's counts): the watchdog reads them as
        // hints, and each thread's own reaper count is changed only by
        // itself or, while it is on standby, by its caller under the
        // standby lock, whose release it acquires.
        self.threads.fetch_add(1, Ordering::Relaxed);
        self.reapers.fetch_add(1, Ordering::Relaxed);
    }

    /// A thread that joined could not start, or ended.
    pub(crate) fn leave(&self, reaping: bool) {
        if reaping {
            self.reapers.fetch_sub(1, Ordering::Relaxed);
        }
        self.threads.fetch_sub(1, Ordering::Relaxed);
    }

    /// This reaper took a request (or found none can come): it reaps no
    /// more.
    pub(crate) fn took(&self) {
        self.reapers.fetch_sub(1, Ordering::Relaxed);
    }

    /// After answering: `true` if this thread is to reap again (none
    /// does: counted now), `false` if another reaps (stand by).
    pub(crate) fn reap_again(&self) -> bool {
        self.reapers
            .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// Waits on standby until called back (`true`: counted as a reaper by
    /// the call) or `ended()` (`false`), checked first and at each
    /// [`Crew::wake_all`] (made after what `ended` reads changed).
    pub(crate) fn stand_by(&self, ended: impl Fn() -> bool) -> bool {
        let mut standby = lock(&self.standby);
        standby.waiting += 1;
        loop {
            if standby.calls > 0 {
                standby.calls -= 1;
                standby.waiting -= 1;
                return true;
            }
            if ended() {
                standby.waiting -= 1;
                return false;
            }
            standby = self.called.wait(standby).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Calls one thread back from standby, counting it a reaper; `false`
    /// if none waits uncalled.
    pub(crate) fn call(&self) -> bool {
        let mut standby = lock(&self.standby);
        if standby.waiting <= standby.calls {
            return false;
        }
        self.reapers.fetch_add(1, Ordering::Relaxed);
        standby.calls += 1;
        self.called.notify_all();
        true
    }

    /// Wakes every thread on standby to look at `ended` again.
    pub(crate) fn wake_all(&self) {
        // Under the lock: a thread between its `ended()` and its wait
        // cannot miss it.
        let _standby = lock(&self.standby);
        self.called.notify_all();
    }

    /// Threads holding or waiting for the reaping lock.
    pub(crate) fn reapers(&self) -> usize {
        self.reapers.load(Ordering::Relaxed)
    }

    /// Threads of the queue.
    pub(crate) fn threads(&self) -> usize {
        self.threads.load(Ordering::Relaxed)
    }
}

/// Loom models of the crew's races, run by `.ci/run` with the shares'
/// (`RUSTFLAGS="--cfg loom --cfg lockref_loom --cfg crossbeam_loom"`).
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;
    use loom::thread;

    /// A crew of two threads, both answering (neither reaps).
    fn two_answering() -> Arc<Crew> {
        let crew = Arc::new(Crew::default());
        for _ in 0..2 {
            crew.join();
            crew.took();
        }
        crew
    }

    /// A thread that ends its answer (reaps again or stands by) races the
    /// watchdog calling back the one thread on standby: after both, the
    /// reaper count is the number of threads that will reap, at least
    /// one.
    #[test]
    fn a_called_back_thread_races_one_that_ends_its_answer() {
        loom::model(|| {
            // One will go on answering, one is about to stand by.
            let crew = two_answering();
            let ended = Arc::new(AtomicBool::new(false));
            let standing = {
                let (crew, ended) = (crew.clone(), ended.clone());
                thread::spawn(move || crew.stand_by(|| ended.load(Ordering::Relaxed)))
            };
            let answering = {
                let crew = crew.clone();
                thread::spawn(move || crew.reap_again())
            };
            // The watchdog: the queue had no reaper; it calls the standby
            // thread once it waits.
            while !crew.call() {
                thread::yield_now();
            }
            let answerer_reaps = answering.join().unwrap();
            let called = standing.join().unwrap();
            assert!(called, "the call reached the thread on standby");
            let reaping = usize::from(answerer_reaps) + usize::from(called);
            assert_eq!(crew.reapers(), reaping, "each counted reaper reaps");
        });
    }

    /// Two threads end their answers at once with no reaper: exactly one
    /// reaps again, the other stands by (and so is never lost: the one
    /// that reaps is counted).
    #[test]
    fn two_answers_end_at_once_with_no_reaper() {
        loom::model(|| {
            let crew = two_answering();
            let sides: Vec<_> = (0..2)
                .map(|_| {
                    let crew = crew.clone();
                    thread::spawn(move || crew.reap_again())
                })
                .collect();
            let reaping = sides
                .into_iter()
                .map(|s| usize::from(s.join().unwrap()))
                .sum::<usize>();
            assert_eq!(reaping, 1, "one reaps again");
            assert_eq!(crew.reapers(), 1);
        });
    }
}
