//! [`LoomPark`]: under `--cfg lockref_loom`, lock waiters sleep on a queue
//! of loom's own (a mutex and a condition variable), so that a model
//! explores every order of a waiter going to sleep and an unlock waking
//! it. Every other unpark asks for fairness, so the hand-off is explored
//! too.

use std::vec::Vec;

use loom::sync::{Condvar, Mutex};

use super::{Park, Parked, Unparked};

/// The sleepers: `(key, ticket)` in arrival order, and the wakes not yet
/// seen by their sleepers: `(ticket, handed off)`.
struct Queue {
    sleepers: Vec<(usize, u64)>,
    woken: Vec<(u64, bool)>,
    next_ticket: u64,
    unparks: u64,
}

loom::lazy_static! {
    static ref QUEUE: Mutex<Queue> = Mutex::new(Queue {
        sleepers: Vec::new(),
        woken: Vec::new(),
        next_ticket: 0,
        unparks: 0,
    });
    static ref WAKE: Condvar = Condvar::new();
}

/// Sleeps through loom (the default under `--cfg lockref_loom`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LoomPark;

// SAFETY: the check and the queueing are under the queue's mutex, as are
// `unpark_one`'s dequeue, its callback and its record of the wake; a
// sleeper returns only once its wake is recorded, with its hand-off.
unsafe impl Park for LoomPark {
    const SLEEPS: bool = true;

    fn park(key: usize, still_wait: impl FnOnce() -> bool) -> Parked {
        let mut queue = QUEUE.lock().unwrap();
        if !still_wait() {
            return Parked::Skipped;
        }
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.sleepers.push((key, ticket));
        loop {
            if let Some(at) = queue.woken.iter().position(|&(t, _)| t == ticket) {
                let (_, handed) = queue.woken.swap_remove(at);
                return if handed {
                    Parked::HandedOff
                } else {
                    Parked::Woken
                };
            }
            queue = WAKE.wait(queue).unwrap();
        }
    }

    fn unpark_one(key: usize, callback: impl FnOnce(Unparked) -> bool) {
        let mut queue = QUEUE.lock().unwrap();
        queue.unparks += 1;
        let found = queue.sleepers.iter().position(|&(k, _)| k == key);
        let ticket = found.map(|at| queue.sleepers.remove(at).1);
        let more = queue.sleepers.iter().any(|&(k, _)| k == key);
        let handed = callback(Unparked {
            woke: ticket.is_some(),
            more,
            be_fair: queue.unparks % 2 == 0,
        });
        if let Some(ticket) = ticket {
            queue.woken.push((ticket, handed));
            WAKE.notify_all();
        }
    }
}
