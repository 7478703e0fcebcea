//! Functional tests of the dcache: every operation and error, with the
//! counts checked balanced after each; exact per-path accounting with the
//! `stats` feature; bounded concurrent stress with exact final counts.

use std::string::String;
use std::thread;
use std::vec::Vec;
use std::{format, vec};

use super::*;

const ITERS: usize = if cfg!(miri) { 20 } else { 2_000 };

fn cache(variants: Variants) -> Dcache {
    Dcache::new(Config {
        buckets: 64,
        revalidate: false,
        variants,
    })
}

fn balanced(c: &Dcache) -> Balance {
    c.check_balanced().unwrap_or_else(|e| panic!("{e}"))
}

fn touch(c: &Dcache, path: &str) {
    c.close(c.open(path, OpenFlags::WRONLY.creat()).expect("create"));
}

#[test]
fn empty_cache_is_balanced() {
    let c = cache(Variants::AFTER);
    assert_eq!(
        balanced(&c),
        Balance {
            hashed: 0,
            negative: 0
        }
    );
    assert_eq!(c.live_dentries(), 2);
}

#[test]
fn create_open_close_stat() {
    for v in [Variants::AFTER, Variants::BEFORE] {
        let c = cache(v);
        c.mkdir("/etc").unwrap();
        touch(&c, "/etc/passwd");
        let f = c.open("/etc/passwd", OpenFlags::RDONLY).unwrap();
        assert!(f.is_opened());
        assert_eq!(f.path().name(), b"passwd");
        assert_eq!(f.path().dentry().kind(), Some(InodeKind::File));
        assert_eq!(f.flags(), OpenFlags::RDONLY);
        let g = f.clone();
        c.close(f);
        c.close(g);
        let st = c.stat("/etc/passwd").unwrap();
        assert_eq!(st.kind, InodeKind::File);
        assert_eq!(c.stat("/etc").unwrap().kind, InodeKind::Dir);
        assert_eq!(c.stat("/etc/../etc/./passwd").unwrap(), st);
        assert_eq!(c.stat("etc/passwd").unwrap(), st, "relative to the root");
        assert_eq!(
            balanced(&c),
            Balance {
                hashed: 2,
                negative: 0
            }
        );
    }
}

#[test]
fn errors_are_typed_and_leave_counts_balanced() {
    for v in [Variants::AFTER, Variants::BEFORE] {
        let c = cache(v);
        c.mkdir("/d").unwrap();
        touch(&c, "/d/f");
        let long = "n".repeat(NAME_MAX + 1);
        let ok_long = "n".repeat(NAME_MAX);
        let deep = "/d".repeat(MAX_DEPTH + 1);
        let huge = format!("/{}", "a/".repeat(PATH_MAX / 2 + 1));
        let cases: Vec<(String, OpenFlags, Errno)> = vec![
            ("".into(), OpenFlags::RDONLY, Errno::NoEnt),
            ("/missing".into(), OpenFlags::RDONLY, Errno::NoEnt),
            ("/d/missing/x".into(), OpenFlags::RDONLY, Errno::NoEnt),
            ("/d/f/x".into(), OpenFlags::RDONLY, Errno::NotDir),
            ("/d/f/x".into(), OpenFlags::WRONLY.creat(), Errno::NotDir),
            ("/d/f".into(), OpenFlags::RDONLY.directory(), Errno::NotDir),
            ("/d".into(), OpenFlags::WRONLY, Errno::IsDir),
            ("/d".into(), OpenFlags::RDWR, Errno::IsDir),
            (
                "/d/f".into(),
                OpenFlags::WRONLY.creat().excl(),
                Errno::Exist,
            ),
            ("/d".into(), OpenFlags::WRONLY.creat().excl(), Errno::Exist),
            ("/d/.".into(), OpenFlags::WRONLY.creat(), Errno::IsDir),
            ("/".into(), OpenFlags::WRONLY.creat(), Errno::IsDir),
            (format!("/d/{long}"), OpenFlags::RDONLY, Errno::NameTooLong),
            (
                format!("/d/{long}"),
                OpenFlags::WRONLY.creat(),
                Errno::NameTooLong,
            ),
            (deep.clone(), OpenFlags::RDONLY, Errno::NameTooLong),
            (huge.clone(), OpenFlags::RDONLY, Errno::NameTooLong),
            ("/d/a\0b".into(), OpenFlags::RDONLY, Errno::Inval),
            (
                "/missing/new".into(),
                OpenFlags::WRONLY.creat(),
                Errno::NoEnt,
            ),
        ];
        for (path, flags, want) in &cases {
            let files = c.live_files();
            assert_eq!(
                c.open(path, *flags).err(),
                Some(*want),
                "open({path:?}, {flags:?})"
            );
            assert_eq!(c.live_files(), files);
            balanced(&c);
        }
        // A 255-byte name is fine.
        touch(&c, &format!("/d/{ok_long}"));
        assert_eq!(c.mkdir("/d"), Err(Errno::Exist));
        assert_eq!(c.mkdir("/d/f/g"), Err(Errno::NotDir));
        assert_eq!(c.mkdir("/nope/g"), Err(Errno::NoEnt));
        assert_eq!(c.mkdir("/"), Err(Errno::Exist));
        assert_eq!(c.unlink("/d"), Err(Errno::IsDir));
        assert_eq!(c.unlink("/d/nope"), Err(Errno::NoEnt));
        assert_eq!(c.unlink("/d/f/x"), Err(Errno::NotDir));
        assert_eq!(c.unlink("/d/.."), Err(Errno::IsDir));
        assert_eq!(c.stat("/d/nope"), Err(Errno::NoEnt));
        assert_eq!(c.lookup_path("/d/f/").unwrap().name(), b"f");
        assert_eq!(OpenFlags::from_bits(0o3), Err(Errno::Inval));
        assert_eq!(OpenFlags::from_bits(0o100 | 0o200000), Err(Errno::Inval));
        let root = c.root();
        for bad in ["", ".", "..", "a/b", "a\0"] {
            assert!(c.try_lookup_noperm(root.dentry(), bad).is_err(), "{bad:?}");
            assert!(
                c.lookup_noperm_unlocked(root.dentry(), bad).is_err(),
                "{bad:?}"
            );
        }
        assert_eq!(
            c.try_lookup_noperm(root.dentry(), &long).err(),
            Some(Errno::NameTooLong)
        );
        let file = c.lookup_path("/d/f").unwrap();
        assert_eq!(
            c.try_lookup_noperm(file.dentry(), "x").err(),
            Some(Errno::NotDir)
        );
        drop((root, file));
        balanced(&c);
    }
}

