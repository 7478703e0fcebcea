//! A directory-entry cache, the kernel's dcache in miniature, on
//! `lockref_table::Table`, with no `unsafe`:
//!
//! - an entry is keyed by (its parent's id, its name), and its value holds
//!   a handle on its parent, so a parent lives while any child does (the
//!   kernel's `d_parent` reference);
//! - a name the filesystem does not have gets a negative entry, so the
//!   next lookup of it is answered from the cache;
//! - create, unlink and rename change the filesystem first, then the
//!   cache: `Table::remove` and `Table::rename` take the names out of the
//!   lookups, linearizable with lookups in flight (their `make` reads the
//!   filesystem under the key's lock), and the next lookup makes the entry
//!   afresh;
//! - an entry is never re-keyed: a renamed directory gets a new entry (a
//!   new id), and what was cached below the old one is invalidated: a
//!   lookup through a handle on the old entry fails with `Stale` (the
//!   caller walks again from the root), and the shrinker reclaims it;
//! - entries nobody holds stay cached on the table's LRU, and
//!   `Table::shrink` is the shrinker: killing a cached child drops its
//!   handle on the parent, whose last reference then puts the parent on
//!   the LRU in turn, so shrinking until nothing dies empties the tree
//!   from the leaves up;
//! - four threads walk, create, unlink, rename and shrink at once; at the
//!   end, every entry reachable from the root says what the filesystem
//!   says, every count is balanced, and every entry is gone after the
//!   last shrink.
//!
//! `cargo run -p lockref-table --example dentry_tree`

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::thread;

use lockref_table::{Config, Handle, Table};

/// A parent's id and a name.
type Key = (u64, String);

/// A handle on an entry: one reference, given back when dropped.
type Dentry = Handle<Key, Entry>;

/// An entry of the tree.
struct Entry {
    /// The parent, held while this entry lives (`None` for the root).
    parent: Option<Dentry>,
    /// The inode, or `None` for a negative entry (no such name).
    inode: Option<Inode>,
}

/// An inode of the filesystem: its number, and whether it is a directory.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Inode {
    ino: u64,
    dir: bool,
}

/// What an operation on the tree can answer besides success.
#[derive(Debug, PartialEq)]
enum TreeError {
    /// No such name (`ENOENT`), or a lookup below a negative entry.
    NotFound,
    /// The name exists (`EEXIST`).
    Exists,
    /// A directory that is not empty (`ENOTEMPTY`).
    NotEmpty,
    /// Below a file, or a directory moved into itself (`ENOTDIR`, `EINVAL`).
    Invalid,
    /// The handle's entry was removed or renamed since it was looked up
    /// (`ESTALE`): walk again from the root.
    Stale,
}

/// Entries alive, for the balance checks.
static ENTRIES: AtomicUsize = AtomicUsize::new(0);
/// Lookups the filesystem answered (cache misses).
static FS_LOOKUPS: AtomicUsize = AtomicUsize::new(0);

impl Drop for Entry {
    fn drop(&mut self) {
        // The parent's handle goes with this entry: the table runs the
        // drop with none of its locks held, so it may be the parent's
        // last reference (its release then runs after this one's, on this
        // thread, however deep the chain).
        ENTRIES.fetch_sub(1, Relaxed);
    }
}

/// A directory of the filesystem: its parent and its names.
struct Dir {
    parent: u64,
    names: HashMap<String, Inode>,
}

/// The filesystem below the cache: directories by inode number, under one
/// lock (each call is atomic, as a filesystem's are to its callers).
struct Filesystem {
    dirs: Mutex<HashMap<u64, Dir>>,
    next_ino: AtomicU64,
}

/// The root directory's inode number.
const ROOT: u64 = 1;

impl Filesystem {
    fn new() -> Self {
        let root = Dir {
            parent: ROOT,
            names: HashMap::new(),
        };
        Filesystem {
            dirs: Mutex::new(HashMap::from([(ROOT, root)])),
            next_ino: AtomicU64::new(ROOT + 1),
        }
    }

    /// `name` in directory `dir` (a stand-in for the slow call).
    fn lookup(&self, dir: u64, name: &str) -> Option<Inode> {
        FS_LOOKUPS.fetch_add(1, Relaxed);
        let dirs = self.dirs.lock().unwrap();
        dirs.get(&dir)?.names.get(name).copied()
    }

