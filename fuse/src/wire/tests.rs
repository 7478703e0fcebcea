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

fn entry(node: u64, ino: u64) -> Entry {
    Entry {
        node,
        attr: attr(ino),
    }
}

fn header() -> Box<[u8; HEADER_LEN]> {
    Box::new([0u8; HEADER_LEN])
}

/// Each reply is the kernel's struct size exactly: the kernel refuses
/// a fixed-size reply of any other length (`fuse_copy_out_args`).
#[test]
fn replies_have_the_kernels_sizes() {
    let mut p = vec![0u8; 4096];
    let sizes: Vec<usize> = [
        |r: &mut Reply<'_>| r.put_entry(Duration::from_secs(1), &entry(5, 9), Generation(0)),
        |r: &mut Reply<'_>| r.put_attr_out(Duration::from_secs(1), &attr(9)),
        |r: &mut Reply<'_>| r.put_open(3, FopenFlags::empty(), None),
        |r: &mut Reply<'_>| r.put_attr(&attr(9)),
    ]
    .iter()
    .map(|put| {
        let mut r = Reply::new(&mut p);
        put(&mut r).unwrap();
        r.len
    })
    .collect();
    assert_eq!(sizes, [128, 104, 16, 88]);
}

#[test]
fn an_entry_carries_the_node_id_the_inode_number_the_mode_and_the_timeout() {
    let mut h = header();
    let mut p = vec![0u8; 4096];
    let mut r = Reply::new(&mut p);
    r.put_entry(Duration::new(2, 5), &entry(7, 42), Generation(0))
        .unwrap();
    r.finish(77, 0).into_ring(&mut h);
    assert_eq!(u64_at(&p, 0), 7, "node id: the table's, not the number");
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
    let mut r = Reply::new(&mut p);
    r.put_u64(1).unwrap();
    r.finish(5, libc::ENOENT).into_ring(&mut h);
    assert_eq!(u32_at(&h[..], 4) as i32, -libc::ENOENT);
    assert_eq!(u32_at(&h[..], PAYLOAD_SZ), 0);
    assert_eq!(u32_at(&h[..], 0), 16);
}

#[test]
fn dirents_are_padded_to_eight_and_stop_at_the_page() {
    let mut p = vec![0u8; 4096];
    let mut r = Reply::new(&mut p);
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
    let mut r = Reply::new(&mut p);
    let at = entry(3, 4);
    let plus = |r: &mut Reply<'_>| {
        r.put_direntplus(200, Duration::ZERO, &at, Generation(0), 9, OsStr::new("d"))
    };
    assert!(plus(&mut r).unwrap());
    assert_eq!(r.len, 128 + 32);
    assert!(!plus(&mut r).unwrap(), "a second does not fit in 200");
    assert_eq!(u64_at(&p, 0), 3, "the entry's node id");
    assert_eq!(u64_at(&p, 128), 4, "the dirent's inode number");
}

#[test]
fn a_reply_past_the_payload_buffer_is_refused() {
    let mut p = vec![0u8; 100];
    let mut r = Reply::new(&mut p);
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
    let req = Request::from_ring(&h, payload).unwrap();
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
    assert!(
        Request::from_ring(&h, payload).is_err(),
        "filled past the buffer"
    );
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

/// A `/dev/fuse` read: the header, the operation's fixed arguments, the
/// payload, one after the other; the header's length must be what was
/// read, and the fixed arguments must be there whole.
#[test]
fn a_device_request_is_split_by_its_operations_arguments() {
    let mut read = vec![0u8; IN_HEADER_LEN];
    read[4..8].copy_from_slice(&op::MKDIR.to_ne_bytes());
    read[8..16].copy_from_slice(&9u64.to_ne_bytes());
    read[24..28].copy_from_slice(&1000u32.to_ne_bytes());
    // `fuse_mkdir_in`: mode, umask.
    read.extend_from_slice(&0o755u32.to_ne_bytes());
    read.extend_from_slice(&0o022u32.to_ne_bytes());
    read.extend_from_slice(b"dir\0");
    let len = u32::try_from(read.len()).unwrap();
    read[0..4].copy_from_slice(&len.to_ne_bytes());
    let req = Request::from_device(&read).unwrap();
    assert_eq!((req.in_header().unique, req.in_header().uid), (9, 1000));
    assert_eq!((req.op_in().u32(0), req.op_in().u32(4)), (0o755, 0o022));
    assert_eq!(req.payload().name().unwrap().0, "dir");
    assert_eq!(unique_of_device(&read), Some(9));
    assert!(
        Request::from_device(&read[..read.len() - 1]).is_err(),
        "shorter than its header says"
    );
    let mut short = read[..IN_HEADER_LEN + 4].to_vec();
    let short_len = u32::try_from(short.len()).unwrap();
    short[0..4].copy_from_slice(&short_len.to_ne_bytes());
    assert_eq!(
        Request::from_device(&short).err(),
        Some(Malformed),
        "fixed arguments cut short"
    );
    assert!(Request::from_device(&read[..IN_HEADER_LEN - 1]).is_err());
    assert_eq!(unique_of_device(&read[..8]), None);
}

/// A field past the fixed arguments reads as 0, never out of bounds.
#[test]
fn a_field_past_the_arguments_reads_as_zero() {
    let mut read = vec![0u8; IN_HEADER_LEN];
    read[4..8].copy_from_slice(&op::LOOKUP.to_ne_bytes());
    read.extend_from_slice(b"a\0");
    let len = u32::try_from(read.len()).unwrap();
    read[0..4].copy_from_slice(&len.to_ne_bytes());
    let req = Request::from_device(&read).unwrap();
    assert_eq!(req.op_in().u64(80), 0);
}

/// A read into the reply takes at most the room left and what was asked,
/// and the reply is as long as what the read said it wrote.
#[test]
fn a_read_fills_the_reply_within_its_room() {
    let mut p = vec![7u8; 64];
    let mut r = Reply::new(&mut p);
    r.put_u64(1).unwrap();
    let mut offered = 0;
    r.fill(1000, |buf| {
        offered = buf.len();
        buf[..5].copy_from_slice(b"hello");
        Ok::<_, ()>(5)
    })
    .unwrap();
    assert_eq!((offered, r.len), (56, 13), "the room, then what was read");
    r.fill(2, |buf| Ok::<_, ()>(buf.len())).unwrap();
    assert_eq!(r.len, 15, "no more than asked");
    assert_eq!(r.fill(4, |_| Err("host")), Err("host"));
    assert_eq!(r.len, 15, "a failed read adds nothing");
}
