//! The one place that names atomics, locks and thread-locals: loom's under
//! `cfg(loom)`, so the models explore the real code; std's otherwise.

#[cfg(loom)]
pub(crate) use loom::{
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    sync::{Arc, Mutex, MutexGuard},
    thread_local,
};
#[cfg(not(loom))]
pub(crate) use std::{
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    sync::{Arc, Mutex, MutexGuard},
    thread_local,
};

/// Locks `m`, ignoring poisoning: every critical section of the table
/// leaves its data consistent before anything that can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
