//! White-box hooks into the lock, for the crate's unit tests and loom
//! models (`--cfg lockref_white_box`): the state of the lock half, which
//! the API does not show. Not part of the API.

use crate::park::Park;
use crate::raw::policy::Policy;
use crate::raw::CasWord;
use crate::LockRef;

impl<T, P: Policy, K: Park> LockRef<T, CasWord<P, K>> {
    /// Whether the lock reads held now. Not part of the API.
    #[doc(hidden)]
    pub fn lock_is_held(&self) -> bool {
        self.raw().lock_is_held()
    }

    /// Whether the lock half flags a sleeper now (a waiter sleeps, or is
    /// about to). Not part of the API.
    #[doc(hidden)]
    pub fn flags_a_sleeper(&self) -> bool {
        self.raw().flags_a_sleeper()
    }
}
