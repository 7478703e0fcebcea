//! Random sequences of `mkdir`, `open` (with and without `O_CREAT`,
//! `O_EXCL`, `O_DIRECTORY`), `stat` and `unlink`, on paths with `.`, `..`,
//! trailing slashes and bad names, checked step by step against a
//! sequential model of a filesystem tree, for every seed's variant, with
//! and without revalidation, on a tiny and a larger table. Every count is
//! balanced at the end. A multi-threaded run checks only balance and that
//! nothing panics.

use std::collections::BTreeMap;

use lockref_dcache::{Config, Dcache, Errno, InodeKind, OpenFlags, Variants, NAME_MAX};
use proptest::prelude::*;

/// The model: every existing path (normalized components) and its kind;
/// the root (no components) is a directory.
#[derive(Default)]
struct Model {
    nodes: BTreeMap<Vec<String>, InodeKind>,
}

/// A path split as the cache splits it.
struct Parsed {
    parts: Vec<String>,
    trailing_slash: bool,
}

fn parse(path: &str) -> Result<Parsed, Errno> {
    if path.is_empty() {
        return Err(Errno::NoEnt);
    }
    if path.len() > lockref_dcache::PATH_MAX {
        return Err(Errno::NameTooLong);
    }
    if path.contains('\0') {
        return Err(Errno::Inval);
    }
    let parts: Vec<String> = path
        .split('/')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    // A component's length is judged only when the walk looks it up in a
    // directory (below), as Linux's filesystems do.
    if parts.len() > lockref_dcache::MAX_DEPTH {
        return Err(Errno::NameTooLong);
    }
    Ok(Parsed {
        trailing_slash: path.ends_with('/') && !parts.is_empty(),
        parts,
    })
}

impl Model {
    fn kind(&self, at: &[String]) -> Option<InodeKind> {
        if at.is_empty() {
            Some(InodeKind::Dir)
        } else {
            self.nodes.get(at).copied()
        }
    }

    /// Walks `parts` from the root: the path reached and what is there.
    fn walk(&self, parts: &[String]) -> Result<(Vec<String>, Option<InodeKind>), Errno> {
        let mut cur: Vec<String> = Vec::new();
        for part in parts {
            match self.kind(&cur) {
                Some(InodeKind::Dir) => {}
                Some(_) => return Err(Errno::NotDir),
                None => return Err(Errno::NoEnt),
            }
            match part.as_str() {
                "." => {}
                ".." => {
                    cur.pop();
                }
                name => {
                    long(name)?;
                    cur.push(name.to_string());
                }
            }
        }
        let kind = self.kind(&cur);
        Ok((cur, kind))
    }

    fn stat(&self, path: &str) -> Result<InodeKind, Errno> {
        let p = parse(path)?;
        match self.walk(&p.parts)?.1 {
            None => Err(Errno::NoEnt),
            Some(k) if p.trailing_slash && k != InodeKind::Dir => Err(Errno::NotDir),
            Some(k) => Ok(k),
        }
    }

    /// The directory that `dirs` names, which must exist.
    fn dir(&self, dirs: &[String]) -> Result<Vec<String>, Errno> {
        match self.walk(dirs)? {
            (at, Some(InodeKind::Dir)) => Ok(at),
            (_, Some(_)) => Err(Errno::NotDir),
            (_, None) => Err(Errno::NoEnt),
        }
    }

    /// The directory all but the last component name, which is walked
    /// first, then the last, judged: `on_root_or_dot` for the root, `.`
    /// and `..` (which are directories and cannot be made or removed),
    /// `ENAMETOOLONG` for a name too long. Linux judges in that order.
    fn parent_and_last<'p>(
        &self,
        p: &'p Parsed,
        on_root_or_dot: Errno,
    ) -> Result<(Vec<String>, &'p String), Errno> {
        let Some((last, dirs)) = p.parts.split_last() else {
            return Err(on_root_or_dot);
        };
        let at = self.dir(dirs)?;
        if last == "." || last == ".." {
            return Err(on_root_or_dot);
        }
        long(last)?;
        Ok((at, last))
    }

    fn open(&mut self, path: &str, flags: OpenFlags) -> Result<(), Errno> {
        OpenFlags::from_bits(flags.bits())?;
        let p = parse(path)?;
        let may_open = |kind: InodeKind| match kind {
            InodeKind::Dir if flags.is_write() => Err(Errno::IsDir),
            k if flags.is_directory() && k != InodeKind::Dir => Err(Errno::NotDir),
            _ => Ok(()),
        };
        if !flags.is_creat() {
            return may_open(self.stat(path)?);
        }
        // `O_CREAT` of `name/`: a directory is meant, which open does not
        // create, once the parent is walked; before the name's length.
        if p.trailing_slash {
            self.dir(&p.parts[..p.parts.len() - 1])?;
            return Err(Errno::IsDir);
        }
        let (mut at, last) = self.parent_and_last(&p, Errno::IsDir)?;
        at.push(last.clone());
        match self.nodes.get(&at) {
            Some(_) if flags.is_excl() => Err(Errno::Exist),
            Some(InodeKind::Dir) => Err(Errno::IsDir),
            Some(&k) => may_open(k),
            None => {
                self.nodes.insert(at, InodeKind::File);
                Ok(())
            }
        }
    }

    fn mkdir(&mut self, path: &str) -> Result<(), Errno> {
        let p = parse(path)?;
        let (mut at, last) = self.parent_and_last(&p, Errno::Exist)?;
        at.push(last.clone());
        if self.nodes.contains_key(&at) {
            return Err(Errno::Exist);
        }
        self.nodes.insert(at, InodeKind::Dir);
        Ok(())
    }

    fn unlink(&mut self, path: &str) -> Result<(), Errno> {
        let p = parse(path)?;
        let (mut at, last) = self.parent_and_last(&p, Errno::IsDir)?;
        at.push(last.clone());
        match self.nodes.get(&at) {
            None => Err(Errno::NoEnt),
            Some(InodeKind::Dir) => Err(Errno::IsDir),
            Some(_) if p.trailing_slash => Err(Errno::NotDir),
            Some(_) => {
                self.nodes.remove(&at);
                Ok(())
            }
        }
    }
}

