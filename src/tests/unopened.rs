//! `Unopened` and `Opened`: release frees at once, open hands the token
//! over with no count moved, a failed open hands it back, the last
//! `Opened` put goes to the deferred release.

use core::ptr::NonNull;
use std::boxed::Box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::{OpenCount, Openable, Unopened};

#[derive(Debug, Default)]
struct Counts {
    freed: AtomicUsize,
    released: AtomicUsize,
}

#[derive(Debug)]
struct File {
    count: OpenCount,
    path: Option<&'static str>,
    counts: Arc<Counts>,
}

// SAFETY: files are only made by `alloc` (a `Box`); both frees free it.
unsafe impl Openable for File {
    fn open_count(&self) -> &OpenCount {
        &self.count
    }

    unsafe fn free(this: NonNull<Self>) {
        // SAFETY: from `alloc`'s box, unreferenced.
        let f = unsafe { Box::from_raw(this.as_ptr()) };
        f.counts.freed.fetch_add(1, Ordering::Relaxed);
    }

    unsafe fn release_opened(this: NonNull<Self>) {
        // SAFETY: as above.
        let f = unsafe { Box::from_raw(this.as_ptr()) };
        assert!(f.path.is_some(), "only opened files get here");
        f.counts.released.fetch_add(1, Ordering::Relaxed);
    }
}

fn alloc(counts: &Arc<Counts>) -> Unopened<File> {
    let f = Box::new(File {
        count: OpenCount::new(),
        path: None,
        counts: counts.clone(),
    });
    // SAFETY: a new object, count one, referenced from nowhere else.
    unsafe { Unopened::from_raw(NonNull::from(Box::leak(f))) }
}

fn counts() -> Arc<Counts> {
    Arc::default()
}

#[test]
fn release_and_drop_free_at_once() {
    let c = counts();
    alloc(&c).release();
    drop(alloc(&c));
    assert_eq!(c.freed.load(Ordering::Relaxed), 2);
    assert_eq!(c.released.load(Ordering::Relaxed), 0);
}

#[test]
fn open_hands_the_token_over_and_the_last_put_releases() {
    let c = counts();
    let token = alloc(&c);
    let file = token
        .open(|f| {
            f.path = Some("/etc/passwd");
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(file.count.get(), 1, "no count moved");
    let dup = file.clone();
    assert_eq!(dup.path, Some("/etc/passwd"));
    drop(file);
    assert_eq!(c.released.load(Ordering::Relaxed), 0);
    drop(dup);
    assert_eq!(c.released.load(Ordering::Relaxed), 1);
    assert_eq!(c.freed.load(Ordering::Relaxed), 0);
}

#[test]
fn a_failed_open_hands_the_token_back() {
    let c = counts();
    let (err, mut token) = alloc(&c).open(|_| Err("EISDIR")).unwrap_err();
    assert_eq!(err, "EISDIR");
    token.path = Some("/tmp");
    token.release();
    assert_eq!(c.freed.load(Ordering::Relaxed), 1);
}

#[test]
fn opened_references_move_between_threads() {
    let c = counts();
    let file = alloc(&c)
        .open(|f| {
            f.path = Some("/x");
            Ok::<(), ()>(())
        })
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..super::THREADS {
            let mine = file.clone();
            s.spawn(move || {
                for _ in 0..super::ITERS {
                    drop(mine.clone());
                }
            });
        }
    });
    drop(file);
    assert_eq!(c.released.load(Ordering::Relaxed), 1);
}
