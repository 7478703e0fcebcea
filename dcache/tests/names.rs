//! `rmdir`, `link` and `rename` held to Linux: the same steps run on the
//! dcache and in a scratch directory of the host's filesystem, and each
//! step's result (success or the errno) must be the same, as must, after
//! every step, which of a set of names exist and as what.

use std::fs;
use std::io;
use std::path::PathBuf;

use lockref_dcache::{Dcache, Errno, InodeKind, OpenFlags};

/// A scratch directory on the host, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("lockref-dcache-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir(&p).unwrap();
        Scratch(p)
    }

    /// The host path of the dcache path `p` (absolute, from the root).
    fn at(&self, p: &str) -> PathBuf {
        let mut s = self.0.clone().into_os_string();
        s.push(p);
        PathBuf::from(s)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Mkdir(&'static str),
    Create(&'static str),
    Unlink(&'static str),
    Rmdir(&'static str),
    Link(&'static str, &'static str),
    Rename(&'static str, &'static str),
}

fn host_result(r: io::Result<()>) -> Result<(), i32> {
    r.map_err(|e| e.raw_os_error().unwrap())
}

fn run_host(s: &Scratch, step: Step) -> Result<(), i32> {
    host_result(match step {
        Step::Mkdir(p) => fs::create_dir(s.at(p)),
        Step::Create(p) => fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(s.at(p))
            .map(drop),
        Step::Unlink(p) => fs::remove_file(s.at(p)),
        Step::Rmdir(p) => fs::remove_dir(s.at(p)),
        Step::Link(a, b) => fs::hard_link(s.at(a), s.at(b)),
        Step::Rename(a, b) => fs::rename(s.at(a), s.at(b)),
    })
}

fn run_dcache(c: &Dcache, step: Step) -> Result<(), i32> {
    match step {
        Step::Mkdir(p) => c.mkdir(p),
        Step::Create(p) => c.open(p, OpenFlags::WRONLY.creat()).map(|f| c.close(f)),
        Step::Unlink(p) => c.unlink(p),
        Step::Rmdir(p) => c.rmdir(p),
        Step::Link(a, b) => c.link(a, b),
        Step::Rename(a, b) => c.rename(a, b),
    }
    .map_err(Errno::code)
}

/// What each name is on the host: missing, a file or a directory.
fn host_kind(s: &Scratch, p: &str) -> Option<InodeKind> {
    let md = fs::symlink_metadata(s.at(p)).ok()?;
    Some(if md.is_dir() {
        InodeKind::Dir
    } else {
        InodeKind::File
    })
}

/// Runs `steps` on both, comparing each result and then every name in
/// `names`; also that hard links share their inode on both.
fn same_as_linux(tag: &str, steps: &[Step], names: &[&str]) {
    let host = Scratch::new(tag);
    let cache = Dcache::new(Default::default());
    for (i, &step) in steps.iter().enumerate() {
        let (h, d) = (run_host(&host, step), run_dcache(&cache, step));
        assert_eq!(
            d, h,
            "{tag}: step {i} {step:?}: dcache vs Linux (errno codes)"
        );
        for &n in names {
            let on_host = host_kind(&host, n);
            let in_cache = cache.stat(n).ok().map(|st| st.kind);
            assert_eq!(in_cache, on_host, "{tag}: after step {i} {step:?}: {n}");
        }
    }
    cache.check_balanced().unwrap();
}

#[test]
#[cfg_attr(
    miri,
    ignore = "compares with the host's filesystem, which Miri's isolation keeps out"
)]
fn rmdir_as_linux() {
    use Step::*;
    same_as_linux(
        "rmdir",
        &[
            Rmdir("/missing"),
            Mkdir("/d"),
            Create("/d/f"),
            Rmdir("/d"),
            Rmdir("/d/f"),
            Rmdir("/d/f/x"),
            Rmdir("/d/."),
            Rmdir("/d/.."),
            Unlink("/d/f"),
            Rmdir("/d/"),
            Rmdir("/d"),
            Mkdir("/d"),
            Rmdir("/d"),
        ],
        &["/d", "/d/f"],
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "compares with the host's filesystem, which Miri's isolation keeps out"
)]
fn link_as_linux() {
    use Step::*;
    same_as_linux(
        "link",
        &[
            Create("/f"),
            Mkdir("/d"),
            Link("/f", "/g"),
            Link("/f", "/g"),
            Link("/f", "/d/h"),
            Link("/d", "/e"),
            Link("/missing", "/x"),
            Link("/f", "/nodir/x"),
            Link("/f", "/y/"),
            Link("/f/", "/z"),
            Link("/f/x", "/z"),
            Unlink("/f"),
            Link("/g", "/f"),
        ],
        &["/f", "/g", "/d/h", "/e", "/x", "/y", "/z"],
    );
    let cache = Dcache::new(Default::default());
    cache.close(cache.open("/f", OpenFlags::WRONLY.creat()).unwrap());
    cache.link("/f", "/g").unwrap();
    assert_eq!(cache.stat("/f").unwrap().ino, cache.stat("/g").unwrap().ino);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "compares with the host's filesystem, which Miri's isolation keeps out"
)]
fn rename_as_linux() {
    use Step::*;
    same_as_linux(
        "rename",
        &[
            Create("/f"),
            Create("/g"),
            Mkdir("/d"),
            Mkdir("/e"),
            Mkdir("/full"),
            Create("/full/x"),
            Rename("/missing", "/x"),
            Rename("/f", "/f"),
            Rename("/f", "/g"),
            Rename("/g", "/d"),
            Rename("/d", "/g"),
            Rename("/d", "/full"),
            Rename("/d", "/e"),
            Rename("/e", "/e/sub"),
            Rename("/full", "/full/x/y"),
            Rename("/g/", "/h"),
            Rename("/g", "/h/"),
            Rename("/full/.", "/x"),
            Rename("/g", "/full/."),
            Rename("/full", "/moved/"),
            Rename("/moved", "/e/inner"),
            Rename("/e/inner/x", "/top"),
            Link("/top", "/top2"),
            Rename("/top", "/top2"),
            Rename("/g", "/e/inner/g"),
        ],
        &[
            "/f",
            "/g",
            "/h",
            "/d",
            "/e",
            "/full",
            "/full/x",
            "/moved",
            "/moved/x",
            "/e/inner",
            "/e/inner/x",
            "/e/inner/g",
            "/top",
            "/top2",
        ],
    );
}

/// Renames and removals while other threads walk the same names: every
/// count balances, and what is left is what the last step of each name
/// left (each thread works on its own names under shared directories).
#[test]
fn renames_under_concurrent_walks_stay_balanced() {
    let cache = Dcache::new(Default::default());
    cache.mkdir("/a").unwrap();
    cache.mkdir("/b").unwrap();
    // Fewer rounds under Miri, which runs each one many times slower.
    let rounds = if cfg!(miri) { 4 } else { 200 };
    std::thread::scope(|s| {
        for t in 0..4 {
            let cache = &cache;
            s.spawn(move || {
                for i in 0..rounds {
                    let (x, y) = (format!("/a/t{t}_{i}"), format!("/b/t{t}_{i}"));
                    cache.mkdir(&x).unwrap();
                    cache.close(
                        cache
                            .open(&format!("{x}/f"), OpenFlags::WRONLY.creat())
                            .unwrap(),
                    );
                    cache.rename(&x, &y).unwrap();
                    assert!(cache.stat(&format!("{y}/f")).is_ok());
                    assert_eq!(cache.stat(&x).err(), Some(Errno::NoEnt));
                    cache.link(&format!("{y}/f"), &format!("{y}/g")).unwrap();
                    cache.unlink(&format!("{y}/f")).unwrap();
                    cache.rename("/b", "/b").unwrap();
                    assert_eq!(cache.rmdir(&y), Err(Errno::NotEmpty));
                    cache.unlink(&format!("{y}/g")).unwrap();
                    cache.rmdir(&y).unwrap();
                }
            });
        }
        for _ in 0..2 {
            let cache = &cache;
            s.spawn(move || {
                for i in 0..rounds * 10 {
                    let _ = cache.stat(&format!("/a/t0_{}/f", i % rounds));
                    let _ = cache.stat(&format!("/b/t1_{}", i % rounds));
                }
            });
        }
    });
    cache.rmdir("/a").unwrap();
    cache.rmdir("/b").unwrap();
    cache.check_balanced().unwrap();
}
