//! The inode tables (lockref's, the virtiofsd-style and the dashmap
//! baselines), without the kernel: lookups, forgets, handles, and
//! the kernel's input refused when it lies, with every count left as it
//! was.

use lockref_fuse::{
    DashmapTable, DescriptorSlot, FileHandleBytes, ForgetError, HostInode, InodeTable, Key,
    LockrefTable, VirtiofsdTable, KEEP_FORGOTTEN, ROOT_ID,
};

fn fd() -> HostInode {
    HostInode::Descriptor(std::fs::File::open("/").unwrap().into())
}

fn key(ino: u64) -> Key {
    Key {
        dev: 1,
        ino,
        birth: 0,
    }
}

fn table<T: InodeTable>() -> T {
    T::new(fd(), key(1))
}

fn lookups_and_forgets<T: InodeTable>() {
    let t = table::<T>();
    assert_eq!(t.inodes(), 1);
    assert!(t.get(ROOT_ID).is_some());
    let a = t.lookup(key(10), fd);
    assert_ne!(a, ROOT_ID);
    assert_eq!(t.lookup(key(10), fd), a, "one node id per host inode");
    assert_eq!(t.kernel_lookups(a), Some(2));
    let b = t.lookup(key(11), fd);
    assert_eq!(t.inodes(), 3);
    t.forget(a, 1).unwrap();
    assert_eq!(t.kernel_lookups(a), Some(1));
    t.forget(a, 1).unwrap();
    assert!(t.get(a).is_none(), "forgotten: gone");
    assert_eq!(t.inodes(), 2);
    // Looked up again: a new inode, named by the table (its node id may be
    // the first one's: the kernel forgot that).
    let a2 = t.lookup(key(10), fd);
    assert_eq!(t.get(a2).unwrap().key, key(10));
    assert_ne!(a2, b, "never a live inode's node id");
    t.forget(a2, 1).unwrap();
    t.forget(b, 1).unwrap();
    assert!(t.only_root());
}

#[test]
fn lookups_and_forgets_lockref() {
    lookups_and_forgets::<LockrefTable>();
}

#[test]
fn lookups_and_forgets_virtiofsd() {
    lookups_and_forgets::<VirtiofsdTable>();
}

#[test]
fn lookups_and_forgets_dashmap() {
    lookups_and_forgets::<DashmapTable>();
}

/// A FORGET of an unknown node id or of more than the kernel holds is
/// refused with a typed error and changes nothing; the inode stays usable.
fn lying_kernel_is_refused<T: InodeTable>() {
    let t = table::<T>();
    assert_eq!(t.forget(999, 1), Err(ForgetError::UnknownInode(999)));
    let a = t.lookup(key(10), fd);
    assert_eq!(
        t.forget(a, 2),
        Err(ForgetError::MoreThanHeld {
            id: a,
            forget: 2,
            held: 1
        })
    );
    assert_eq!(
        t.forget(a, u64::MAX),
        Err(ForgetError::MoreThanHeld {
            id: a,
            forget: u64::MAX,
            held: 1
        })
    );
    assert_eq!(t.kernel_lookups(a), Some(1));
    assert!(t.get(a).is_some());
    t.forget(a, 1).unwrap();
    assert_eq!(t.forget(a, 1), Err(ForgetError::UnknownInode(a)));
    assert!(t.only_root());
    // A FORGET of nothing is accepted and changes nothing.
    let b = t.lookup(key(11), fd);
    t.forget(b, 0).unwrap();
    assert_eq!(t.kernel_lookups(b), Some(1));
    t.forget(b, 1).unwrap();
}

#[test]
fn lying_kernel_is_refused_lockref() {
    lying_kernel_is_refused::<LockrefTable>();
}

#[test]
fn lying_kernel_is_refused_virtiofsd() {
    lying_kernel_is_refused::<VirtiofsdTable>();
}

#[test]
fn lying_kernel_is_refused_dashmap() {
    lying_kernel_is_refused::<DashmapTable>();
}

