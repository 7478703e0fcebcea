//! White-box hooks into the ticket lock, for the crate's unit tests and
//! loom models only (`cfg(test)` or `--cfg lockref_white_box`, which
//! `loom-tests` sets and nothing else should): they reach
//! states (the ticket wrap, the ticket cap) that would otherwise take 65 536
//! lock cycles or threads. Not part of the API.

use crate::lockref::LockRef;
use crate::policy::Policy;
use crate::raw::CasWord;

impl<T, P: Policy> LockRef<T, CasWord<P>> {
    /// A lockref whose next lock ticket is `ticket`, for tests and loom
    /// models of the 16-bit ticket wrap. Not part of the API.
    #[doc(hidden)]
    pub fn at_ticket(data: T, count: u32, ticket: u16) -> Self {
        Self::with_raw(data, CasWord::at_ticket(count as i32, ticket))
    }

    /// `(owner, next)` of the ticket lock now: white-box tests and loom
    /// models of the ticket cap. Not part of the API.
    #[doc(hidden)]
    pub fn ticket_state(&self) -> (u16, u16) {
        self.raw().ticket_state()
    }

    /// Draws `n` tickets for waiters that never come, to reach the ticket
    /// cap without 65 535 threads. Not part of the API.
    #[doc(hidden)]
    pub fn draw_tickets(&self, n: u16) {
        self.raw().draw_tickets(n);
    }

    /// Serves `n` tickets drawn by [`draw_tickets`](Self::draw_tickets)
    /// (the lock must be held by them). Not part of the API.
    #[doc(hidden)]
    pub fn return_tickets(&self, n: u16) {
        self.raw().return_tickets(n);
    }
}
