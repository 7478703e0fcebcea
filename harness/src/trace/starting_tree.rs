//! The tree a recorded run started from, read off its trace by following
//! the names the trace itself makes, removes and moves: a name is in the
//! starting tree when the trace first finds it there without having made
//! it. A name found inside a directory the trace renamed is put back
//! where it was at the start; a name the trace made is not in it.

use std::collections::{BTreeMap, BTreeSet};

use super::{normalized, Op, OpKind};

/// The file that keeps a starting directory from being empty when an
/// `rmdir` of the recorded run found it so but the trace names nothing in
/// it.
pub const NOT_EMPTY: &str = ".replay-not-empty";

/// The tree the recorded run started from.
#[derive(Debug, Default)]
pub struct StartingTree {
    /// Directories, outermost first.
    pub dirs: BTreeSet<String>,
    /// Files.
    pub files: BTreeSet<String>,
}

/// What the trace says a name is at a point of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Dir,
    File,
    /// There, of a kind nothing has shown yet (a file unless a later
    /// operation goes through it).
    Exists,
    Absent,
}

#[derive(Debug)]
struct Known {
    seen: Seen,
    /// Where the name was in the starting tree, if it was there.
    origin: Option<String>,
}

/// `p`'s parent (`None` for the root).
fn parent(p: &str) -> Option<&str> {
    match p.rfind('/') {
        Some(0) if p.len() > 1 => Some("/"),
        Some(0) | None => None,
        Some(i) => Some(&p[..i]),
    }
}

/// The directories a walk of `path` enters, in order, each as a
/// normalized path: `/a/b/../c` enters `/a`, `/a/b` and (by `..`) `/a`
/// again, so `/a/b` must be a directory although the normalized path
/// `/a/c` does not name it.
fn dirs_walked(path: &str) -> Vec<String> {
    let comps: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let mut stack: Vec<&str> = Vec::new();
    let mut walked = Vec::new();
    for c in comps.iter().take(comps.len().saturating_sub(1)) {
        if *c == ".." {
            stack.pop();
            continue;
        }
        stack.push(c);
        walked.push(format!("/{}", stack.join("/")));
    }
    walked
}

fn is_at_or_under(p: &str, dir: &str) -> bool {
    p == dir || (p.starts_with(dir) && p.as_bytes().get(dir.len()) == Some(&b'/'))
}

/// The run's names as the trace has shown them so far.
#[derive(Default)]
struct Names {
    now: BTreeMap<String, Known>,
    start: BTreeMap<String, Seen>,
    /// Starting directories an `rmdir` found not empty.
    full: BTreeSet<String>,
}

impl Names {
    /// Where `p`, not known yet, was at the start: under its nearest known
    /// ancestor's starting place; `None` inside a directory the trace
    /// made (or removed), where nothing was at the start.
    fn origin_of(&self, p: &str) -> Option<String> {
        let mut up = parent(p);
        while let Some(a) = up {
            if let Some(k) = self.now.get(a) {
                return match (&k.origin, k.seen) {
                    (Some(o), Seen::Dir | Seen::Exists) => Some(format!("{o}{}", &p[a.len()..])),
                    _ => None,
                };
            }
            up = parent(a);
        }
        Some(p.to_string())
    }

    /// `p` is there now, as `seen`.
    fn found(&mut self, p: &str, seen: Seen) {
        if p == "/" {
            return;
        }
        if let Some(k) = self.now.get_mut(p) {
            if k.seen == Seen::Exists && seen != Seen::Exists {
                k.seen = seen;
                if let Some(o) = &k.origin {
                    self.start.insert(o.clone(), seen);
                }
            }
            return;
        }
        let origin = self.origin_of(p);
        if let Some(o) = &origin {
            self.start.insert(o.clone(), seen);
        }
        self.now.insert(p.to_string(), Known { seen, origin });
    }

