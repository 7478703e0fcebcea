//! The lock of a `no_std` build under contention, with no `std` anywhere
//! in the build graph (`cargo +nightly run -Zbuild-std=core`: not even a
//! prebuilt `std` is there to link by mistake). `park::Spin`, the default
//! park without `std` and the only one on bare metal, is compiled into
//! every `no_std` user's lock but never run by the main workspace's tests
//! (a dev-dependency turns `std` on there). Threads are POSIX threads from
//! the C library.
//!
//! Each check prints a line and the program exits non-zero on the first
//! failure. Under ThreadSanitizer (`-Zsanitizer=thread`), a data race
//! between two holders (an unlock that does not release, a lock that does
//! not acquire) is reported and fails the run.
#![no_std]
#![no_main]

use core::ffi::{c_int, c_void};
use core::ptr;

use lockref::park::{DefaultPark, Spin};
use lockref::policy::KernelRetry;
use lockref::{CasWord, LockRef, PutOrLock};

/// The lock of a `no_std` build: the default word, spinning waiters.
type SpinLockRef = LockRef<Counter, CasWord<KernelRetry, Spin>>;

// The default park of this build is `Spin`: no `std` in the graph.
const _: fn(DefaultPark) -> Spin = |park| park;

/// Data written only under the lock, in two plain fields that must agree:
/// a holder that raced another would see them differ, and the total
/// would come out short (and ThreadSanitizer reports the race).
struct Counter {
    value: u64,
    check: u64,
}

/// Threads and rounds: more threads than a CI machine has CPUs, so that a
/// holder is preempted while others spin.
const THREADS: usize = 6;
const ROUNDS: u64 = 20_000;

/// Writes `text` to standard output.
fn say(text: &str) {
    // SAFETY: a valid buffer of `text.len()` bytes.
    unsafe { libc::write(1, text.as_ptr().cast(), text.len()) };
}

/// Writes `n` in decimal.
fn say_number(mut n: u64) {
    let mut digits = [0_u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // SAFETY: ASCII digits.
    say(unsafe { core::str::from_utf8_unchecked(&digits[at..]) });
}

/// Reports a failed check and exits non-zero.
fn fail(what: &str) -> ! {
    say("nostd: FAILED: ");
    say(what);
    say("\n");
    // SAFETY: ends the process.
    unsafe { libc::exit(1) }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    fail("a panic")
}

/// One worker: `ROUNDS` times, takes the lock and bumps both fields
/// through a read and a write each (a race loses an update), and between
/// turns takes and gives back a reference locklessly.
extern "C" fn worker(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `main` passes the lockref, which outlives every worker.
    let r = unsafe { &*arg.cast::<SpinLockRef>() };
    for round in 0..ROUNDS {
        {
            let mut g = r.lock();
            let value = g.value;
            let check = g.check;
            if value != check {
                fail("two holders at once: the fields disagree");
            }
            core::hint::spin_loop();
            g.value = value + 1;
            g.check = check + 1;
        }
        if round % 4 == 0 {
            r.get();
            if let PutOrLock::Locked(mut g) = r.put_or_lock() {
                if g.decrement().is_err() {
                    fail("a reference taken could not be given back");
                }
            }
        }
    }
    ptr::null_mut()
}

/// Runs `THREADS` workers on one lock and checks the totals.
fn spin_lock_under_contention() {
    let r = SpinLockRef::with_raw(Counter { value: 0, check: 0 }, CasWord::new());
    let mut threads = [0 as libc::pthread_t; THREADS];
    for t in &mut threads {
        let arg = ptr::from_ref(&r).cast_mut().cast::<c_void>();
        // SAFETY: `t` is written by the call; `worker` has the C ABI and
        // `r` outlives the threads (joined below).
        if unsafe { libc::pthread_create(t, ptr::null(), worker, arg) } != 0 {
            fail("pthread_create");
        }
    }
    for t in threads {
        // SAFETY: a thread created above, joined once.
        if unsafe { libc::pthread_join(t, ptr::null_mut()) } != 0 {
            fail("pthread_join");
        }
    }
    let g = r.lock();
    let expected = THREADS as u64 * ROUNDS;
    if g.value != expected || g.check != expected {
        fail("updates lost under the lock");
    }
    drop(g);
    if r.count() != Some(1) {
        fail("the count moved");
    }
    say("nostd: park::Spin lock, ");
    say_number(THREADS as u64);
    say(" threads x ");
    say_number(ROUNDS);
    say(" rounds with lockless traffic beside: every update kept, the count exact\n");
}

#[no_mangle]
extern "C" fn main(_argc: c_int, _argv: *const *const u8) -> c_int {
    spin_lock_under_contention();
    0
}