/// The lockref table keeps an inode while a handle (a reference) holds it,
/// even after the kernel forgot it; it leaves with the last reference.
#[test]
fn a_handle_keeps_its_inode_in_the_lockref_table() {
    let t = table::<LockrefTable>();
    let a = t.lookup(key(10), fd);
    let handle = t.get(a).unwrap();
    t.forget(a, 1).unwrap();
    assert_eq!(t.inodes(), 2, "the handle's reference keeps it");
    assert_eq!(handle.key, key(10));
    // The kernel holds none now: it may not forget more.
    assert!(matches!(
        t.forget(a, 1),
        Err(ForgetError::MoreThanHeld { .. })
    ));
    drop(handle);
    assert!(t.only_root());
}

/// Many threads looking up, getting and forgetting the same few inodes:
/// a host inode keeps one node id while the kernel holds it (an inode
/// dying meanwhile never takes its successor's key with it), every count
/// ends exact and only the root is left.
fn concurrent_lookups_and_forgets<T: InodeTable>() {
    let t = table::<T>();
    std::thread::scope(|s| {
        for th in 0..4 {
            let t = &t;
            s.spawn(move || {
                for i in 0..10_000u64 {
                    let k = key(10 + (i + th) % 3);
                    let id = t.lookup(k, fd);
                    if let Some(r) = t.get(id) {
                        assert_eq!(r.key, k);
                    }
                    // Held: one node id for the host inode until forgotten.
                    assert_eq!(t.lookup(k, fd), id, "a second node id while held");
                    t.forget(id, 2).unwrap();
                }
            });
        }
    });
    assert!(t.only_root(), "{} left", t.inodes());
}

#[test]
fn concurrent_lookups_and_forgets_lockref() {
    concurrent_lookups_and_forgets::<LockrefTable>();
}

#[test]
fn concurrent_lookups_and_forgets_virtiofsd() {
    concurrent_lookups_and_forgets::<VirtiofsdTable>();
}

#[test]
fn concurrent_lookups_and_forgets_dashmap() {
    concurrent_lookups_and_forgets::<DashmapTable>();
}

#[test]
fn names_from_the_kernel_are_checked() {
    use lockref_fuse::host::{check_name, NAME_MAX};
    use std::ffi::OsStr;
    assert!(check_name(OsStr::new("ok")).is_ok());
    assert!(check_name(OsStr::new(&"n".repeat(NAME_MAX))).is_ok());
    assert_eq!(
        check_name(OsStr::new(&"n".repeat(NAME_MAX + 1))),
        Err(fuser::Errno::ENAMETOOLONG)
    );
    for bad in ["", ".", "..", "a/b", "/", "a\0b"] {
        assert_eq!(
            check_name(OsStr::new(bad)),
            Err(fuser::Errno::EINVAL),
            "{bad:?}"
        );
    }
}

/// The measured request mix leaves each table as it found it, from many
/// threads at once (what the harness's `inodes` testcase runs).
fn request_mix_is_balanced<T: InodeTable>() {
    let mix = lockref_fuse::RequestMix::<T>::new();
    assert!(mix.is_balanced());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| (0..5_000).for_each(|_| mix.run_once()));
        }
    });
    assert!(mix.is_balanced(), "{} inodes", mix.table().inodes());
}

#[test]
fn request_mix_is_balanced_lockref() {
    request_mix_is_balanced::<LockrefTable>();
}

#[test]
fn request_mix_is_balanced_virtiofsd() {
    request_mix_is_balanced::<VirtiofsdTable>();
}

#[test]
fn request_mix_is_balanced_dashmap() {
    request_mix_is_balanced::<DashmapTable>();
}

/// A handle must never outlive what it points into (the outside audit:
/// with the old lockref table, a handle read garbage after the table was
/// dropped, and dropping it ran `release` on freed maps). Both tables:
/// drop the table first, then use and drop the handle.
fn a_handle_outlives_its_table<T: InodeTable>() {
    let t = table::<T>();
    let id = t.lookup(key(10), fd);
    let inode = t.get(id).unwrap();
    let root = t.get(ROOT_ID).unwrap();
    drop(t);
    assert_eq!((inode.id, inode.key), (id, key(10)), "still readable");
    assert_eq!(root.id, ROOT_ID);
    drop(inode);
    drop(root);
}

