//! A request served in its user's turn (`shares/`), on either transport:
//! at once on the thread that read it while its user is within its share
//! of the serving threads, else later, on the thread that ends a turn
//! when this user's comes.

use crate::fs::{Passthrough, Waiting};
use crate::shares::Turn;
use crate::table::InodeTable;

/// Serves a request of user `uid` (held in `request`): `now` at once on
/// this thread if the user is within its share; otherwise the request
/// `later` makes of it waits,
/// and is served on whichever thread its turn comes to (this one, if it
/// came already). Either way, this thread then serves the requests
/// waiting that the shares hand it, before it goes back to reading.
pub(crate) fn in_turn<T: InodeTable, R>(
    fs: &Passthrough<T>,
    uid: u32,
    request: R,
    now: impl FnOnce(R),
    later: impl FnOnce(R) -> Waiting<T>,
) {
    match fs.shares.admit(uid) {
        Some(turn) => {
            now(request);
            serve_waiting(fs, turn);
        }
        None => {
            if let Some((turn, request)) = fs.shares.wait(uid, later(request)) {
                request(fs);
                serve_waiting(fs, turn);
            }
        }
    }
}

/// Ends `turn`, then serves the requests waiting that the shares hand this
/// thread, one after the other.
fn serve_waiting<T: InodeTable>(fs: &Passthrough<T>, turn: Turn<'_, Waiting<T>>) {
    let mut next = turn.next();
    while let Some((turn, request)) = next {
        request(fs);
        next = turn.next();
    }
}