    fn create(&self, dir: u64, name: &str, is_dir: bool) -> Result<(), TreeError> {
        let mut dirs = self.dirs.lock().unwrap();
        let names = &mut dirs.get_mut(&dir).ok_or(TreeError::NotFound)?.names;
        if names.contains_key(name) {
            return Err(TreeError::Exists);
        }
        let ino = self.next_ino.fetch_add(1, Relaxed);
        names.insert(name.into(), Inode { ino, dir: is_dir });
        if is_dir {
            let names = HashMap::new();
            dirs.insert(ino, Dir { parent: dir, names });
        }
        Ok(())
    }

    fn unlink(&self, dir: u64, name: &str) -> Result<(), TreeError> {
        let mut dirs = self.dirs.lock().unwrap();
        let names = &dirs.get(&dir).ok_or(TreeError::NotFound)?.names;
        let inode = *names.get(name).ok_or(TreeError::NotFound)?;
        if inode.dir && !dirs[&inode.ino].names.is_empty() {
            return Err(TreeError::NotEmpty);
        }
        dirs.remove(&inode.ino);
        dirs.get_mut(&dir).unwrap().names.remove(name);
        Ok(())
    }

    /// Moves `from` (in directory `from_dir`) to `to` in `to_dir`,
    /// replacing a file there, or an empty directory.
    fn rename(&self, from_dir: u64, from: &str, to_dir: u64, to: &str) -> Result<(), TreeError> {
        let mut dirs = self.dirs.lock().unwrap();
        let moved = *dirs
            .get(&from_dir)
            .and_then(|d| d.names.get(from))
            .ok_or(TreeError::NotFound)?;
        let target = dirs.get(&to_dir).ok_or(TreeError::NotFound)?;
        // A directory may not move below itself.
        let mut up = to_dir;
        while moved.dir && up != ROOT {
            if up == moved.ino {
                return Err(TreeError::Invalid);
            }
            up = dirs[&up].parent;
        }
        if let Some(replaced) = target.names.get(to).copied() {
            if replaced.ino == moved.ino {
                return Ok(());
            }
            if replaced.dir != moved.dir {
                return Err(TreeError::Invalid);
            }
            if replaced.dir && !dirs[&replaced.ino].names.is_empty() {
                return Err(TreeError::NotEmpty);
            }
            dirs.remove(&replaced.ino);
        }
        dirs.get_mut(&from_dir).unwrap().names.remove(from);
        dirs.get_mut(&to_dir)
            .unwrap()
            .names
            .insert(to.into(), moved);
        if moved.dir {
            dirs.get_mut(&moved.ino).unwrap().parent = to_dir;
        }
        Ok(())
    }
}

/// The cache, its root held for its life, and the filesystem below.
struct Dcache {
    table: Table<Key, Entry>,
    root: Dentry,
    fs: Filesystem,
}

impl Dcache {
    fn new(fs: Filesystem, max_unused: usize) -> Self {
        let config = Config {
            max_unused,
            ..Config::default()
        };
        // Every entry, positive or negative, stays cached at zero, within
        // the bound.
        let table = Table::with_keep(config, |_: &Key, _: &Entry| true);
        let root = table.find_or_insert_with((0, "/".into()), |_| {
            ENTRIES.fetch_add(1, Relaxed);
            let inode = Some(Inode {
                ino: ROOT,
                dir: true,
            });
            Entry {
                parent: None,
                inode,
            }
        });
        Dcache { table, root, fs }
    }

    /// The directory `parent` names, if it may be looked up below.
    fn dir_of(parent: &Dentry) -> Result<u64, TreeError> {
        if !parent.is_findable() {
            return Err(TreeError::Stale);
        }
        match parent.inode {
            Some(Inode { ino, dir: true }) => Ok(ino),
            Some(_) => Err(TreeError::Invalid),
            None => Err(TreeError::NotFound),
        }
    }

