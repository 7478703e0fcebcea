//! The descriptor table grown before the first request
//! (`mount::reserve_descriptor_table`): past the budget's descriptor
//! numbers, so that no serving thread waits for the kernel to grow it
//! (an RCU grace period each time it doubles, in a process of several
//! threads). Its own test binary: the table is the process's, and it is
//! never shrunk.

use std::fs;

/// `FDSize` of this process: the descriptor numbers its table holds.
fn table_size() -> usize {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("FDSize:")).unwrap();
    line["FDSize:".len()..].trim().parse().unwrap()
}

fn open_descriptors() -> usize {
    fs::read_dir("/proc/self/fd").unwrap().count()
}

/// One test: the table only grows, so the two steps must run in order.
#[test]
fn the_table_holds_the_number_asked_within_the_limit_and_nothing_is_left_open() {
    let limit = lockref_fuse::mount::raise_descriptor_limit().unwrap();
    let limit = usize::try_from(limit).unwrap();
    let before = table_size();
    let open = open_descriptors();
    // Past the table a fresh process starts with, within the limit.
    let asked = (4 * before).min(limit - 1);
    assert!(
        asked > before,
        "the limit ({limit}) leaves nothing to grow into"
    );
    let reserved = lockref_fuse::mount::reserve_descriptor_table(asked).unwrap();
    assert_eq!(reserved, asked);
    assert!(
        table_size() > asked,
        "FDSize {} after reserving {asked}",
        table_size()
    );
    assert_eq!(open_descriptors(), open, "the duplicate was not closed");

    // A number past the soft limit is held to it, not refused (the
    // kernel's `F_DUPFD` would say `EINVAL`).
    let reserved = lockref_fuse::mount::reserve_descriptor_table(usize::MAX).unwrap();
    assert_eq!(reserved, limit - 1);
    assert!(table_size() >= limit);
    assert_eq!(open_descriptors(), open, "the duplicate was not closed");
}
