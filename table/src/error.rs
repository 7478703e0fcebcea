//! [`TableError`]: what the table refuses, with every count untouched.

use core::fmt;

/// A refused request on a protocol id (an untrusted peer's input). Nothing
/// changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableError {
    /// No live entry has this id: never handed out, or its entry is gone
    /// (ids are never reused).
    UnknownId(u64),
    /// The peer gave back more references than it was handed.
    MoreThanHeld {
        /// The id.
        id: u64,
        /// What the peer gave back.
        forget: u64,
        /// What it holds.
        held: u64,
    },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::UnknownId(id) => write!(f, "no entry has id {id}"),
            TableError::MoreThanHeld { id, forget, held } => write!(
                f,
                "forget of {forget} references to entry {id}, whose peer holds {held}: refused"
            ),
        }
    }
}

impl std::error::Error for TableError {}