#[test]
fn negative_dentries_are_cached_and_instantiated_by_create() {
    let c = cache(Variants::AFTER);
    assert_eq!(c.open("/x", OpenFlags::RDONLY).err(), Some(Errno::NoEnt));
    assert_eq!(
        balanced(&c),
        Balance {
            hashed: 1,
            negative: 1
        }
    );
    // The second miss is answered by the cached negative dentry.
    assert_eq!(c.open("/x", OpenFlags::RDONLY).err(), Some(Errno::NoEnt));
    assert_eq!(balanced(&c).hashed, 1);
    touch(&c, "/x");
    assert_eq!(
        balanced(&c),
        Balance {
            hashed: 1,
            negative: 0
        }
    );
    assert!(c.open("/x", OpenFlags::RDONLY).is_ok());
}

#[test]
fn unlink_keeps_open_files_and_frees_after_close() {
    for v in [Variants::AFTER, Variants::BEFORE] {
        let c = cache(v);
        touch(&c, "/f");
        let f = c.open("/f", OpenFlags::RDONLY).unwrap();
        c.unlink("/f").unwrap();
        assert!(!f.path().dentry().is_hashed());
        assert_eq!(c.open("/f", OpenFlags::RDONLY).err(), Some(Errno::NoEnt));
        assert_eq!(
            c.live_dentries(),
            4,
            "roots, the open file's dentry, a negative one"
        );
        c.close(f);
        assert_eq!(c.live_dentries(), 3);
        assert_eq!(
            balanced(&c),
            Balance {
                hashed: 1,
                negative: 1
            }
        );
    }
}

#[test]
fn pseudo_dentries_never_touch_the_cache() {
    for v in [Variants::AFTER, Variants::BEFORE] {
        let c = cache(v);
        let pipes: Vec<_> = (0..10).map(|_| c.alloc_pseudo()).collect();
        for p in &pipes {
            assert_eq!(p.dentry().kind(), Some(InodeKind::Pipe));
            assert!(!p.dentry().is_hashed());
            assert_eq!(p.dentry().is_self_parented(), v.pseudo_self_parent);
        }
        assert_eq!(
            c.pseudo_root().count(),
            if v.pseudo_self_parent { 2 } else { 12 }
        );
        drop(pipes);
        assert_eq!(c.live_dentries(), 2);
        balanced(&c);
    }
}

