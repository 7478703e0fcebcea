//! The wire format's tests: sizes, offsets and bounds as the kernel's.

use std::ffi::OsStr;
use std::time::{Duration, UNIX_EPOCH};

use fuser::{FileAttr, FileType, FopenFlags, Generation, INodeNo};

use super::reply::seconds;
use super::*;

fn attr(ino: u64) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: 5,
        blocks: 1,
        atime: UNIX_EPOCH + Duration::new(7, 8),
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: FileType::Directory,
        perm: 0o755,
        nlink: 2,
        uid: 1000,
        gid: 100,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn header() -> Box<[u8; HEADER_LEN]> {
    Box::new([0u8; HEADER_LEN])
}

/// Each reply is the kernel's struct size exactly: the kernel refuses
/// a fixed-size reply of any other length (`fuse_copy_out_args`).
#[test]
fn replies_have_the_kernels_sizes() {
    let mut h = header();
    let mut p = vec![0u8; 4096];
    let sizes: Vec<usize> = [
        |r: &mut Reply<'_>| r.put_entry(Duration::from_secs(1), &attr(9), Generation(0)),
        |r: &mut Reply<'_>| r.put_attr_out(Duration::from_secs(1), &attr(9)),
        |r: &mut Reply<'_>| r.put_open(3, FopenFlags::empty(), None),
        |r: &mut Reply<'_>| r.put_attr(&attr(9)),
    ]
    .iter()
    .map(|put| {
        let mut r = Reply::new(&mut h, &mut p);
        put(&mut r).unwrap();
        r.len
    })
    .collect();
    assert_eq!(sizes, [128, 104, 16, 88]);
}

#[test]
fn an_entry_carries_the_node_id_the_mode_and_the_timeout() {
    let mut h = header();
    let mut p = vec![0u8; 4096];
    let mut r = Reply::new(&mut h, &mut p);
    r.put_entry(Duration::new(2, 5), &attr(42), Generation(0))
        .unwrap();
    r.finish(77, 0);
    assert_eq!(u64_at(&p, 0), 42, "node id");
    assert_eq!((u64_at(&p, 16), u32_at(&p, 32)), (2, 5), "entry timeout");
    assert_eq!(u64_at(&p, 40), 42, "attr.ino");
    assert_eq!(u64_at(&p, 40 + 24), 7, "atime seconds");
    assert_eq!(u32_at(&p, 40 + 48), 8, "atime nanoseconds");
    assert_eq!(u32_at(&p, 40 + 60), libc::S_IFDIR | 0o755, "mode");
    assert_eq!(u32_at(&h[..], 0), 16 + 128, "out header length");
    assert_eq!(u64_at(&h[..], 8), 77, "unique");
    assert_eq!(u32_at(&h[..], PAYLOAD_SZ), 128, "payload_sz");
}

#[test]
fn an_error_reply_carries_the_negated_errno_and_no_payload() {
    let mut h = header();
    let mut p = vec![0u8; 64];
    let mut r = Reply::new(&mut h, &mut p);
    r.put_u64(1).unwrap();
    r.finish(5, libc::ENOENT);
    assert_eq!(u32_at(&h[..], 4) as i32, -libc::ENOENT);
    assert_eq!(u32_at(&h[..], PAYLOAD_SZ), 0);
    assert_eq!(u32_at(&h[..], 0), 16);
}

#[test]
fn dirents_are_padded_to_eight_and_stop_at_the_page() {
    let mut h = header();
    let mut p = vec![0u8; 4096];
    let mut r = Reply::new(&mut h, &mut p);
    let kind = FileType::RegularFile;
    assert!(r
        .put_dirent(64, INodeNo(1), 1, kind, OsStr::new("a"))
        .unwrap());
    assert_eq!(r.len, 32);
    assert!(r
        .put_dirent(64, INodeNo(2), 2, kind, OsStr::new("12345678"))
        .unwrap());
    assert_eq!(r.len, 64);
    assert!(
        !r.put_dirent(64, INodeNo(3), 3, kind, OsStr::new("b"))
            .unwrap(),
        "full"
    );
    assert_eq!(r.len, 64, "nothing written past the page");
    assert_eq!(u32_at(&p, 16), 1, "namelen");
    assert_eq!(u32_at(&p, 20), libc::S_IFREG >> 12, "type");
    assert_eq!(&p[24..32], b"a\0\0\0\0\0\0\0");
    let mut r = Reply::new(&mut h, &mut p);
    let at = attr(4);
    let plus = |r: &mut Reply<'_>| {
        r.put_direntplus(200, Duration::ZERO, &at, Generation(0), 9, OsStr::new("d"))
    };
    assert!(plus(&mut r).unwrap());
    assert_eq!(r.len, 128 + 32);
    assert!(!plus(&mut r).unwrap(), "a second does not fit in 200");
}

#[test]
fn a_reply_past_the_payload_buffer_is_refused() {
    let mut h = header();
    let mut p = vec![0u8; 100];
    let mut r = Reply::new(&mut h, &mut p);
    assert_eq!(r.put_attr_out(Duration::ZERO, &attr(1)), Err(Overflow));
}

#[test]
fn requests_are_read_within_what_the_kernel_filled() {
    let mut h = header();
    h[4..8].copy_from_slice(&op::LOOKUP.to_ne_bytes());
    h[8..16].copy_from_slice(&33u64.to_ne_bytes());
    h[16..24].copy_from_slice(&1u64.to_ne_bytes());
    h[24..28].copy_from_slice(&1000u32.to_ne_bytes());
    h[COMMIT_ID..COMMIT_ID + 8].copy_from_slice(&33u64.to_ne_bytes());
    let payload = b"name\0rest\0garbage";
    h[PAYLOAD_SZ..PAYLOAD_SZ + 4].copy_from_slice(&10u32.to_ne_bytes());
    let req = Request::new(&h, payload).unwrap();
    let in_header = req.in_header();
    assert_eq!(
        (
            in_header.opcode,
            in_header.unique,
            in_header.nodeid,
            in_header.uid
        ),
        (op::LOOKUP, 33, 1, 1000)
    );
    assert_eq!(Request::commit_id_of(&h), 33);
    let (first, rest) = req.payload().name().unwrap();
    assert_eq!(first, "name");
    let (second, rest) = rest.name().unwrap();
    assert_eq!(second, "rest");
    assert_eq!(
        rest.name().err(),
        Some(Malformed),
        "no NUL within the filled part"
    );
    h[PAYLOAD_SZ..PAYLOAD_SZ + 4].copy_from_slice(&100u32.to_ne_bytes());
    assert!(Request::new(&h, payload).is_err(), "filled past the buffer");
}

#[test]
fn times_read_and_written_as_the_kernel_and_fuser_do() {
    assert_eq!(seconds(time(7, 8)), (7, 8));
    let before = UNIX_EPOCH - Duration::new(3, 250_000_000);
    // Written as the kernel's pair: -4 s, then 0.75 s forward.
    assert_eq!(seconds(before), ((-4i64) as u64, 750_000_000));
    // Read as fuser reads the pair (`attrs.rs` takes it back).
    assert_eq!(
        time((-4i64) as u64, 750_000_000),
        UNIX_EPOCH - Duration::new(4, 750_000_000)
    );
    assert_eq!(command(5, 2)[8..18], [5, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
}
