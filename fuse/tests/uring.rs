//! FUSE over io_uring (`MountConfig::io_uring`, `src/uring/`) mounted for
//! real: requests answered through the rings, counted exactly; kernel
//! passthrough through them; a queue whose thread a slow request holds
//! gets another; and `/dev/fuse` where the kernel offers no rings.
//!
//! They need the fuse module's `enable_uring` (Linux 6.14+), which is off
//! by default and which a test run must not leave changed: so they are
//! ignored, with that reason in the run's result, and run with
//! `-- --include-ignored` where it is on (`.ci/run` turns it on for them,
//! and back); run so without the rings, each fails saying why. The rest
//! of the mount tests run over rings too with
//! `LOCKREF_FUSE_TEST_IO_URING=1`.

use std::fs;
use std::io::Read;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use lockref_fuse::{InodeTable, LockrefTable, Passthrough, VirtiofsdTable};

mod common;
use common::*;

const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";

/// Why the rings cannot be tested here, if they cannot.
fn cannot_use_rings() -> Option<String> {
    if let Some(why) = cannot_mount() {
        return Some(why.into());
    }
    match fs::read_to_string(ENABLE_URING) {
        Ok(v) if v.trim() == "Y" => None,
        Ok(_) => Some(format!("{ENABLE_URING} is off")),
        Err(e) => Some(format!("{ENABLE_URING}: {e} (a kernel before 6.14?)")),
    }
}

/// Fails the calling test, saying why, where the rings cannot be used
/// (the tests are ignored unless asked for).
macro_rules! require_rings {
    () => {
        if let Some(why) = super::cannot_use_rings() {
            panic!("FUSE over io_uring cannot be used here: {why}");
        }
    };
}

fn over_rings<T: InodeTable>(threads: usize) -> Mount<T> {
    Mount::<T>::made_with(threads, true, true, |source| {
        Passthrough::<T>::new(source).unwrap()
    })
}

/// Every request after `INIT` but `FORGET` comes through a ring: 50
/// failed lookups of new names are 50 ring requests, and again they are
/// none (the kernel keeps the negative entries).
fn every_lookup_comes_through_a_ring<T: InodeTable>() {
    let m = over_rings::<T>(4);
    let missing = |i: usize| m.at(&format!("missing-{i}"));
    let _ = fs::metadata(missing(0));
    let (rings, lookups) = (m.ring_requests(), m.fs.lookups());
    for i in 1..=50 {
        assert!(fs::metadata(missing(i)).is_err());
    }
    assert_eq!(m.fs.lookups() - lookups, 50, "a LOOKUP per new name");
    assert_eq!(m.ring_requests() - rings, 50, "each through a ring");
    for i in 1..=50 {
        assert!(fs::metadata(missing(i)).is_err());
    }
    assert_eq!(
        m.ring_requests() - rings,
        50,
        "none again: negative entries"
    );
    let (registered, made) = m.ring_entries();
    assert!(made > 0);
    assert_eq!(registered, made, "every entry's registration went through");
    m.unmount();
}

/// An open answered on a ring gets its kernel passthrough backing (on
/// the server's own device): the file's reads never reach the server.
fn reads_stay_in_the_kernel_over_rings<T: InodeTable>() {
    let m = over_rings::<T>(4);
    let data: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
    fs::write(m.host("big"), &data).unwrap();
    let rings = m.ring_requests();
    let mut read = Vec::new();
    fs::File::open(m.at("big"))
        .unwrap()
        .read_to_end(&mut read)
        .unwrap();
    assert!(read == data, "the file read back whole");
    assert!(
        m.ring_requests() > rings,
        "its lookup and open came by ring"
    );
    if m.fs.kernel_passthrough() {
        assert_eq!(m.fs.reads(), 0, "no READ reached the server");
    }
    fs::write(m.at("written"), &data[..1 << 20]).unwrap();
    assert_eq!(fs::read(m.host("written")).unwrap(), &data[..1 << 20]);
    if m.fs.kernel_passthrough() {
        assert_eq!(m.fs.writes(), 0, "no WRITE reached the server");
    }
    wait_for_releases(&m);
    assert_eq!(m.fs.open_handles(), 0);
    m.unmount();
}

/// A request the host is slow to answer holds its CPU's queue thread
/// (held in the server here), and another request from that CPU comes to
/// the same queue: the watchdog gives the queue another thread, which
/// serves it while the first is still held.
fn a_held_queue_gets_another_thread<T: InodeTable>() {
    let m = over_rings::<T>(4);
    fs::write(m.host("slow"), "slow").unwrap();
    fs::write(m.host("quick"), "quick").unwrap();
    let release = hold_lookups_of(&m.fs, 1000);
    // User 1000's lookup, made on CPU 0: held on queue 0's thread.
    let mut held = as_user(1000, "taskset")
        .args(["-c", "0", "stat"])
        .arg(m.at("slow"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let limit = Duration::from_secs(30);
    assert!(m.fs.wait_until_held(1, limit), "the lookup never came");
    // Root's read, made on CPU 0 too: queue 0 again.
    let (tx, rx) = mpsc::channel();
    let path = m.at("quick");
    let reader = std::thread::spawn(move || {
        let mut cpu0 = nix::sched::CpuSet::new();
        cpu0.set(0).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &cpu0).unwrap();
        tx.send(fs::read(path)).unwrap();
    });
    let read = rx.recv_timeout(limit);
    m.fs.release_held();
    assert_eq!(
        read.expect("root's read served while queue 0's thread is held")
            .unwrap(),
        b"quick"
    );
    reader.join().unwrap();
    assert!(held.wait().unwrap().success(), "the held lookup ended well");
    drop(release);
    m.unmount();
}

/// Where the kernel offers no rings (`enable_uring` off at the mount),
/// the mount asked for them is served by `/dev/fuse`, as without.
fn without_rings_dev_fuse_serves<T: InodeTable>() {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = fs::write(ENABLE_URING, "Y");
        }
    }
    let _restore = Restore;
    fs::write(ENABLE_URING, "N").unwrap();
    let m = over_rings::<T>(4);
    fs::write(m.host("f"), "served").unwrap();
    assert_eq!(fs::read(m.at("f")).unwrap(), b"served");
    assert_eq!(m.ring_requests(), 0, "no ring");
    drop(_restore);
    // The mount's INIT decided: still no ring.
    assert_eq!(fs::read(m.at("f")).unwrap(), b"served");
    assert_eq!(m.ring_requests(), 0);
    m.unmount_served_by_dev_fuse();
}

macro_rules! on_both_tables_with_rings {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            // One at a time: one of them turns `enable_uring` off for a
            // while, and they count descriptors and requests.
            #[test]
            #[ignore = "needs the fuse module's enable_uring on: run with -- --include-ignored"]
            fn lockref() {
                let _serial = super::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
                require_rings!();
                super::$name::<super::LockrefTable>();
            }

            #[test]
            #[ignore = "needs the fuse module's enable_uring on: run with -- --include-ignored"]
            fn virtiofsd() {
                let _serial = super::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
                require_rings!();
                super::$name::<super::VirtiofsdTable>();
            }
        }
    )+};
}

on_both_tables_with_rings!(
    every_lookup_comes_through_a_ring,
    reads_stay_in_the_kernel_over_rings,
    a_held_queue_gets_another_thread,
    without_rings_dev_fuse_serves,
);