#[test]
fn dput_cascade_frees_unhashed_chain() {
    let c = cache(Variants::AFTER);
    c.mkdir("/a").unwrap();
    c.mkdir("/a/b").unwrap();
    touch(&c, "/a/b/c");
    let c_ref = c.lookup_path("/a/b/c").unwrap();
    assert_eq!(c.live_dentries(), 5);
    c.unlink("/a/b/c").unwrap();
    drop(c_ref);
    // Killed; its parents stay cached, their counts back to baseline.
    assert_eq!(c.live_dentries(), 4);
    let b = balanced(&c);
    assert_eq!(b.hashed, 2 + usize::from(b.negative == 1));
}

#[test]
fn empty_file_token_release_and_stray_reference() {
    let c = cache(Variants::AFTER);
    let before = deferred_on_this_thread();
    c.alloc_file(OpenFlags::RDONLY).release().unwrap();
    drop(c.alloc_file(OpenFlags::RDONLY));
    assert_eq!(c.live_files(), 0);
    // A stray reference is caught, and the file goes with it, immediately.
    let token = c.alloc_file(OpenFlags::RDONLY);
    let stray = token.get_file();
    assert!(!stray.is_opened());
    assert_eq!(token.release(), Err(StrayReference { count: 2 }));
    assert_eq!(c.live_files(), 1);
    drop(stray);
    assert_eq!(c.live_files(), 0);
    assert_eq!(deferred_on_this_thread(), before, "no deferred work");
    // A token opened and handed back on error can still be released.
    let (e, token) = c
        .alloc_file(OpenFlags::WRONLY)
        .open(&c.root())
        .expect_err("a directory for writing");
    assert_eq!(e, Errno::IsDir);
    token.release().unwrap();
    balanced(&c);
}

#[test]
fn borrowed_and_consuming_open() {
    let c = cache(Variants::AFTER);
    touch(&c, "/f");
    let path = c.lookup_path("/f").unwrap();
    let base = path.dentry().count();
    let f1 = c.alloc_file(OpenFlags::RDONLY).open(&path).unwrap();
    assert_eq!(
        path.dentry().count(),
        base + 1,
        "vfs_open takes its own reference"
    );
    let p2 = path.clone();
    assert_eq!(path.dentry().count(), base + 2);
    let f2 = c.alloc_file(OpenFlags::RDONLY).open_consume(p2).unwrap();
    assert_eq!(path.dentry().count(), base + 2, "consumed: no count moved");
    drop(path);
    c.close(f1);
    c.close(f2);
    balanced(&c);
}

#[test]
fn revalidating_filesystem() {
    let c = Dcache::new(Config {
        buckets: 16,
        revalidate: true,
        variants: Variants::AFTER,
    });
    c.mkdir("/d").unwrap();
    touch(&c, "/d/f");
    assert!(c.open("/d/f", OpenFlags::RDONLY).is_ok());
    let d = c.lookup_path("/d").unwrap();
    let f = c.try_lookup_noperm(d.dentry(), "f").unwrap().unwrap();
    assert_eq!(f.kind(), Some(InodeKind::File));
    drop(f);
    c.unlink("/d/f").unwrap();
    assert!(c.try_lookup_noperm(d.dentry(), "f").unwrap().is_none());
    let neg = c.lookup_noperm_unlocked(d.dentry(), "f").unwrap();
    assert_eq!(neg.kind(), None);
    drop((neg, d));
    touch(&c, "/d/f");
    assert_eq!(c.stat("/d/f").unwrap().kind, InodeKind::File);
    balanced(&c);
}

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

#[cfg(feature = "stats")]
mod accounting {
    use super::*;

    /// Lockref operations on the dentry of `path` while `f` runs.
    fn ops_on(c: &Dcache, path: &str, f: impl FnOnce()) -> usize {
        let d = c.lookup_path(path).unwrap();
        d.dentry().reset_lockref_stats();
        f();
        d.dentry().lockref_stats().operations
    }

    #[test]
    fn open_consume_saves_two_operations_on_the_dentry() {
        let mut c = cache(Variants::AFTER);
        touch(&c, "/f");
        let open_close = |c: &Dcache| c.close(c.open("/f", OpenFlags::RDONLY).unwrap());
        let after = ops_on(&c, "/f", || open_close(&c));
        c.set_variants(Variants::BEFORE);
        let before = ops_on(&c, "/f", || open_close(&c));
        // After: get_not_dead (legitimize) + put (close). Before: also the
        // file's get (vfs_open) and the walk's put (terminate_walk).
        assert_eq!((after, before), (2, 4));
        balanced(&c);
    }

