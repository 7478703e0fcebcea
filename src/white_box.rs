//! White-box hooks into the ticket lock, for the crate's unit tests and
//! loom models only (`cfg(test)` or `--cfg lockref_loom`): they reach
//! states (the ticket wrap, the ticket cap) that would otherwise take 65 536
//! lock cycles or threads. Not part of the API.

use crate::lockref::LockRef;
use crate::policy::Policy;
use crate::raw::RawLockRef;

impl<T, P: Policy> LockRef<T, P> {
    /// A lockref whose next lock ticket is `ticket`, for tests and loom
    /// models of the 16-bit ticket wrap. Not part of the API.
    #[cfg(any(test, lockref_loom))]
    #[doc(hidden)]
    pub fn at_ticket(data: T, count: i32, ticket: u16) -> Self {
        Self::from_raw(RawLockRef::at_ticket(count, ticket), data)
    }

    /// `(owner, next)` of the ticket lock now: white-box tests and loom
    /// models of the ticket cap. Not part of the API.
    #[cfg(any(test, lockref_loom))]
    #[doc(hidden)]
    pub fn ticket_state(&self) -> (u16, u16) {
        self.raw.ticket_state()
    }

    /// Draws `n` tickets for waiters that never come, to reach the ticket
    /// cap without 65 535 threads. Not part of the API.
    #[cfg(any(test, lockref_loom))]
    #[doc(hidden)]
    pub fn draw_tickets(&self, n: u16) {
        self.raw.draw_tickets(n);
    }

    /// Serves `n` tickets drawn by [`draw_tickets`](Self::draw_tickets)
    /// (the lock must be held by them). Not part of the API.
    #[cfg(any(test, lockref_loom))]
    #[doc(hidden)]
    pub fn return_tickets(&self, n: u16) {
        self.raw.return_tickets(n);
    }
}
