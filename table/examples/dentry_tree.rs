//! A directory-entry cache, the kernel's dcache in miniature, on
//! `lockref_table::Table`, with no `unsafe`:
//!
//! - an entry is keyed by (its parent's id, its name), and its value holds
//!   a handle on its parent, so a parent lives while any child does (the
//!   kernel's `d_parent` reference);
//! - a name the filesystem does not have gets a negative entry, so the
//!   next lookup of it is answered from the cache;
//! - entries nobody holds stay cached on the table's LRU, and
//!   `Table::shrink` is the shrinker: killing a cached child drops its
//!   handle on the parent, whose last reference then puts the parent on
//!   the LRU in turn, so shrinking until nothing dies empties the tree
//!   from the leaves up;
//! - four threads walk, look up missing names and shrink at once, and at
//!   the end every count is balanced and every entry is gone.
//!
//! `cargo run -p lockref-table --example dentry_tree`

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
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
    /// The inode number, or `None` for a negative entry (no such name).
    inode: Option<u64>,
}

/// Entries alive, for the balance checks.
static ENTRIES: AtomicUsize = AtomicUsize::new(0);
/// Lookups the filesystem answered (cache misses).
static FS_LOOKUPS: AtomicUsize = AtomicUsize::new(0);

impl Drop for Entry {
    fn drop(&mut self) {
        // The parent's handle goes with this entry: the table runs the
        // drop with none of its locks held, so it may be the parent's
        // last reference.
        ENTRIES.fetch_sub(1, Relaxed);
    }
}

/// The filesystem below the cache: the paths that exist.
struct Filesystem {
    paths: HashSet<String>,
}

impl Filesystem {
    /// `path`'s inode number if it exists (a stand-in for the slow call).
    fn lookup(&self, path: &str) -> Option<u64> {
        FS_LOOKUPS.fetch_add(1, Relaxed);
        self.paths.contains(path).then(|| {
            path.bytes()
                .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        })
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
            Entry {
                parent: None,
                inode: Some(1),
            }
        });
        Dcache { table, root, fs }
    }

    /// `name` in `parent`: the cached entry, or one made from the
    /// filesystem's answer (negative if it has no such name).
    fn lookup(&self, parent: &Dentry, parent_path: &str, name: &str) -> Dentry {
        let key = (parent.id(), name.to_owned());
        if let Some(found) = self.table.find(&key) {
            return found;
        }
        // The parent's reference for the child, taken outside the table's
        // locks (`make` runs under the key's bucket lock). If another
        // thread inserts the name first, this clone is dropped unused;
        // the caller's own handle keeps that drop from being the last.
        let for_child = parent.clone();
        let path = format!("{parent_path}/{name}");
        self.table.find_or_insert_with(key, move |_id| {
            ENTRIES.fetch_add(1, Relaxed);
            Entry {
                parent: Some(for_child),
                inode: self.fs.lookup(&path),
            }
        })
    }

    /// Walks `path` ("a/b/c") from the root: the last entry, positive or
    /// negative, or `None` if a directory on the way does not exist.
    fn walk(&self, path: &str) -> Option<Dentry> {
        let mut at = self.root.clone();
        let mut at_path = String::new();
        for name in path.split('/') {
            // A negative entry has no children: the walk ends.
            at.inode?;
            let next = self.lookup(&at, &at_path, name);
            at_path = format!("{at_path}/{name}");
            at = next;
        }
        Some(at)
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
}

fn main() {
    let fs = Filesystem {
        paths: ["/usr", "/usr/lib", "/usr/lib/libc.so", "/usr/bin", "/etc"]
            .into_iter()
            .map(String::from)
            .collect(),
    };
    let cache = Dcache::new(fs, 64);

    // A walk makes the path's entries; a second walk finds them cached.
    let libc = cache
        .walk("usr/lib/libc.so")
        .expect("the directories exist");
    assert!(libc.inode.is_some());
    assert_eq!(FS_LOOKUPS.load(Relaxed), 3);
    assert!(Handle::ptr_eq(
        &cache.walk("usr/lib/libc.so").unwrap(),
        &libc
    ));
    assert_eq!(FS_LOOKUPS.load(Relaxed), 3, "cached");

    // A missing name gets a negative entry, found again without the
    // filesystem.
    let missing = cache.walk("usr/lib/libfoo.so").unwrap();
    assert!(missing.inode.is_none());
    drop(missing);
    assert!(cache.walk("usr/lib/libfoo.so").unwrap().inode.is_none());
    assert_eq!(FS_LOOKUPS.load(Relaxed), 4, "the negative entry answered");
    assert!(
        cache.walk("etc/passwd/x").is_none(),
        "no directory on the way"
    );

    // A child holds its parent: "lib" is referenced by its two children
    // (cached or not) and not on the LRU.
    let lib = cache.walk("usr/lib").unwrap();
    assert_eq!(lib.count(), 3, "this handle and the two children's");
    drop(lib);

    // The shrinker: what nobody holds dies, leaves first; libc.so, held,
    // stays, and holds its parents.
    cache.shrink_all();
    assert_eq!(cache.table.len(), 4, "/, usr, lib and libc.so");
    drop(libc);
    cache.shrink_all();
    assert_eq!(cache.table.len(), 1, "the root alone");
    assert_eq!(ENTRIES.load(Relaxed), 1);

    // Four threads: walks of positive and negative names, handles held a
    // while, and a shrinker, at once; the bound is small so the LRU
    // reclaims on inserts too.
    let paths = [
        "usr/lib/libc.so",
        "usr/lib/libm.so",
        "usr/bin/cc",
        "usr/bin",
        "etc/hosts",
        "etc",
        "usr/share/x",
    ];
    let Dcache { table, root, fs } = cache;
    drop(root);
    drop(table);
    assert_eq!(ENTRIES.load(Relaxed), 0, "the table's drop killed the root");
    let cache = Dcache::new(fs, 4);
    thread::scope(|s| {
        for t in 0..4usize {
            let cache = &cache;
            s.spawn(move || {
                let mut held = Vec::new();
                for i in 0..5_000usize {
                    let path = paths[(i * 7 + t) % paths.len()];
                    if let Some(d) = cache.walk(path) {
                        held.push(d);
                    }
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
    // Balanced: every entry's count is its children's references (each
    // child, cached or not, holds one) plus the root's own handle.
    let entries = cache.table.handles();
    for entry in &entries {
        let children = entries
            .iter()
            .filter(|c| c.parent.as_ref().is_some_and(|p| Handle::ptr_eq(p, entry)))
            .count();
        let own = usize::from(Handle::ptr_eq(entry, &cache.root));
        // `handles()` took one reference on each.
        assert_eq!(entry.count() as usize, 1 + children + own, "balanced");
    }
    drop(entries);
    cache.shrink_all();
    assert_eq!(cache.table.len(), 1, "the root alone");
    drop(cache);
    assert_eq!(ENTRIES.load(Relaxed), 0, "every entry dropped");
    println!(
        "dentry tree: walks, negative entries, the shrinker and four threads, every count balanced"
    );
}
