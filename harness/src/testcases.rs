//! The testcases: a loop body per worker over one shared dcache, in each
//! variant (a seed's before and after, or a lockref policy).

use lockref::policy::{ExpBackoff, KernelRetry, WaitUnlock};
use lockref::CasWord;
use lockref_dcache::{Config, Dcache, Errno, OpenFlags, Variants};
use lockref_fuse::{DashmapTable, HotInode, LockrefTable, RequestMix, VirtiofsdTable};
use lockref_measure::layout::{DentryLayout, LookupLine, OwnLine};
use lockref_measure::{AddWordGetPut, Floor, GetPut, LockRefGetPut};

/// The forgotten inodes the `lockref keep` variant of `hotinode` keeps.
const KEEP_FORGOTTEN: usize = 1024;

/// A testcase, as will-it-scale names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Testcase {
    /// Open + close the same existing file, read-only (seed 000).
    Open3,
    /// Open + close a separate file per thread (control: no shared line).
    Open1,
    /// Open a name that does not exist (seed 001).
    OpenNeg,
    /// Allocate and free a pseudo dentry (seed 002).
    Pseudo,
    /// O_CREAT open + close of an existing file in a shared directory
    /// (seed 003).
    Creat,
    /// Cached-name lookup on a revalidating filesystem (seed 004).
    TryLookup,
    /// Look up the same name and release it, lockref in its own line vs in
    /// the lookup line (the kernel's 2024 `d_lockref` move). Synthetic: the
    /// dcache's layout is fixed at compile time, so this runs the lookup
    /// and the reference on two small dentry layouts.
    Stat2,
    /// get + put on one shared LockRef, each policy, the experimental
    /// fetch_add word and the fetch_add floor.
    Lockref,
    /// The FUSE inode table's share of a LOOKUP, OPEN, READ, RELEASE and
    /// FORGET on one shared file: virtiofsd's table against lockref's.
    Inodes,
    /// Every thread on one hot directory and file whose entries cycle
    /// through zero (LOOKUP, GETATTR of each, FORGET of each): the last
    /// put drops the count to zero without the lock (a cached entry stays;
    /// on a table that keeps none, the same compare-and-swap kills it).
    HotInode,
}

/// Every testcase, in the order the summary lists them.
pub const ALL: [Testcase; 10] = [
    Testcase::Open3,
    Testcase::Open1,
    Testcase::OpenNeg,
    Testcase::Pseudo,
    Testcase::Creat,
    Testcase::TryLookup,
    Testcase::Stat2,
    Testcase::Lockref,
    Testcase::Inodes,
    Testcase::HotInode,
];