/// `ENAMETOOLONG` for a component longer than `NAME_MAX`.
fn long(name: &str) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        Err(Errno::NameTooLong)
    } else {
        Ok(())
    }
}

#[derive(Clone, Debug)]
enum Op {
    Mkdir(String),
    Open(String, OpenFlags),
    Stat(String),
    Unlink(String),
}

fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(String::from),
        1 => Just(".".to_string()),
        1 => Just("..".to_string()),
        1 => Just("".to_string()),
        // Judged where the walk reaches it: under a file or a missing
        // directory the walk fails first.
        1 => Just("x".repeat(NAME_MAX + 1)),
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => (any::<bool>(), prop::collection::vec(component(), 0..4), any::<bool>()).prop_map(
            |(absolute, parts, trailing)| {
                let mut p = parts.join("/");
                if absolute {
                    p.insert(0, '/');
                }
                if trailing {
                    p.push('/');
                }
                p
            }
        ),
        1 => Just(format!("/a/{}", "x".repeat(NAME_MAX + 1))),
        1 => Just("/a\0b".to_string()),
    ]
}

fn flags() -> impl Strategy<Value = OpenFlags> {
    (0..3_u32, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(mode, creat, excl, directory)| {
            let bits = mode
                | if creat { 0o100 } else { 0 }
                | if excl { 0o200 } else { 0 }
                | if directory { 0o200000 } else { 0 };
            // `from_bits` refuses O_CREAT|O_DIRECTORY; build it anyway, the
            // way the builder methods can, to check that open refuses it.
            let mut f = [OpenFlags::RDONLY, OpenFlags::WRONLY, OpenFlags::RDWR][mode as usize];
            if bits & 0o100 != 0 {
                f = f.creat();
            }
            if bits & 0o200 != 0 {
                f = f.excl();
            }
            if bits & 0o200000 != 0 {
                f = f.directory();
            }
            f
        },
    )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        path().prop_map(Op::Mkdir),
        (path(), flags()).prop_map(|(p, f)| Op::Open(p, f)),
        path().prop_map(Op::Stat),
        path().prop_map(Op::Unlink),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        any::<[bool; 5]>(),
        any::<bool>(),
        prop_oneof![Just(1_usize), Just(64)],
        // No unused dentry kept (every allocation reclaims), a few, or
        // effectively unbounded: eviction must never change an answer.
        prop_oneof![Just(0_usize), Just(3), Just(usize::MAX)],
    )
        .prop_map(|(v, revalidate, buckets, max_unused)| Config {
            buckets,
            max_unused,
            revalidate,
            variants: Variants {
                open_consume: v[0],
                failed_open_token: v[1],
                pseudo_self_parent: v[2],
                creat_lookup_first: v[3],
                try_lookup_skips_revalidate: v[4],
            },
        })
}

fn apply(c: &Dcache, op: &Op) -> Result<Option<InodeKind>, Errno> {
    match op {
        Op::Mkdir(p) => c.mkdir(p).map(|()| None),
        Op::Open(p, f) => c.open(p, *f).map(|file| {
            c.close(file);
            None
        }),
        Op::Stat(p) => c.stat(p).map(|s| Some(s.kind)),
        Op::Unlink(p) => c.unlink(p).map(|()| None),
    }
}

fn apply_model(m: &mut Model, op: &Op) -> Result<Option<InodeKind>, Errno> {
    match op {
        Op::Mkdir(p) => m.mkdir(p).map(|()| None),
        Op::Open(p, f) => m.open(p, *f).map(|()| None),
        Op::Stat(p) => m.stat(p).map(Some),
        Op::Unlink(p) => m.unlink(p).map(|()| None),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 256 },
        // Miri's isolation refuses the current directory that the failure
        // file needs.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_cache_answers_as_the_model(config in config(), ops in prop::collection::vec(op(), 1..60)) {
        let c = Dcache::new(config);
        let mut m = Model::default();
        for (i, op) in ops.iter().enumerate() {
            let got = apply(&c, op);
            let want = apply_model(&mut m, op);
            prop_assert_eq!(got, want, "step {}: {:?}", i, op);
        }
        if let Err(e) = c.check_balanced() {
            prop_assert!(false, "{}", e);
        }
    }

    #[test]
    fn concurrent_sequences_stay_balanced(config in config(), ops in prop::collection::vec(op(), 4..40)) {
        let c = Dcache::new(config);
        std::thread::scope(|s| {
            for chunk in ops.chunks(ops.len().div_ceil(3)) {
                let c = &c;
                s.spawn(move || {
                    for op in chunk {
                        let _ = apply(c, op);
                    }
                });
            }
        });
        if let Err(e) = c.check_balanced() {
            prop_assert!(false, "{}", e);
        }
    }
}
