//! Loom models of the shares' races, run by `.ci/run` with `RUSTFLAGS="--cfg
//! loom --cfg lockref_loom --cfg crossbeam_loom"` (the crate's table needs
//! the other two).

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
    assert!(
        matches!(shares.alone.counted(), Some((_, 0))),
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
