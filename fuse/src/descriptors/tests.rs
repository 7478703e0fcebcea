//! The descriptor cache's tests: the budget, the clock's second
//! chances, evictions under requests, the sweep and pinned descriptors.

use super::*;

fn fd() -> OwnedFd {
    std::fs::File::open("/dev/null").unwrap().into()
}

fn holds(slot: &DescriptorSlot) -> bool {
    slot.fd.read().unwrap().is_some()
}

#[test]
fn the_cache_never_holds_more_than_its_budget() {
    let cache = Descriptors::new(8);
    let slots: Vec<Arc<DescriptorSlot>> = (0..100).map(|_| Arc::default()).collect();
    for (i, s) in slots.iter().enumerate() {
        drop(cache.install(s, fd()));
        assert!(cache.stats().cached <= 8);
        let held = slots[..=i].iter().filter(|s| holds(s)).count();
        assert_eq!(held, (i + 1).min(8), "descriptors past the budget");
    }
    assert_eq!(slots.iter().filter(|s| holds(s)).count(), 8);
    let stats = cache.stats();
    assert_eq!((stats.reopens, stats.evictions), (100, 92));
}

#[test]
fn a_used_slot_gets_a_second_chance() {
    let cache = Descriptors::new(2);
    let (a, b, c) = (Arc::default(), Arc::default(), Arc::default());
    drop(cache.install(&a, fd()));
    drop(cache.install(&b, fd()));
    assert!(Descriptors::cached(&a).is_some(), "a hit marks a used");
    drop(cache.install(&c, fd()));
    assert!(holds(&a), "the used slot stays");
    assert!(!holds(&b), "the unused one goes");
    assert!(holds(&c));
}

#[test]
fn an_evicted_descriptor_lives_while_a_request_holds_it() {
    let cache = Descriptors::new(1);
    let (a, b) = (Arc::default(), Arc::default());
    let in_flight = cache.install(&a, fd());
    drop(cache.install(&b, fd()));
    assert!(!holds(&a));
    assert_eq!(
        Arc::strong_count(&in_flight),
        1,
        "the request's is the last"
    );
    // Still open: the request can use it.
    assert!(nix::fcntl::fcntl(&*in_flight, nix::fcntl::FcntlArg::F_GETFD).is_ok());
}

#[test]
fn a_dead_inodes_entry_is_reclaimed_without_counting_an_eviction() {
    let cache = Descriptors::new(1);
    let a: Arc<DescriptorSlot> = Arc::default();
    drop(cache.install(&a, fd()));
    drop(a);
    let b = Arc::default();
    drop(cache.install(&b, fd()));
    assert_eq!(cache.stats().evictions, 0);
    assert_eq!(cache.stats().cached, 1);
}

#[test]
fn a_slot_filled_meanwhile_keeps_its_descriptor() {
    let cache = Descriptors::new(4);
    let a = Arc::default();
    let first = cache.install(&a, fd());
    let second = cache.install(&a, fd());
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(cache.stats().cached, 1);
}

#[test]
fn a_first_eviction_makes_the_handle_that_reopens_the_inode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, "x").unwrap();
    let cache = Descriptors::new(1);
    let a = Arc::new(DescriptorSlot::holding(
        std::fs::File::open(&path).unwrap().into(),
    ));
    cache.register(&a);
    assert!(a.handle.get().is_none(), "no handle while cached");
    drop(cache.install(&Arc::default(), fd()));
    let stats = cache.stats();
    assert_eq!((stats.evictions, stats.unhandled), (1, 0));
    assert!(!holds(&a));
    let handle = a.handle.get().expect("made by the eviction");
    if nix::unistd::geteuid().is_root() {
        let root = std::fs::File::open(dir.path()).unwrap();
        let again = file_handle::open_handle(root.as_fd(), handle).unwrap();
        let (x, y) = (
            nix::sys::stat::stat(&path).unwrap(),
            nix::sys::stat::fstat(&again).unwrap(),
        );
        assert_eq!((x.st_dev, x.st_ino), (y.st_dev, y.st_ino));
    }
}

#[test]
fn an_inode_with_no_handle_keeps_its_descriptor_out_of_the_clock() {
    // A pipe's filesystem gives no file handles.
    let (read_end, _write_end) = nix::unistd::pipe().unwrap();
    let cache = Descriptors::new(1);
    let a = Arc::new(DescriptorSlot::holding(read_end));
    cache.register(&a);
    let b = Arc::default();
    drop(cache.install(&b, fd()));
    assert!(holds(&a), "nothing to reopen it by: kept");
    assert!(holds(&b));
    let stats = cache.stats();
    assert_eq!(
        (stats.cached, stats.evictions, stats.unhandled, stats.pinned),
        (1, 0, 1, 1),
        "out of the clock, counted apart"
    );
    drop(a);
    assert_eq!(cache.stats().pinned, 0, "its place comes back with it");
}

#[test]
fn a_descriptor_of_a_file_deleted_on_the_host_is_closed_by_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let (gone, kept) = (dir.path().join("gone"), dir.path().join("kept"));
    std::fs::write(&gone, "x").unwrap();
    std::fs::write(&kept, "x").unwrap();
    let cache = Descriptors::new(8);
    let slot = |p: &std::path::Path| {
        let slot = Arc::new(DescriptorSlot::holding(
            std::fs::File::open(p).unwrap().into(),
        ));
        cache.register(&slot);
        slot
    };
    let (a, b) = (slot(&gone), slot(&kept));
    assert_eq!(cache.close_deleted(), 0, "nothing deleted yet");
    std::fs::remove_file(&gone).unwrap();
    assert_eq!(cache.close_deleted(), 1);
    assert!(!holds(&a), "closed");
    assert!(a.handle.get().is_some(), "with its handle made first");
    assert!(holds(&b));
    let stats = cache.stats();
    assert_eq!(
        (stats.cached, stats.deleted_closed),
        (1, 1),
        "its entry left the clock"
    );
    assert_eq!(cache.close_deleted(), 0);
    drop(b);
    assert_eq!(
        cache.stats().cached,
        1,
        "a dead inode's entry waits for the hand"
    );
    cache.close_deleted();
    assert_eq!(cache.stats().cached, 0, "or for the sweep");
}

#[test]
fn pinned_descriptors_count_against_the_budget() {
    let cache = Descriptors::new(4);
    let pinned: Vec<Arc<DescriptorSlot>> = (0..2)
        .map(|_| {
            let slot = Arc::new(DescriptorSlot::holding(fd()));
            cache.pin(&slot);
            slot
        })
        .collect();
    assert!(!cache.may_pin(), "half the budget is pinned");
    let slots: Vec<Arc<DescriptorSlot>> = (0..10).map(|_| Arc::default()).collect();
    for s in &slots {
        drop(cache.install(s, fd()));
    }
    let held = slots.iter().filter(|s| holds(s)).count();
    assert_eq!(held, 2, "the clock has what the pinned leave");
    drop(pinned);
    assert!(cache.may_pin());
    for s in &slots {
        drop(cache.install(s, fd()));
    }
    assert_eq!(slots.iter().filter(|s| holds(s)).count(), 4);
}