    #[test]
    fn failed_open_through_the_token_defers_nothing() {
        let mut c = cache(Variants::AFTER);
        let before = deferred_on_this_thread();
        assert_eq!(
            c.open("/missing", OpenFlags::RDONLY).err(),
            Some(Errno::NoEnt)
        );
        assert_eq!(deferred_on_this_thread(), before);
        c.set_variants(Variants::BEFORE);
        assert_eq!(
            c.open("/missing", OpenFlags::RDONLY).err(),
            Some(Errno::NoEnt)
        );
        assert_eq!(
            deferred_on_this_thread(),
            before + 1,
            "fput's deferred release"
        );
        assert_eq!(c.live_files(), 0);
    }

    #[test]
    fn pseudo_dentry_alloc_and_free_touch_no_root() {
        let mut c = cache(Variants::AFTER);
        let root = c.pseudo_root();
        root.reset_lockref_stats();
        drop(c.alloc_pseudo());
        assert_eq!(root.lockref_stats().operations, 0);
        drop(root);
        c.set_variants(Variants::BEFORE);
        let root = c.pseudo_root();
        root.reset_lockref_stats();
        drop(c.alloc_pseudo());
        // d_alloc's lock on the parent, and the cascade's put.
        assert_eq!(root.lockref_stats().operations, 2);
    }

    #[test]
    fn creat_of_existing_file_with_lookup_first_takes_no_directory_lock() {
        let mut c = cache(Variants::AFTER);
        c.mkdir("/d").unwrap();
        touch(&c, "/d/f");
        let locks = |c: &Dcache| c.lookup_path("/d").unwrap().dentry().inode_write_locks();
        let before = locks(&c);
        c.close(c.open("/d/f", OpenFlags::WRONLY.creat()).unwrap());
        assert_eq!(locks(&c), before);
        c.set_variants(Variants::BEFORE);
        c.close(c.open("/d/f", OpenFlags::WRONLY.creat()).unwrap());
        assert_eq!(locks(&c), before + 1);
        balanced(&c);
    }

    #[test]
    fn try_lookup_skips_revalidation() {
        let mut c = Dcache::new(Config {
            buckets: 16,
            revalidate: true,
            variants: Variants::AFTER,
        });
        touch(&c, "/f");
        let ops = |c: &Dcache| {
            let root = c.root();
            let d = c.try_lookup_noperm(root.dentry(), "f").unwrap().unwrap();
            d.reset_lockref_stats();
            drop(d);
            let d = c.try_lookup_noperm(root.dentry(), "f").unwrap().unwrap();
            d.lockref_stats().lock_acquisitions
        };
        assert_eq!(ops(&c), 0, "no revalidation: no dentry lock");
        c.set_variants(Variants::BEFORE);
        assert_eq!(ops(&c), 1, "revalidation takes the dentry lock");
    }

    #[test]
    fn a_cached_miss_writes_no_count() {
        let c = cache(Variants::AFTER);
        assert_eq!(c.stat("/missing"), Err(Errno::NoEnt)); // caches the miss
        let root = c.root();
        let neg = c.lookup_noperm_unlocked(root.dentry(), "missing").unwrap();
        assert_eq!(neg.kind(), None);
        neg.reset_lockref_stats();
        assert_eq!(c.stat("/missing"), Err(Errno::NoEnt));
        assert_eq!(
            c.open("/missing", OpenFlags::RDONLY).err(),
            Some(Errno::NoEnt)
        );
        assert_eq!(
            neg.lockref_stats().operations,
            0,
            "RCU walk: ENOENT without a reference"
        );
    }

    #[test]
    fn lookup_writes_only_the_found_dentrys_count() {
        let c = cache(Variants::AFTER);
        c.mkdir("/a").unwrap();
        touch(&c, "/a/f");
        let a = c.lookup_path("/a").unwrap();
        let root = c.root();
        a.dentry().reset_lockref_stats();
        root.dentry().reset_lockref_stats();
        let st = c.stat("/a/f");
        assert!(st.is_ok());
        assert_eq!(
            a.dentry().lockref_stats().operations,
            0,
            "RCU walk: no count on /a"
        );
        assert_eq!(root.dentry().lockref_stats().operations, 0, "nor on /");
    }
}