impl Testcase {
    /// The name used on the command line and in the outputs.
    pub fn name(self) -> &'static str {
        match self {
            Testcase::Open3 => "open3",
            Testcase::Open1 => "open1",
            Testcase::OpenNeg => "openneg",
            Testcase::Pseudo => "pseudo",
            Testcase::Creat => "creat",
            Testcase::TryLookup => "trylookup",
            Testcase::Stat2 => "stat2",
            Testcase::Lockref => "lockref",
            Testcase::Inodes => "inodes",
            Testcase::HotInode => "hotinode",
        }
    }

    /// Parses a testcase name.
    pub fn from_name(name: &str) -> Option<Testcase> {
        ALL.into_iter().find(|t| t.name() == name)
    }

    /// The variants, baseline first.
    pub fn variants(self) -> &'static [&'static str] {
        match self {
            Testcase::Open3 | Testcase::Open1 => &["get/put", "consume"],
            Testcase::OpenNeg => &["deferred fput", "token"],
            Testcase::Pseudo => &["root parent", "self parent"],
            Testcase::Creat => &["lock first", "lookup first"],
            Testcase::TryLookup => &["revalidate", "no revalidate"],
            Testcase::Stat2 => &["lookup line", "own line"],
            Testcase::Lockref => &[
                "fetch_add floor",
                "KernelRetry",
                "WaitUnlock",
                "ExpBackoff",
                "fetch_add word",
            ],
            Testcase::Inodes => &["virtiofsd", "lockref", "dashmap"],
            // The goal is the sharded map's, so it is the baseline.
            Testcase::HotInode => &["dashmap", "lockref", "lockref keep", "virtiofsd"],
        }
    }

    /// One line on what the testcase measures, for `wis --help`.
    pub fn describe(self) -> &'static str {
        match self {
            Testcase::Open3 => "open + close one shared file (seed 000: the file consumes the walk's references)",
            Testcase::Open1 => "open + close a file per thread (control: nothing shared, so no gain expected)",
            Testcase::OpenNeg => "open a name that does not exist (seed 001: the unopened file freed at once, nothing deferred)",
            Testcase::Pseudo => "allocate + free a pipe's dentry (seed 002: its own parent, so the pseudo root is not touched)",
            Testcase::Creat => "O_CREAT open + close of an existing file (seed 003: a lookup before the directory lock)",
            Testcase::TryLookup => "cached-name lookup on a revalidating filesystem (seed 004: no revalidation)",
            Testcase::Stat2 => "lookup + release of one name, lockref in its own cache line or in the lookup's",
            Testcase::Lockref => "get + put on one shared lockref: the fetch_add floor, each policy, the fetch_add word",
            Testcase::Inodes => "the FUSE inode table's share of LOOKUP/OPEN/READ/RELEASE/FORGET: virtiofsd-style vs lockref vs dashmap",
            Testcase::HotInode => "one hot directory and file cycling through zero (LOOKUP, GETATTR, FORGET): dashmap vs lockref (keeping none, or keeping forgotten inodes on its LRU) vs virtiofsd-style",
        }
    }

    /// What the seed reported, for the summary.
    pub fn seed_figure(self) -> &'static str {
        match self {
            Testcase::Open3 => "+39% at 20 cores (seed 000)",
            Testcase::Open1 => "control",
            Testcase::OpenNeg => "+49% at 1 task (seed 001)",
            Testcase::Pseudo => "27.5 s -> 23.8 s at 8 CPUs (seed 002)",
            Testcase::Creat => "18 s -> 10 s (seed 003)",
            Testcase::TryLookup => "more than 2x (seed 004)",
            Testcase::Stat2 => "+55% (d_lockref move)",
            Testcase::Lockref => "",
            Testcase::Inodes => "FUSE client (lockref-fuse)",
            Testcase::HotInode => "no convoy past the CPU count",
        }
    }

    /// The shared state for `variant` (an index into
    /// [`variants`](Self::variants)) and `threads` workers.
    pub fn setup(self, variant: usize, threads: usize) -> State {
        let seed_after = variant > 0;
        let dcache = |revalidate: bool| {
            let mut variants = Variants::BEFORE;
            match self {
                Testcase::Open3 | Testcase::Open1 => variants.open_consume = seed_after,
                Testcase::OpenNeg => variants.failed_open_token = seed_after,
                Testcase::Pseudo => variants.pseudo_self_parent = seed_after,
                Testcase::Creat => variants.creat_lookup_first = seed_after,
                Testcase::TryLookup => variants.try_lookup_skips_revalidate = seed_after,
                _ => {}
            }
            let cache = Dcache::new(Config {
                buckets: 1 << 12,
                revalidate,
                variants,
                ..Config::default()
            });
            cache.mkdir("/tmp").expect("fresh cache");
            cache.mkdir("/tmp/shared").expect("fresh cache");
            cache
        };
        match self {
            Testcase::Open3 | Testcase::Creat => {
                let cache = dcache(false);
                touch(&cache, "/tmp/shared/file");
                State::Dcache(cache)
            }
            Testcase::Open1 => {
                let cache = dcache(false);
                for t in 0..threads {
                    cache.mkdir(&format!("/tmp/t{t}")).expect("fresh dir");
                    touch(&cache, &format!("/tmp/t{t}/file"));
                }
                State::Dcache(cache)
            }
            Testcase::OpenNeg | Testcase::Pseudo => State::Dcache(dcache(false)),
            Testcase::TryLookup => {
                let cache = dcache(true);
                touch(&cache, "/tmp/shared/file");
                State::Dcache(cache)
            }
            Testcase::Stat2 => State::Stat2 {
                lookup_line: LookupLine::new(),
                own_line: OwnLine::new(),
                measure_own_line: seed_after,
            },
            Testcase::Lockref => match variant {
                0 => State::Floor(Floor::new()),
                1 => State::KernelRetry(LockRefGetPut::new()),
                2 => State::WaitUnlock(LockRefGetPut::new()),
                3 => State::ExpBackoff(LockRefGetPut::new()),
                _ => State::AddWord(AddWordGetPut::new()),
            },
            Testcase::Inodes => match variant {
                0 => State::VirtiofsdInodes(RequestMix::new()),
                1 => State::LockrefInodes(RequestMix::new()),
                _ => State::DashmapInodes(RequestMix::new()),
            },
            Testcase::HotInode => match variant {
                0 => State::DashmapHot(HotInode::new()),
                1 => State::LockrefHot(HotInode::new()),
                2 => State::LockrefKeepHot(HotInode::new()),
                _ => State::VirtiofsdHot(HotInode::new()),
            },
        }
    }

    /// A worker's context for `thread`: what it holds across iterations
    /// (its own path, a reference on the directory it looks in).
    ///
    /// # Errors
    ///
    /// The dcache's error if the setup it expects is missing.
    pub fn worker<'s>(self, state: &'s State, thread: usize) -> Result<Worker<'s>, Errno> {
        let dir = match (self, state) {
            (Testcase::TryLookup, State::Dcache(c)) => {
                Some(c.lookup_path("/tmp/shared")?.dentry().clone())
            }
            _ => None,
        };
        Ok(Worker {
            testcase: self,
            state,
            path: format!("/tmp/t{thread}/file"),
            dir,
        })
    }
}

/// One worker's view of a testcase.
pub struct Worker<'s> {
    testcase: Testcase,
    state: &'s State,
    path: String,
    dir: Option<lockref_dcache::DentryRef<'s>>,
}