    /// Every directory a walk of `path` (as recorded, `..` and all)
    /// enters is there now.
    fn found_parents(&mut self, path: &str) {
        for d in dirs_walked(path) {
            self.found(&d, Seen::Dir);
        }
    }

    /// The trace made `p` as `seen`.
    fn made(&mut self, p: &str, seen: Seen) {
        self.now.insert(p.to_string(), Known { seen, origin: None });
    }

    /// The trace removed `p` (and whatever was under it).
    fn removed(&mut self, p: &str) {
        self.now.retain(|k, _| !is_at_or_under(k, p));
        self.now.insert(
            p.to_string(),
            Known {
                seen: Seen::Absent,
                origin: None,
            },
        );
    }

    /// The trace moved `from` (and what is under it) to `to`.
    fn moved(&mut self, from: &str, to: &str) {
        if from == to {
            return;
        }
        let moving: Vec<String> = self
            .now
            .keys()
            .filter(|k| is_at_or_under(k, from))
            .cloned()
            .collect();
        let moving: Vec<(String, Known)> = moving
            .into_iter()
            .filter_map(|k| self.now.remove(&k).map(|v| (k, v)))
            .collect();
        self.now.retain(|k, _| !is_at_or_under(k, to));
        for (k, v) in moving {
            self.now.insert(format!("{to}{}", &k[from.len()..]), v);
        }
        self.now.insert(
            from.to_string(),
            Known {
                seen: Seen::Absent,
                origin: None,
            },
        );
    }

    /// Whether `p` is there now as far as the trace has shown.
    fn is_there(&self, p: &str) -> bool {
        self.now.get(p).is_some_and(|k| k.seen != Seen::Absent)
    }

    fn follow(&mut self, op: &Op) {
        let p = normalized(&op.path);
        let to = op.to.as_deref().map(normalized);
        if op.result.is_ok() {
            self.found_parents(&op.path);
            if let Some(to) = &op.to {
                self.found_parents(to);
            }
        }
        let failed_with = op.result.err();
        match (op.kind, op.result) {
            // Made unless already known to be there: a name first met by a
            // successful O_CREAT counts as made by it.
            (OpKind::Open(f), Ok(())) if f.is_creat() && !self.is_there(&p) => {
                self.made(&p, Seen::File);
            }
            (OpKind::Open(f), Ok(())) if f.is_creat() => {}
            (OpKind::Open(f), Ok(())) => {
                let seen = if f.is_directory() {
                    Seen::Dir
                } else {
                    Seen::Exists
                };
                self.found(&p, seen);
            }
            (OpKind::Stat, Ok(())) | (OpKind::Rename, Ok(())) => self.found(&p, Seen::Exists),
            (OpKind::Mkdir, Ok(())) => self.made(&p, Seen::Dir),
            (OpKind::Unlink | OpKind::Link, Ok(())) => self.found(&p, Seen::File),
            (OpKind::Rmdir, Ok(())) => self.found(&p, Seen::Dir),
            (OpKind::Symlink, Ok(())) => self.made(&p, Seen::File),
            _ => {}
        }
        match (op.kind, op.result) {
            (OpKind::Unlink | OpKind::Rmdir, Ok(())) => self.removed(&p),
            (OpKind::Rename, Ok(())) => {
                if let Some(to) = &to {
                    self.moved(&p, to);
                }
            }
            (OpKind::Link, Ok(())) => {
                if let Some(to) = &to {
                    self.made(to, Seen::File);
                }
            }
            _ => {}
        }
        if failed_with == Some(lockref_dcache::Errno::NoEnt) {
            // Every directory above that is known to be there is a
            // directory (through a file the error would be ENOTDIR), and a
            // name first met missing was not there at the start.
            let mut up = parent(&p);
            while let Some(a) = up {
                if self.now.get(a).is_some_and(|k| k.seen == Seen::Exists) {
                    self.found(a, Seen::Dir);
                }
                up = parent(a);
            }
            if !self.now.contains_key(&p) && op.kind != OpKind::Mkdir {
                self.now.insert(
                    p.clone(),
                    Known {
                        seen: Seen::Absent,
                        origin: None,
                    },
                );
            }
        }
        // A name found there by the error itself.
        match (op.kind, failed_with) {
            (
                OpKind::Open(_) | OpKind::Mkdir | OpKind::Symlink,
                Some(lockref_dcache::Errno::Exist),
            ) => {
                self.found_parents(&op.path);
                self.found(&p, Seen::Exists);
            }
            (OpKind::Rmdir, Some(lockref_dcache::Errno::NotEmpty)) => {
                self.found_parents(&op.path);
                self.found(&p, Seen::Dir);
                if let Some(o) = self.now.get(&p).and_then(|k| k.origin.clone()) {
                    self.full.insert(o);
                }
            }
            _ => {}
        }
    }
}

