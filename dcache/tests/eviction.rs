//! The bound on unused dentries: the LRU, the shrinker, and that eviction
//! never changes an answer or a count.

use std::thread;

use lockref_dcache::*;

mod common;
use common::*;

/// Enough operations to pass any small bound many times over; fewer under
/// Miri, which runs about a thousand times slower.
const MISSES: usize = if cfg!(miri) { 300 } else { 100_000 };

/// A cache keeping `max_unused` unused dentries, on a small table (a
/// large one costs Miri minutes to build).
fn bounded(max_unused: usize) -> Dcache {
    Dcache::new(Config {
        max_unused,
        buckets: 64,
        ..Config::default()
    })
}

/// Every distinct missing name used to stay cached forever. Now the
/// unused dentries never pass the bound, and every answer stays right.
#[test]
fn distinct_misses_stay_within_the_bound() {
    const MAX: usize = 100;
    let c = bounded(MAX);
    c.mkdir("/d").unwrap();
    for i in 0..MISSES {
        assert_eq!(c.stat(&format!("/d/miss{i}")), Err(Errno::NoEnt));
        assert!(
            c.unused_dentries() <= MAX,
            "after {i} misses: {} unused",
            c.unused_dentries()
        );
        // Two roots, "/d" (in use or unused) and the unused ones.
        assert!(c.live_dentries() <= MAX + 3, "{}", c.live_dentries());
    }
    let balance = balanced(&c);
    assert!(balance.negative <= MAX);
    assert_eq!(c.stat("/d").unwrap().kind, InodeKind::Dir);
}

/// At rest the LRU holds exactly what `Config::max_unused` says, not one
/// more: the reclaim before an allocation leaves room for the new dentry,
/// and a bound of zero keeps nothing at all. (Before, it held 1 with a
/// bound of 0, 65 with 64, 4,097 with the default 4,096.)
#[test]
fn the_lru_rests_at_the_bound_not_one_past_it() {
    let bounds: &[usize] = if cfg!(miri) {
        &[0, 1, 8]
    } else {
        &[0, 1, 2, 64, 4096]
    };
    for &max in bounds {
        let c = bounded(max);
        c.mkdir("/d").unwrap();
        for i in 0..max + 50 {
            assert_eq!(c.stat(&format!("/d/miss{i}")), Err(Errno::NoEnt));
            assert!(c.unused_dentries() <= max, "bound {max}, after {i}");
        }
        // "/d" itself is unused too (the lookups put it): it counts.
        assert_eq!(c.unused_dentries(), max, "bound {max}: full, not past it");
        // The misses are answered the same after their reclaim.
        assert_eq!(c.stat("/d/miss0"), Err(Errno::NoEnt));
        assert_eq!(c.stat("/d").unwrap().kind, InodeKind::Dir);
        assert!(c.unused_dentries() <= max);
        balanced(&c);
    }
}

/// A reclaimed positive dentry is only a cache entry: the file is found
/// again, the same inode.
#[test]
fn reclaimed_names_are_looked_up_again() {
    let c = bounded(8);
    let files = if cfg!(miri) { 20 } else { 500 };
    let inos: Vec<u64> = (0..files)
        .map(|i| {
            touch(&c, &format!("/f{i}"));
            c.stat(&format!("/f{i}")).unwrap().ino
        })
        .collect();
    assert!(c.unused_dentries() <= 8);
    for (i, ino) in inos.iter().enumerate() {
        assert_eq!(c.stat(&format!("/f{i}")).unwrap().ino, *ino);
    }
    balanced(&c);
}

/// The shrinker never touches a dentry in use: held paths keep their
/// dentries and counts through a full shrink, and become reclaimable once
/// dropped.
#[test]
fn dentries_in_use_are_never_reclaimed() {
    let c = bounded(usize::MAX);
    for i in 0..50 {
        touch(&c, &format!("/f{i}"));
    }
    let held: Vec<_> = (0..50)
        .map(|i| c.lookup_path(&format!("/f{i}")).unwrap())
        .collect();
    assert_eq!(c.shrink(usize::MAX), 0, "all in use");
    assert_eq!(c.live_dentries(), 2 + 50);
    for (i, p) in held.iter().enumerate() {
        assert_eq!(p.dentry().count(), 1);
        assert!(p.dentry().is_hashed());
        assert_eq!(p.dentry().name(), format!("f{i}").as_bytes());
    }
    drop(held);
    assert_eq!(c.shrink(usize::MAX), 50);
    assert_eq!(c.live_dentries(), 2);
    assert_eq!(c.unused_dentries(), 0);
    balanced(&c);
}