#[test]
fn a_handle_outlives_its_table_lockref() {
    a_handle_outlives_its_table::<LockrefTable>();
}

#[test]
fn a_handle_outlives_its_table_virtiofsd() {
    a_handle_outlives_its_table::<VirtiofsdTable>();
}

#[test]
fn a_handle_outlives_its_table_dashmap() {
    a_handle_outlives_its_table::<DashmapTable>();
}

/// Every request reaches the inode of its node id: 6,000 inodes, half of
/// them forgotten (the lockref table's slots reused by the next ones) and
/// looked up again, and four threads look up, get and forget across them
/// at once; a node id forgotten names nothing, or a later inode.
///
/// Each inode holds a real descriptor, so the three tables take their
/// turns: run side by side they held 30,000 at once, past the 20,000 a
/// test process may open, and CI failed with `EMFILE` when they met.
fn requests_reach_their_own_inode<T: InodeTable>() {
    static ONE_TABLE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_TABLE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let t = table::<T>();
    let keys: Vec<Key> = (2..6_002).map(key).collect();
    let ids: Vec<u64> = keys.iter().map(|&k| t.lookup(k, fd)).collect();
    for &id in ids.iter().step_by(2) {
        t.forget(id, 1).unwrap();
    }
    let check = |t: &T, id: u64, k: Key| {
        let inode = t.get(id).expect("the kernel holds it");
        assert_eq!((inode.id, inode.key), (id, k));
    };
    std::thread::scope(|s| {
        for part in 0..4 {
            let (t, keys, ids) = (&t, &keys, &ids);
            s.spawn(move || {
                for (i, &k) in keys.iter().enumerate().skip(part).step_by(4) {
                    let id = t.lookup(k, fd);
                    check(t, id, k);
                    if i % 2 == 1 {
                        assert_eq!(id, ids[i], "held: the same node id");
                    }
                    t.forget(id, 1).unwrap();
                    if i % 2 == 1 {
                        check(t, id, k);
                    } else if let Some(later) = t.get(id) {
                        assert_ne!(later.key, k, "forgotten: a later inode at most");
                    }
                }
            });
        }
    });
    for (&k, &id) in keys.iter().zip(&ids).skip(1).step_by(2) {
        check(&t, id, k);
        t.forget(id, 1).unwrap();
    }
    assert!(t.only_root());
}

#[test]
fn requests_reach_their_own_inode_lockref() {
    requests_reach_their_own_inode::<LockrefTable>();
}

#[test]
fn requests_reach_their_own_inode_virtiofsd() {
    requests_reach_their_own_inode::<VirtiofsdTable>();
}

#[test]
fn requests_reach_their_own_inode_dashmap() {
    requests_reach_their_own_inode::<DashmapTable>();
}

/// A host inode number given again (a new birth) while the kernel holds
/// the first file's inode is an inode of its own, with a node id of its
/// own; each keeps its own count, and the first file's id is unchanged.
fn a_number_given_again_is_an_inode_of_its_own<T: InodeTable>() {
    let t = table::<T>();
    let first = t.lookup(key(10), fd);
    let again = Key {
        birth: 7,
        ..key(10)
    };
    let second = t.lookup(again, fd);
    assert_ne!(first, second);
    assert_eq!(t.lookup(again, fd), second, "the same id while it lives");
    assert_eq!(t.lookup(key(10), fd), first);
    assert_eq!(t.get(second).unwrap().key, again);
    assert_eq!(t.get(first).unwrap().key, key(10));
    assert_eq!(
        (t.kernel_lookups(first), t.kernel_lookups(second)),
        (Some(2), Some(2))
    );
    t.forget(first, 2).unwrap();
    t.forget(second, 2).unwrap();
    assert!(t.only_root());
}

