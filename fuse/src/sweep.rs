//! [`Sweeper`]: a thread that closes the server's cached descriptors of
//! files deleted on the host behind its back.
//!
//! A descriptor the cache holds keeps its host file allocated: an inode
//! the kernel looked up (or the table keeps after the kernel forgot it,
//! `lockref_inodes.rs`) keeps the cached descriptor its lookup opened,
//! and a file deleted on the host directly, not through the mount (which
//! marks it gone), kept its blocks while the server kept its inode: for
//! the server's life if nothing evicted it, and another user's `stat`
//! was enough to make it so for someone else's file (point 4 of the third
//! audit: a tree of 3,814 deleted files stayed allocated after
//! `drop_caches`). Every [`SWEEP_EVERY`], the sweeper `fstat`s each cached
//! descriptor and evicts those whose file has no link left
//! (`Descriptors::close_deleted`): such a file's blocks are freed within
//! two sweeps of its deletion (4 s), unless a request is using the
//! descriptor at that moment (it closes when the request ends) or the
//! descriptor cannot be evicted (a pinned one: its inode is never kept, so
//! it closes at the kernel's `FORGET`). An inode still known to the kernel
//! is reopened by its handle at its next request, as after any eviction
//! (`ESTALE` once the host has freed it).
//!
//! Each sweep also drops the cache's entries of inodes that died (each
//! held its slot's memory, a `Weak`, until the clock's hand reached it,
//! which happens only past the budget), and after a thousand of them
//! gives the allocator's free pages back (`trim.rs`): after a mass
//! `FORGET`, 1.6 MiB more of 40,000 inodes' memory returns
//! (`tests/memory.rs`'s process, 22.9 to 21.3 MiB).
//!
//! The sweep runs on its own thread, never on a request's: one `fstat` per
//! cached descriptor every two seconds (10-12 ms of one CPU for 10,000
//! descriptors, the default budget under a hard limit of 20,000, on the
//! 2-CPU AMD EPYC dev VM: about 0.5% of one CPU), and nothing on the
//! request paths.

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::descriptors::Descriptors;

/// Between two sweeps.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// The sweeping thread, stopped and joined when dropped (with the mount
/// that started it, so nothing of the server outlives its unmount there).
pub(crate) struct Sweeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Sweeper {
    /// Sweeps `descriptors` every [`SWEEP_EVERY`] while they live.
    pub(crate) fn start(descriptors: Weak<Descriptors>) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lockref-fuse-sweep".into())
            .spawn(move || {
                let (lock, wake) = &*stopped;
                let mut stop = lock.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    stop = wake
                        .wait_timeout(stop, SWEEP_EVERY)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    if *stop {
                        return;
                    }
                    let Some(descriptors) = descriptors.upgrade() else {
                        return;
                    };
                    descriptors.close_deleted();
                }
            })?;
        Ok(Sweeper {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