    /// `name` in `parent`: the cached entry, or one made from the
    /// filesystem's answer (negative if it has no such name).
    fn lookup(&self, parent: &Dentry, name: &str) -> Result<Dentry, TreeError> {
        let dir = Self::dir_of(parent)?;
        let key = (parent.id(), name.to_owned());
        if let Some(found) = self.table.find(&key) {
            return Ok(found);
        }
        // The parent's reference for the child, taken outside the table's
        // locks. If another thread inserts the name first, this clone is
        // dropped unused; the caller's own handle keeps that drop from
        // being the last.
        let for_child = parent.clone();
        // `make` reads the filesystem under the key's bucket lock: a
        // remove or rename of the name waits for it, or it reads after.
        Ok(self.table.find_or_insert_with(key, move |_id| {
            ENTRIES.fetch_add(1, Relaxed);
            Entry {
                parent: Some(for_child),
                inode: self.fs.lookup(dir, name),
            }
        }))
    }

    /// Walks `path` ("a/b/c") from the root: the last entry, positive or
    /// negative.
    fn walk(&self, path: &str) -> Result<Dentry, TreeError> {
        let mut at = self.root.clone();
        for name in path.split('/').filter(|n| !n.is_empty()) {
            at = self.lookup(&at, name)?;
        }
        Ok(at)
    }

    /// Creates `name` in `parent`; its negative entry, if cached, goes.
    fn create(&self, parent: &Dentry, name: &str, is_dir: bool) -> Result<Dentry, TreeError> {
        self.fs.create(Self::dir_of(parent)?, name, is_dir)?;
        self.table.remove(&(parent.id(), name.to_owned()));
        self.lookup(parent, name)
    }

    fn unlink(&self, parent: &Dentry, name: &str) -> Result<(), TreeError> {
        self.fs.unlink(Self::dir_of(parent)?, name)?;
        self.table.remove(&(parent.id(), name.to_owned()));
        Ok(())
    }

    fn rename(&self, from: (&Dentry, &str), to: (&Dentry, &str)) -> Result<(), TreeError> {
        let (from_dir, to_dir) = (Self::dir_of(from.0)?, Self::dir_of(to.0)?);
        self.fs.rename(from_dir, from.1, to_dir, to.1)?;
        self.table.rename(
            &(from.0.id(), from.1.to_owned()),
            &(to.0.id(), to.1.to_owned()),
        );
        Ok(())
    }

    /// Shrinks until nothing more dies: every cached entry, leaves first.
    fn shrink_all(&self) -> usize {
        let mut killed = 0;
        loop {
            let n = self.table.shrink(self.table.unused().max(1));
            if n == 0 {
                return killed;
            }
            killed += n;
        }
    }

    /// Every entry reachable from the root (it and its ancestors
    /// findable) says what the filesystem says of its name, and every
    /// count is its children's references, plus the root's own handle,
    /// plus `handles()`'s. Run at rest.
    fn check(&self) {
        let entries = self.table.handles();
        let reachable = |mut e: &Dentry| loop {
            if !e.is_findable() {
                return false;
            }
            match &e.parent {
                Some(parent) => e = parent,
                None => return true,
            }
        };
        for entry in &entries {
            if let (true, Some(parent)) = (reachable(entry), &entry.parent) {
                let dir = parent.inode.expect("a parent is positive").ino;
                assert_eq!(entry.inode, self.fs.lookup(dir, &entry.key().1), "coherent");
            }
            let children = entries
                .iter()
                .filter(|c| c.parent.as_ref().is_some_and(|p| Handle::ptr_eq(p, entry)))
                .count();
            let own = usize::from(Handle::ptr_eq(entry, &self.root));
            assert_eq!(entry.count() as usize, 1 + children + own, "balanced");
        }
    }
}

