//! The one place that names atomics, locks and thread-locals: loom's under
//! `cfg(loom)`, so the models explore the real code; std's otherwise.

#[cfg(loom)]
pub(crate) use loom::{
    sync::atomic::{
        AtomicBool, AtomicIsize, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    },
    sync::RwLock,
    thread_local,
};
#[cfg(not(loom))]
pub(crate) use std::{
    sync::atomic::{
        AtomicBool, AtomicIsize, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    },
    sync::RwLock,
    thread_local,
};
