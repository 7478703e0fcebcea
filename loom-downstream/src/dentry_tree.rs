//! A directory-entry tree as a VFS author would write it on
//! `lockref-table`, with no `unsafe`: entries keyed by their parent's id
//! and their name, each holding its parent's handle; negative entries;
//! create, unlink and rename that change the store first, then take the
//! names out of the lookups. Its loom models (`tests/loom_dentry.rs`)
//! follow the README's recipe for a crate on the table, with the branch
//! bound a tree's models need.

use std::cell::Cell;
use std::collections::HashMap;

use lockref_table::{Config, Handle, Table};

use crate::sync::{thread_local, AtomicU64, Mutex, Ordering};

/// A parent's id and a name.
pub type Key = (u64, String);

/// A counted entry of the tree.
pub type Dentry = Handle<Key, Entry>;

/// An entry: its parent (held while it lives), and its inode number, or
/// `None` for a negative entry.
pub struct Entry {
    /// The parent, `None` for the root.
    pub parent: Option<Dentry>,
    /// The inode number; `None`: no such name.
    pub ino: Option<u64>,
}

/// What a tree operation answers besides success.
#[derive(Debug, PartialEq, Eq)]
pub enum TreeError {
    /// No such name, or a lookup below a negative entry.
    NotFound,
    /// The name exists.
    Exists,
    /// The handle's entry was removed or renamed: walk again.
    Stale,
}

thread_local! {
    /// The store's lookups on this thread (a cache miss each), for
    /// models that check a hit did not reach the store. A `thread_local!`
    /// of this crate's, so from loom under `cfg(loom)` (step 3), whose
    /// macro takes no `const { .. }`.
    #[allow(clippy::missing_const_for_thread_local)]
    static STORE_LOOKUPS: Cell<u64> = Cell::new(0);
}

/// The store below the tree: (directory, name) to inode number.
struct Store {
    names: Mutex<HashMap<(u64, String), u64>>,
    next_ino: AtomicU64,
}

/// The root's inode number.
const ROOT: u64 = 1;

/// The tree: the table of entries, the store, and the root's entry.
pub struct DentryTree {
    table: Table<Key, Entry>,
    store: Store,
    root: Dentry,
}

impl DentryTree {
    /// A tree whose table has `buckets` buckets and keeps up to
    /// `max_unused` unused entries. Under loom a model wants both small.
    pub fn new(buckets: usize, max_unused: usize) -> Self {
        let config = Config {
            buckets,
            max_unused,
            ..Config::default()
        };
        let table = Table::with_keep(config, |_: &Key, _: &Entry| true);
        let root = table.find_or_insert_with((0, "/".into()), |_| Entry {
            parent: None,
            ino: Some(ROOT),
        });
        let store = Store {
            names: Mutex::new(HashMap::new()),
            next_ino: AtomicU64::new(ROOT + 1),
        };
        DentryTree { table, store, root }
    }

    /// The root's entry.
    pub fn root(&self) -> Dentry {
        self.root.clone()
    }

    /// The directory below `parent`, if a lookup may go there.
    fn dir_of(parent: &Dentry) -> Result<u64, TreeError> {
        if !parent.is_findable() {
            return Err(TreeError::Stale);
        }
        parent.ino.ok_or(TreeError::NotFound)
    }

    /// `name` below `parent`: cached, or made from the store (negative if
    /// the store has no such name). The store is read inside `make`, under
    /// the key's lock, so no remove of the name can slip past it.
    pub fn lookup(&self, parent: &Dentry, name: &str) -> Result<Dentry, TreeError> {
        let dir = Self::dir_of(parent)?;
        let key = (parent.id(), name.to_owned());
        let for_child = parent.clone();
        Ok(self.table.find_or_insert_with(key, |_| {
            STORE_LOOKUPS.with(|n| n.set(n.get() + 1));
            let ino = self
                .store
                .names
                .lock()
                .unwrap()
                .get(&(dir, name.to_owned()))
                .copied();
            Entry {
                parent: Some(for_child),
                ino,
            }
        }))
    }

    /// Creates `name` below `parent`; a cached negative entry goes.
    pub fn create(&self, parent: &Dentry, name: &str) -> Result<(), TreeError> {
        let dir = Self::dir_of(parent)?;
        {
            let mut names = self.store.names.lock().unwrap();
            if names.contains_key(&(dir, name.to_owned())) {
                return Err(TreeError::Exists);
            }
            let ino = self.store.next_ino.fetch_add(1, Ordering::Relaxed);
            names.insert((dir, name.to_owned()), ino);
        }
        self.table.remove(&(parent.id(), name.to_owned()));
        Ok(())
    }

    /// Unlinks `name` below `parent`.
    pub fn unlink(&self, parent: &Dentry, name: &str) -> Result<(), TreeError> {
        let dir = Self::dir_of(parent)?;
        let removed = self
            .store
            .names
            .lock()
            .unwrap()
            .remove(&(dir, name.to_owned()));
        removed.ok_or(TreeError::NotFound)?;
        self.table.remove(&(parent.id(), name.to_owned()));
        Ok(())
    }

    /// Renames `from` below `parent` to `to` below the same parent,
    /// replacing what `to` named.
    pub fn rename(&self, parent: &Dentry, from: &str, to: &str) -> Result<(), TreeError> {
        let dir = Self::dir_of(parent)?;
        {
            let mut names = self.store.names.lock().unwrap();
            let ino = names
                .remove(&(dir, from.to_owned()))
                .ok_or(TreeError::NotFound)?;
            names.insert((dir, to.to_owned()), ino);
        }
        self.table.rename(
            &(parent.id(), from.to_owned()),
            &(parent.id(), to.to_owned()),
        );
        Ok(())
    }

    /// The store's lookups made on this thread so far.
    pub fn store_lookups_here() -> u64 {
        STORE_LOOKUPS.with(Cell::get)
    }

    /// Entries in the table (the root's included).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the table is empty (never while the tree lives: the root).
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}
