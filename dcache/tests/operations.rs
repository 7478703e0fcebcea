//! Every operation and error of the dcache, with the counts checked
//! balanced after each.

use lockref_dcache::testing::*;
use lockref_dcache::*;

mod common;
use common::*;

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
        assert_eq!(f.path().dentry().name(), b"passwd");
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
        assert_eq!(c.lookup_path("/d/f/").err(), Some(Errno::NotDir));
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
fn empty_file_token_release_and_drop_free_at_once() {
    let c = cache(Variants::AFTER);
    let before = deferred_on_this_thread();
    c.alloc_file(OpenFlags::RDONLY).release();
    drop(c.alloc_file(OpenFlags::RDONLY));
    assert_eq!(c.live_files(), 0);
    assert_eq!(deferred_on_this_thread(), before, "no deferred work");
    // A token opened and handed back on error can still be released.
    let (e, token) = c
        .alloc_file(OpenFlags::WRONLY)
        .open(&c.root())
        .expect_err("a directory for writing");
    assert_eq!(e, Errno::IsDir);
    token.release();
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
        ..Config::default()
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

/// A handle of one cache passed to another is refused with `EXDEV`, and
/// neither cache's counts move.
#[test]
fn handles_of_another_cache_are_refused() {
    let a = cache(Variants::AFTER);
    let b = cache(Variants::AFTER);
    b.mkdir("/d").unwrap();
    let theirs = b.lookup_path("/d").unwrap();
    assert_eq!(
        a.lookup_noperm_unlocked(theirs.dentry(), "x").err(),
        Some(Errno::XDev)
    );
    assert_eq!(
        a.try_lookup_noperm(theirs.dentry(), "x").err(),
        Some(Errno::XDev)
    );
    let (e, token) = a.alloc_file(OpenFlags::RDONLY).open(&theirs).unwrap_err();
    assert_eq!(e, Errno::XDev);
    token.release();
    let (e, token) = a
        .alloc_file(OpenFlags::RDONLY)
        .open_consume(theirs)
        .unwrap_err();
    assert_eq!(e, Errno::XDev);
    token.release();
    balanced(&a);
    balanced(&b);
}
