//! Bounded concurrent stress with exact final counts.

use std::thread;

use lockref_dcache::*;

mod common;
use common::*;

const ITERS: usize = if cfg!(miri) { 20 } else { 2_000 };

/// Many threads open, close, create, unlink and allocate pipes on one
/// cache: every count ends exact and nothing leaks.
#[test]
fn concurrent_paths_stay_balanced() {
    for v in [Variants::AFTER, Variants::BEFORE] {
        let c = cache(v);
        c.mkdir("/shared").unwrap();
        touch(&c, "/shared/hot");
        thread::scope(|s| {
            for t in 0..4 {
                let c = &c;
                s.spawn(move || {
                    let own = format!("/shared/t{t}");
                    for i in 0..ITERS / 4 {
                        c.close(c.open("/shared/hot", OpenFlags::RDONLY).unwrap());
                        assert_eq!(
                            c.open("/shared/none", OpenFlags::RDONLY).err(),
                            Some(Errno::NoEnt)
                        );
                        c.close(c.open("/shared/hot", OpenFlags::WRONLY.creat()).unwrap());
                        touch(c, &own);
                        if i % 2 == 0 {
                            c.unlink(&own).unwrap();
                        }
                        drop(c.alloc_pseudo());
                        assert_eq!(c.stat("/shared/hot").unwrap().kind, InodeKind::File);
                    }
                });
            }
        });
        balanced(&c);
        assert_eq!(c.live_files(), 0);
    }
}

/// Lookups race unlink and re-create of the same name: a lookup gets a
/// live reference or a miss, and the counts end balanced.
#[test]
fn lookup_races_unlink() {
    let c = cache(Variants::AFTER);
    touch(&c, "/f");
    thread::scope(|s| {
        let c = &c;
        s.spawn(move || {
            for _ in 0..ITERS / 4 {
                let _ = c.unlink("/f");
                touch(c, "/f");
            }
        });
        for _ in 0..2 {
            s.spawn(move || {
                for _ in 0..ITERS / 4 {
                    match c.open("/f", OpenFlags::RDONLY) {
                        Ok(f) => {
                            assert_eq!(f.path().dentry().kind(), Some(InodeKind::File));
                            c.close(f);
                        }
                        Err(e) => assert_eq!(e, Errno::NoEnt),
                    }
                }
            });
        }
    });
    balanced(&c);
}

/// Threads race lookups of the same fresh names: each name ends cached
/// exactly once (`d_add` finds a dentry another lookup hashed first and
/// uses it), whatever the interleaving.
#[test]
fn racing_lookups_of_one_name_hash_it_once() {
    let names = if cfg!(miri) { 10 } else { 2_000 };
    let c = cache(Variants::AFTER);
    let start = std::sync::Barrier::new(RACERS);
    thread::scope(|s| {
        for _ in 0..RACERS {
            s.spawn(|| {
                start.wait();
                let root = c.root();
                for i in 0..names {
                    let d = c
                        .lookup_noperm_unlocked(root.dentry(), &format!("n{i}"))
                        .unwrap();
                    assert_eq!(d.kind(), None);
                }
            });
        }
    });
    let b = balanced(&c);
    assert_eq!(
        (b.hashed, b.negative),
        (names, names),
        "a name cached twice"
    );
}

/// Threads racing for the same names.
const RACERS: usize = 4;