impl Worker<'_> {
    /// One iteration of the loop body.
    ///
    /// # Errors
    ///
    /// The dcache's error if an operation that must succeed fails (or one
    /// that must fail succeeds: reported as `EINVAL`).
    #[inline]
    pub fn run_once(&self) -> Result<(), Errno> {
        match (self.testcase, self.state) {
            (Testcase::Open3, State::Dcache(c)) => {
                c.close(c.open("/tmp/shared/file", OpenFlags::RDONLY)?);
            }
            (Testcase::Open1, State::Dcache(c)) => {
                c.close(c.open(&self.path, OpenFlags::RDONLY)?);
            }
            (Testcase::OpenNeg, State::Dcache(c)) => {
                match c.open("/tmp/nonexistent", OpenFlags::RDONLY) {
                    Err(Errno::NoEnt) => {}
                    Err(e) => return Err(e),
                    Ok(_) => return Err(Errno::Inval),
                }
            }
            (Testcase::Pseudo, State::Dcache(c)) => drop(c.alloc_pseudo()),
            (Testcase::Creat, State::Dcache(c)) => {
                c.close(c.open("/tmp/shared/file", OpenFlags::WRONLY.creat())?);
            }
            (Testcase::TryLookup, State::Dcache(c)) => {
                let dir = self.dir.as_ref().ok_or(Errno::NoEnt)?;
                if c.try_lookup_noperm(dir, "file")?.is_none() {
                    return Err(Errno::NoEnt);
                }
            }
            (
                Testcase::Stat2,
                State::Stat2 {
                    lookup_line,
                    own_line,
                    measure_own_line,
                },
            ) => {
                if *measure_own_line {
                    own_line.stat();
                } else {
                    lookup_line.stat();
                }
            }
            (Testcase::Lockref, State::Floor(f)) => f.get_put(),
            (Testcase::Lockref, State::KernelRetry(r)) => r.get_put(),
            (Testcase::Lockref, State::WaitUnlock(r)) => r.get_put(),
            (Testcase::Lockref, State::ExpBackoff(r)) => r.get_put(),
            (Testcase::Lockref, State::AddWord(r)) => r.get_put(),
            (Testcase::Inodes, State::VirtiofsdInodes(m)) => m.run_once(),
            (Testcase::Inodes, State::LockrefInodes(m)) => m.run_once(),
            (Testcase::Inodes, State::DashmapInodes(m)) => m.run_once(),
            (Testcase::HotInode, State::VirtiofsdHot(m)) => m.run_once(),
            (Testcase::HotInode, State::LockrefHot(m)) => m.run_once(),
            (Testcase::HotInode, State::DashmapHot(m)) => m.run_once(),
            (Testcase::HotInode, State::LockrefKeepHot(m)) => m.run_once(),
            _ => return Err(Errno::Inval),
        }
        Ok(())
    }
}

fn touch(cache: &Dcache, path: &str) {
    cache.close(
        cache
            .open(path, OpenFlags::WRONLY.creat())
            .expect("create in a fresh cache"),
    );
}

/// A testcase's shared state. Built once per run, so the size difference
/// between variants does not matter.
#[allow(clippy::large_enum_variant)]
pub enum State {
    /// A dcache.
    Dcache(Dcache),
    /// The two dentry layouts of stat2, and which one is measured.
    Stat2 {
        /// Lockref in the lookup line.
        lookup_line: LookupLine,
        /// Lockref on its own line.
        own_line: OwnLine,
        /// Measure `own_line` (else `lookup_line`).
        measure_own_line: bool,
    },
    /// The fetch_add floor.
    Floor(Floor),
    /// A lockref with the kernel's retry loop.
    KernelRetry(LockRefGetPut<CasWord<KernelRetry>>),
    /// A lockref that spins while the lock is held, within the bound.
    WaitUnlock(LockRefGetPut<CasWord<WaitUnlock>>),
    /// A lockref with exponential backoff.
    ExpBackoff(LockRefGetPut<CasWord<ExpBackoff>>),
    /// The experimental fetch_add word.
    AddWord(AddWordGetPut),
    /// The virtiofsd-style FUSE inode table.
    VirtiofsdInodes(RequestMix<VirtiofsdTable>),
    /// The lockref FUSE inode table.
    LockrefInodes(RequestMix<LockrefTable<0>>),
    /// The FUSE inode table on `dashmap`'s sharded maps.
    DashmapInodes(RequestMix<DashmapTable>),
    /// The hot inode on the virtiofsd-style table.
    VirtiofsdHot(HotInode<VirtiofsdTable>),
    /// The hot inode on the lockref table.
    LockrefHot(HotInode<LockrefTable<0>>),
    /// The hot inode on the dashmap table.
    DashmapHot(HotInode<DashmapTable>),
    /// The hot inode on the lockref table that keeps forgotten inodes.
    LockrefKeepHot(HotInode<LockrefTable<KEEP_FORGOTTEN>>),
}

impl State {
    /// The dcache, for testcases that have one.
    pub fn dcache(&self) -> Option<&Dcache> {
        match self {
            State::Dcache(c) => Some(c),
            _ => None,
        }
    }
}