fn main() {
    let cache = Dcache::new(Filesystem::new(), 64);
    let root = cache.root.clone();

    // Create, then walk: a second walk is answered by the cache.
    let usr = cache.create(&root, "usr", true).unwrap();
    let lib = cache.create(&usr, "lib", true).unwrap();
    cache.create(&lib, "libc.so", false).unwrap();
    let lookups = FS_LOOKUPS.load(Relaxed);
    let libc = cache.walk("usr/lib/libc.so").unwrap();
    assert!(libc.inode.is_some());
    assert_eq!(FS_LOOKUPS.load(Relaxed), lookups, "cached by the creates");

    // A missing name gets a negative entry, found again without the
    // filesystem; a create replaces it.
    assert!(cache.walk("usr/lib/libm.so").unwrap().inode.is_none());
    assert!(cache.walk("usr/lib/libm.so").unwrap().inode.is_none());
    assert_eq!(
        FS_LOOKUPS.load(Relaxed),
        lookups + 1,
        "the negative entry answered"
    );
    cache.create(&lib, "libm.so", false).unwrap();
    assert!(cache.walk("usr/lib/libm.so").unwrap().inode.is_some());
    assert_eq!(
        cache.walk("usr/lib/libc.so/x").err(),
        Some(TreeError::Invalid)
    );

    // Unlink: the name is negative at its next lookup; a handle held
    // says its entry was removed.
    cache.unlink(&lib, "libm.so").unwrap();
    assert!(cache.walk("usr/lib/libm.so").unwrap().inode.is_none());
    assert_eq!(cache.unlink(&lib, "libm.so"), Err(TreeError::NotFound));
    assert_eq!(cache.unlink(&usr, "lib"), Err(TreeError::NotEmpty));

    // Rename a directory: the new name is a new entry for the same inode;
    // below it the names are looked up again; a lookup through the old
    // entry is stale.
    cache.rename((&usr, "lib"), (&usr, "lib64")).unwrap();
    assert!(!lib.is_findable());
    assert_eq!(cache.lookup(&lib, "libc.so").err(), Some(TreeError::Stale));
    let lib64 = cache.walk("usr/lib64").unwrap();
    assert_eq!(lib64.inode, lib.inode, "the same directory");
    assert_ne!(lib64.id(), lib.id(), "a new entry");
    assert!(cache.walk("usr/lib").unwrap().inode.is_none());
    assert_eq!(cache.walk("usr/lib64/libc.so").unwrap().inode, libc.inode);
    assert_eq!(
        cache.rename((&root, "usr"), (&lib64, "usr")),
        Err(TreeError::Invalid),
        "not below itself"
    );
    drop((usr, lib, lib64, libc, root));
    cache.check();

    // The shrinker: what nobody holds dies, leaves first.
    cache.shrink_all();
    assert_eq!(cache.table.len(), 1, "the root alone");
    assert_eq!(ENTRIES.load(Relaxed), 1);

    // Four threads at once, on a few names in a few directories: walks,
    // creates, unlinks, renames (within and across directories), and a
    // shrinker; the bound is small so the LRU reclaims on inserts too.
    let names = ["a", "b", "c", "d"];
    thread::scope(|s| {
        for t in 0..4u64 {
            let (cache, names) = (&cache, &names);
            s.spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ (t + 1);
                let mut next = |n: usize| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (rng % n as u64) as usize
                };
                let mut held = Vec::new();
                for i in 0..3_000usize {
                    let dir = match next(3) {
                        0 => String::new(),
                        1 => names[next(4)].to_owned(),
                        _ => format!("{}/{}", names[next(4)], names[next(4)]),
                    };
                    let name = names[next(4)];
                    // Errors (stale handles, names taken or gone) are the
                    // races this exercises: each leaves the tree as it was.
                    let Ok(parent) = cache.walk(&dir) else {
                        continue;
                    };
                    let _ = match next(10) {
                        0 | 1 => cache.create(&parent, name, next(2) == 0).map(drop),
                        2 => cache.unlink(&parent, name),
                        3 => match cache.walk(names[next(4)]) {
                            Ok(to) => cache.rename((&parent, name), (&to, names[next(4)])),
                            Err(e) => Err(e),
                        },
                        _ => cache.lookup(&parent, name).map(|d| held.push(d)),
                    };
                    if held.len() > 3 {
                        held.remove(0);
                    }
                    if t == 0 && i % 64 == 0 {
                        cache.table.shrink(2);
                    }
                }
            });
        }
    });
    cache.check();
    cache.shrink_all();
    assert_eq!(cache.table.len(), 1, "the root alone");
    drop(cache);
    assert_eq!(ENTRIES.load(Relaxed), 0, "every entry dropped");
    println!(
        "dentry tree: create, unlink, rename, negative entries, the shrinker and four threads; every count balanced, the tree coherent"
    );
}
