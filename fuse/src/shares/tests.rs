//! The shares' unit tests.

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
    let alone = |s: &Shares<u32>| s.alone.counted();
    let (t1, t2) = (shares.admit(1).unwrap(), shares.admit(1).unwrap());
    assert_eq!(alone(&shares), Some((1, 2)));
    assert!(shares.state().users.is_empty(), "no lock taken");
    let t3 = shares.admit(2).expect("a second user within its share");
    assert_eq!(alone(&shares), None);
    {
        let state = shares.state();
        assert_eq!((state.users[&1].serving, state.users[&2].serving), (2, 1));
        assert_eq!(state.serving, 3);
    }
    drop((t1, t3));
    assert_eq!(alone(&shares), None, "a turn still counted under the lock");
    drop(t2);
    assert_eq!(alone(&shares), Some((0, 0)), "nobody counted: open again");
    assert_eq!(shares.state().serving, 0);
    let t = shares.admit(2).unwrap();
    assert_eq!(alone(&shares), Some((2, 1)));
    drop(t);
    assert_eq!(alone(&shares), Some((2, 0)));
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