/// A directory is in use while it has cached children (each holds a
/// reference on it); it becomes unused when the last goes, and one full
/// shrink reclaims the whole tree, leaves first.
#[test]
fn directories_are_reclaimed_after_their_children() {
    let c = bounded(usize::MAX);
    c.mkdir("/a").unwrap();
    c.mkdir("/a/b").unwrap();
    touch(&c, "/a/b/f");
    assert_eq!(c.live_dentries(), 5);
    assert_eq!(c.shrink(1), 1, "the leaf");
    assert_eq!(c.stat("/a/b").unwrap().kind, InodeKind::Dir);
    balanced(&c);
    assert_eq!(c.shrink(usize::MAX), 2, "/a/b, then /a");
    assert_eq!(c.live_dentries(), 2);
    assert_eq!(c.stat("/a/b/f").unwrap().kind, InodeKind::File);
    balanced(&c);
}

/// A dentry used again since it was listed gets a second chance: the
/// shrinker takes the older unreferenced ones first.
#[test]
fn a_referenced_dentry_gets_a_second_chance() {
    let c = bounded(usize::MAX);
    touch(&c, "/old"); // listed first: the oldest
    touch(&c, "/young");
    assert_eq!(c.stat("/old").unwrap().kind, InodeKind::File); // referenced
    assert_eq!(c.shrink(1), 1);
    let root = c.root();
    assert!(
        c.try_lookup_noperm(root.dentry(), "old").unwrap().is_some(),
        "the referenced one survives"
    );
    assert!(c
        .try_lookup_noperm(root.dentry(), "young")
        .unwrap()
        .is_none());
    drop(root);
    balanced(&c);
}

/// Bound zero: nothing unused is kept past the next allocation, and the
/// cache still answers everything.
#[test]
fn bound_zero_keeps_nothing_unused() {
    let c = bounded(0);
    c.mkdir("/d").unwrap();
    touch(&c, "/d/f");
    assert_eq!(c.stat("/d/f").unwrap().kind, InodeKind::File);
    assert_eq!(c.stat("/d/g"), Err(Errno::NoEnt));
    assert!(c.unused_dentries() <= 1);
    c.unlink("/d/f").unwrap();
    assert_eq!(c.stat("/d/f"), Err(Errno::NoEnt));
    balanced(&c);
}

/// Threads missing distinct names, hitting shared ones, and a thread
/// shrinking everything, at once: no answer changes, the bound holds
/// (within one per thread), and every count ends exact.
#[test]
fn concurrent_lookups_and_shrinks_stay_balanced_and_bounded() {
    const MAX: usize = 16;
    const THREADS: usize = 3;
    let iters = if cfg!(miri) { 30 } else { 5_000 };
    let c = bounded(MAX);
    c.mkdir("/shared").unwrap();
    touch(&c, "/shared/hot");
    thread::scope(|s| {
        for t in 0..THREADS {
            let c = &c;
            s.spawn(move || {
                for i in 0..iters {
                    assert_eq!(c.stat(&format!("/shared/miss-{t}-{i}")), Err(Errno::NoEnt));
                    assert_eq!(c.stat("/shared/hot").unwrap().kind, InodeKind::File);
                    c.close(c.open("/shared/hot", OpenFlags::RDONLY).unwrap());
                }
            });
        }
        let c = &c;
        s.spawn(move || {
            for _ in 0..iters / 10 {
                c.shrink(usize::MAX);
                thread::yield_now();
            }
        });
    });
    assert!(
        c.unused_dentries() <= MAX + THREADS,
        "{}",
        c.unused_dentries()
    );
    balanced(&c);
    assert_eq!(c.stat("/shared/hot").unwrap().kind, InodeKind::File);
    let cached = c.live_dentries() - 2;
    assert_eq!(c.shrink(usize::MAX), cached);
    assert_eq!(c.live_dentries(), 2);
    balanced(&c);
}
