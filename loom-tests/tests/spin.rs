//! Loom models of the lock with [`Spin`], the only park of a `no_std`
//! build on bare metal: its waiters spin (under loom, yield) until the
//! lock is free, and its unlock is one releasing `fetch_and`, which never
//! looks for sleepers. The same models run without loom, with no `std` in
//! the build, under ThreadSanitizer (`nostd-tests/`).
#![cfg(loom)]

use lockref::park::Spin;
use lockref::policy::KernelRetry;
use lockref::{CasWord, LockRef, PutOrLock};
use lockref_loom_tests::{bump, model, two_holders_take_turns};
use loom::sync::Arc;
use loom::thread;

type SpinWord = CasWord<KernelRetry, Spin>;

/// Two threads take the lock in turn: the unlock's Release and the lock's
/// Acquire order one holder's writes before the next's. (The mutant whose
/// `Spin` unlock is `Relaxed` fails this: the next holder's read races the
/// previous holder's write.)
#[test]
fn spin_holders_take_turns() {
    model(two_holders_take_turns::<SpinWord>);
}

/// Lockless count traffic beside a held lock: a get waits for (or falls
/// back to) the lock and lands after the unlock, never under it; the
/// holder's writes are seen by the next holder.
#[test]
fn spin_lockless_traffic_beside_a_holder() {
    model(|| {
        let r = Arc::new(LockRef::with_raw(0_u32, SpinWord::new()));
        let traffic = {
            let r = r.clone();
            thread::spawn(move || {
                r.get();
                if let PutOrLock::Locked(mut g) = r.put_or_lock() {
                    g.decrement().expect("the reference just taken");
                }
            })
        };
        bump(&r);
        traffic.join().unwrap();
        assert_eq!(*r.lock(), 1);
        assert_eq!(r.count(), Some(1));
    });
}