impl StartingTree {
    /// Reads it off a trace.
    pub fn of(ops: &[Op]) -> StartingTree {
        let mut names = Names::default();
        // Every name any operation goes through: one found there of no
        // known kind is a directory if one is (a header search's misses
        // go through directories it never opens).
        let mut through = BTreeSet::new();
        for op in ops {
            names.follow(op);
            through.extend(dirs_walked(&op.path));
        }
        let mut tree = StartingTree::default();
        for (p, seen) in names.start {
            match seen {
                Seen::Dir => {
                    tree.dirs.insert(p);
                }
                Seen::Exists if through.contains(&p) => {
                    tree.dirs.insert(p);
                }
                Seen::File | Seen::Exists => {
                    tree.files.insert(p);
                }
                Seen::Absent => {}
            }
        }
        // A directory an `rmdir` found not empty holds something the trace
        // never names: a file of that name keeps it from being removed.
        for d in names.full {
            tree.files.insert(format!("{d}/{NOT_EMPTY}"));
        }
        tree
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse;

    fn tree(text: &str) -> (Vec<String>, Vec<String>) {
        let t = StartingTree::of(&parse(text).unwrap());
        (t.dirs.into_iter().collect(), t.files.into_iter().collect())
    }

    #[test]
    fn a_walk_through_dot_dot_needs_the_directory_it_leaves() {
        assert_eq!(dirs_walked("/a/b/../c/f"), ["/a", "/a/b", "/a/c"]);
        let (dirs, files) = tree("stat /t/bits/../x/f - 0\n");
        assert_eq!(dirs, ["/t", "/t/bits", "/t/x"]);
        assert_eq!(files, ["/t/x/f"]);
    }

    #[test]
    fn names_the_trace_made_are_not_in_the_starting_tree() {
        let (dirs, files) = tree(
            "mkdir /t/out - 0\nopen /t/out/a.o O_WRONLY|O_CREAT 0\nstat /t/out/a.o - 0\nstat /t/src.c - 0\n",
        );
        assert_eq!(dirs, ["/t"]);
        assert_eq!(files, ["/t/src.c"]);
    }

    #[test]
    fn a_name_found_in_a_renamed_directory_is_put_back_where_it_was() {
        let (dirs, files) =
            tree("rename /t/old /t/new 0\nstat /t/new/inside - 0\nstat /t/new/sub/deeper - 0\n");
        assert_eq!(dirs, ["/t", "/t/old", "/t/old/sub"]);
        assert_eq!(files, ["/t/old/inside", "/t/old/sub/deeper"]);
    }

    #[test]
    fn removed_and_remade_names_start_as_first_found() {
        let (dirs, files) = tree(
            "unlink /t/f - 0\nopen /t/f O_WRONLY|O_CREAT 0\nrmdir /t/d - 0\nmkdir /t/d - 0\nlink /t/g /t/h 0\nrmdir /t/full - ENOTEMPTY\n",
        );
        assert_eq!(dirs, ["/t", "/t/d", "/t/full"]);
        assert_eq!(files, ["/t/f", "/t/full/.replay-not-empty", "/t/g"]);
    }
}