#[test]
fn a_number_given_again_is_an_inode_of_its_own_lockref() {
    a_number_given_again_is_an_inode_of_its_own::<LockrefTable>();
}

#[test]
fn a_number_given_again_is_an_inode_of_its_own_virtiofsd() {
    a_number_given_again_is_an_inode_of_its_own::<VirtiofsdTable>();
}

#[test]
fn a_number_given_again_is_an_inode_of_its_own_dashmap() {
    a_number_given_again_is_an_inode_of_its_own::<DashmapTable>();
}

/// A host inode named by a file handle, with no descriptor.
fn handle() -> HostInode {
    HostInode::Handle(std::sync::Arc::new(DescriptorSlot::of_handle(
        FileHandleBytes::new(1, &[0; 8]),
    )))
}

/// The server's table keeps the inodes the kernel forgot, up to
/// [`KEEP_FORGOTTEN`], the oldest dropped first: only those named by file
/// handle and born at a known time (a descriptor would stay open; a key
/// with no birth could be a later file's). A kept inode is found again by
/// `lookup_known` by its key, and is the kernel's again.
#[test]
fn forgotten_inodes_are_kept_up_to_the_bound() {
    let t = table::<LockrefTable>();
    let born = |ino: u64| Key {
        birth: 7,
        ..key(ino)
    };
    let many = KEEP_FORGOTTEN as u64 + 100;
    let mut ids = Vec::new();
    for ino in 2..2 + many {
        let id = t.lookup(born(ino), handle);
        t.forget(id, 1).unwrap();
        ids.push(id);
    }
    assert_eq!(
        (t.kept(), t.inodes()),
        (KEEP_FORGOTTEN, 1),
        "bounded, none the kernel's"
    );
    assert_eq!(t.lookup_known(born(2)), None, "the oldest dropped");
    let last = 1 + many;
    let last_id = *ids.last().unwrap();
    assert_eq!(
        t.lookup_known(born(last)),
        Some(last_id),
        "the newest kept, under its node id"
    );
    assert_eq!(t.kernel_lookups(last_id), Some(1));
    assert_eq!(
        t.lookup_known(Key {
            birth: 8,
            ..born(last - 1)
        }),
        None,
        "another birth"
    );
    t.forget(last_id, 1).unwrap();

    let a = t.lookup(key(5_000_000), handle);
    let b = t.lookup(born(5_000_001), fd);
    let kept = t.kept();
    t.forget(a, 1).unwrap();
    t.forget(b, 1).unwrap();
    assert_eq!(t.kept(), kept, "no birth, or a descriptor: not kept");
    assert_eq!(t.lookup_known(key(5_000_000)), None);

    let none = table::<LockrefTable<0>>();
    let id = none.lookup(born(2), handle);
    none.forget(id, 1).unwrap();
    assert_eq!(none.kept(), 0, "a bound of 0 keeps none");
}

/// A kept inode the kernel finds again, whose file is then removed through
/// the mount: the removal's mark (`InodeTable::mark_gone`) reaches the
/// table, so the kernel's forget ends it (its host file's blocks are
/// freed), though `keep` said yes when it was first kept and a kept
/// inode's later last puts do not ask again.
#[test]
fn a_kept_inode_found_again_then_removed_is_not_kept_again() {
    let t = table::<LockrefTable>();
    let born = Key { birth: 7, ..key(9) };
    let id = t.lookup(born, handle);
    t.forget(id, 1).unwrap();
    assert_eq!(t.kept(), 1, "kept at zero");
    assert_eq!(t.lookup_known(born), Some(id), "found again, revived");
    let removed = t.find_known(born).expect("the kernel holds it");
    LockrefTable::<KEEP_FORGOTTEN>::mark_gone(&removed);
    drop(removed);
    t.forget(id, 1).unwrap();
    assert_eq!(t.lookup_known(born), None, "the kernel's forget ended it");
    assert_eq!(t.kept(), 0);
    assert!(t.only_root());
}
