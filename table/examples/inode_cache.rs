//! An inode cache as a FUSE server keeps one, on `lockref_table::Table`,
//! with no `unsafe`: LOOKUP hands the kernel a reference, FORGET gives `n`
//! back (more than was given is refused), an unlinked inode dies with its
//! last reference while a linked one stays cached, teardown on drop; then
//! four threads do all of it at once and every count is checked.
//!
//! `cargo run -p lockref-table --example inode_cache`

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::thread;

use lockref_table::{Config, Table, TableError};

struct Inode {
    linked: AtomicBool,
}

static LIVE: AtomicUsize = AtomicUsize::new(0);

impl Drop for Inode {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Relaxed);
    }
}

fn new_inode(_id: u64) -> Inode {
    LIVE.fetch_add(1, Relaxed);
    Inode {
        linked: AtomicBool::new(true),
    }
}

fn main() {
    let config = Config {
        max_unused: 64,
        ..Config::default()
    };
    let cache = Table::with_keep(config, |_ino: &u64, i: &Inode| i.linked.load(Relaxed));
    // LOOKUP twice: one inode, two references for the kernel.
    let id = cache.hand_out(42, new_inode);
    assert_eq!(cache.hand_out(42, new_inode), id);
    // FORGET more than was given: refused, nothing changes.
    let refused = TableError::MoreThanHeld {
        id,
        forget: 3,
        held: 2,
    };
    assert_eq!(cache.forget(id, 3), Err(refused));
    cache.forget(id, 2).unwrap();
    assert_eq!(
        (cache.len(), cache.unused()),
        (1, 1),
        "linked: cached at zero"
    );
    // UNLINK while open: it dies with its last reference.
    let open = cache.get(id).unwrap();
    open.linked.store(false, Relaxed);
    open.dont_keep(); // listed at its FORGET: `keep` is not asked again
    drop(open);
    assert_eq!(cache.get(id).err(), Some(TableError::UnknownId(id)));
    // Four threads: lookups, forgets, opens and unlinks of 16 inodes.
    thread::scope(|s| {
        for t in 0..4u64 {
            let cache = &cache;
            s.spawn(move || {
                for i in 0..10_000u64 {
                    let inode = cache.find_or_insert_with((i + t) % 16, new_inode);
                    if i % 97 == 0 {
                        inode.linked.store(false, Relaxed);
                        inode.dont_keep();
                    }
                    let id = inode.into_id();
                    let open = cache.get(id).expect("the kernel's reference keeps it");
                    cache.forget(id, 1).expect("one was given");
                    drop(open);
                }
            });
        }
    });
    for inode in cache.handles() {
        assert_eq!((inode.count(), inode.peer_refs()), (1, 0), "balanced");
    }
    assert_eq!(LIVE.load(Relaxed), cache.len(), "every dead inode dropped");
    drop(cache);
    assert_eq!(LIVE.load(Relaxed), 0, "teardown drops the rest");
    println!("inode cache: every count balanced");
}
