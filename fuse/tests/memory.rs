//! The server's memory after the kernel forgets many inodes (issue: memory
//! keeps its peak). What the forgotten inodes owned on the heap goes back
//! to the host (`trim.rs`: before, not a byte did), and the descriptor
//! cache's entries of the dead inodes leave with the sweeper's next two
//! sweeps (`sweep.rs`: before, each held its slot's memory until the
//! cache passed its budget); what stays, the table's type-stable slots,
//! is bounded by the most inodes held at once: a second round of as many
//! inodes reuses it.
//!
//! Its own test binary, with one test: the resident size measured is the
//! process's, and the server runs in this process, so nothing else may
//! run or have run beside it (a mount's buffers, once freed, are kept by
//! the C allocator and would blur the figures).

use std::fs;

use lockref_fuse::{InodeTable, LockrefTable};

mod common;
use common::*;

/// Inodes the kernel looks up, then forgets, in each round.
const INODES: usize = 40_000;

/// This process's resident size, in bytes (`VmRSS`).
fn resident() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// Looks up every file through the mount (an inode each in the table).
fn look_up_all<T: InodeTable>(m: &Mount<T>) {
    for i in 0..INODES {
        fs::metadata(m.at(&format!("d/f{i}"))).unwrap();
    }
}

#[test]
fn memory_freed_by_a_mass_forget_goes_back_to_the_host() {
    require_mount!();
    // The table that keeps no forgotten inode: every one dies, and what
    // it owned must go back. The server's table keeps up to
    // `KEEP_FORGOTTEN` of them (`tests/table.rs`,
    // `forgotten_inodes_are_kept_up_to_the_bound`): here, 8,192 of the
    // 40,000 kept 1.9 MiB (5% returned, not 14%).
    with_mount::<LockrefTable<0>>(|m| {
        fs::create_dir(m.host("d")).unwrap();
        for i in 0..INODES {
            fs::write(m.host(&format!("d/f{i}")), "").unwrap();
        }
        let start = resident();
        look_up_all(m);
        let peak = resident();
        assert!(m.forget_all(), "the kernel forgot every inode");
        let forgotten = resident();
        // The sweeper drops the descriptor cache's entries of the dead
        // inodes (each held its slot's memory) within two sweeps.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while m.fs.descriptor_stats().cached > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert_eq!(
            m.fs.descriptor_stats().cached,
            0,
            "the dead inodes' entries left the descriptor cache"
        );
        let swept = resident();
        look_up_all(m);
        let again = resident();
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let used = peak.saturating_sub(start);
        let returned = peak.saturating_sub(forgotten);
        eprintln!(
            "{INODES} inodes: {:.1} MiB at start, {:.1} MiB held ({:.0} bytes an inode), \
             {:.1} MiB after the forget ({:.0}% returned, {} trims), {:.1} MiB once swept \
             ({:.0}%), {:.1} MiB after as many again",
            mib(start),
            mib(peak),
            used as f64 / INODES as f64,
            mib(forgotten),
            100.0 * returned as f64 / used as f64,
            m.fs.memory_trims(),
            mib(swept),
            100.0 * peak.saturating_sub(swept) as f64 / used as f64,
            mib(again),
        );
        assert!(
            m.fs.memory_trims() > 0,
            "the allocator was asked to give pages back"
        );
        // The slots (256 bytes each, the most inodes held rounded up to a
        // chunk) stay; the heap the inodes owned, about a tenth of what
        // they used, goes back. Without the trims, none did (0%).
        assert!(
            returned * 20 >= used,
            "a twentieth of the {used} bytes the inodes used goes back once they are \
             forgotten: {returned} did"
        );
        assert!(
            again <= peak + used / 8,
            "as many inodes again reuse what the first took: {again} bytes against a peak \
             of {peak}"
        );
    });
}
