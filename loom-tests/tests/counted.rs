//! Loom models of `CountedRef`, `PathRef` and `Unopened`/`Opened`, one per
//! race; the `CountedRef` and `PathRef` models once per word (`cas_word::`
//! on `CasWord`, `add_word::` on the experimental `AddWord`). Run with
//! `--cfg loom --cfg lockref_loom --cfg lockref_white_box`. Every racing side runs on a spawned
//! thread: loom 0.7 explores far fewer interleavings of work done
//! on the model's main thread (a model with its reader there ran once).
#![cfg(loom)]

use std::ptr::NonNull;

use lockref::{
    CountedRef, Fate, LockRef, LockRefGuard, OpenCount, Openable, Opened, PathRef, RefCounted,
    Unopened,
};
use lockref_loom_tests::{model, Word};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// What a model observes from outside the objects.
#[derive(Default)]
struct World {
    /// Objects released (killed and freed).
    released: AtomicUsize,
    /// Set by `release` just before the free.
    freed: AtomicBool,
    /// The outer table (a FUSE inode map): lookups and removals take it.
    table: Mutex<Option<usize>>,
    /// Released objects' memory, recycled as a fresh object at count zero
    /// (as an allocator would reuse it), freed at the end of the model.
    /// A thread that still touched a released object would find the
    /// recycled one and, deciding on it, release it a second time.
    recycled: Mutex<Vec<usize>>,
}

impl World {
    /// Frees the recycled memory; call once every handle is gone.
    fn finish<W: Word>(&self) {
        for ptr in self.recycled.lock().unwrap().drain(..) {
            // SAFETY: recycled by `release`, referenced by nobody.
            drop(unsafe { Box::from_raw(ptr as *mut Obj<W>) });
        }
    }
}

/// A test object. Each holder writes its slot (a loom-tracked cell) before
/// dropping its reference; `release` reads every slot, so a put or a lock
/// that did not order the holders' writes before the release is a race.
struct Obj<W: Word> {
    lockref: LockRef<bool, W>,
    world: Arc<World>,
    slots: [UnsafeCell<u32>; 2],
}

// SAFETY: objects are made by `new_obj` (a `Box`), counted only by
// `CountedRef`; `release` removes the table entry under the table's lock
// before freeing.
unsafe impl<W: Word> RefCounted for Obj<W> {
    type Data = bool;
    type Word = W;
    type Grace = ();

    fn lockref(&self) -> &LockRef<bool, W> {
        &self.lockref
    }

    fn last_put(&self, keep: &mut LockRefGuard<'_, bool, W>) -> Fate {
        if **keep {
            Fate::Keep
        } else {
            Fate::Kill
        }
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: dead and unreferenced; the box is freed below, once.
        let obj = unsafe { this.as_ref() };
        {
            let mut table = obj.world.table.lock().unwrap();
            if *table == Some(this.as_ptr() as usize) {
                *table = None;
            }
        }
        for slot in &obj.slots {
            // SAFETY: every holder's write happened before (the Arc rule).
            slot.with(|v| unsafe { v.read() });
        }
        let world = obj.world.clone();
        world.freed.store(true, SeqCst);
        // SAFETY: out of the table, nobody can reach it: drop it in place
        // and reuse the memory for a fresh, unreferenced object.
        unsafe {
            core::ptr::drop_in_place(this.as_ptr());
            this.as_ptr().write(Obj {
                lockref: LockRef::with_raw(false, W::with_count(0).unwrap()),
                world: world.clone(),
                slots: [UnsafeCell::new(0), UnsafeCell::new(0)],
            });
        }
        world.recycled.lock().unwrap().push(this.as_ptr() as usize);
        world.released.fetch_add(1, SeqCst);
        None
    }
}

// SAFETY: the slots are written by distinct threads, each before its put.
unsafe impl<W: Word> Send for Obj<W> {}
// SAFETY: as above.
unsafe impl<W: Word> Sync for Obj<W> {}

impl<W: Word> Obj<W> {
    fn write_slot(&self, i: usize) {
        // SAFETY: slot `i` belongs to thread `i`.
        self.slots[i].with_mut(|v| unsafe { *v = i as u32 + 1 });
    }
}

fn new_obj<W: Word>(world: &Arc<World>, keep: bool) -> CountedRef<Obj<W>> {
    let obj = Box::new(Obj {
        lockref: LockRef::with_raw(keep, W::default()),
        world: world.clone(),
        slots: [UnsafeCell::new(0), UnsafeCell::new(0)],
    });
    let ptr = NonNull::from(Box::leak(obj));
    *world.table.lock().unwrap() = Some(ptr.as_ptr() as usize);
    // SAFETY: a new object's count of one.
    unsafe { CountedRef::from_raw(ptr) }
}

/// A lookup through the outer table: under its lock, find and `try_get`.
fn lookup<W: Word>(world: &World) -> Option<CountedRef<Obj<W>>> {
    let table = world.table.lock().unwrap();
    let ptr = NonNull::new((*table)? as *mut Obj<W>)?;
    // SAFETY: in the table, so not freed while we hold its lock.
    unsafe { CountedRef::try_get(ptr) }
}

/// Two holders drop their references at once, one after a clone: the last
/// put kills exactly once, and the release sees both holders' writes.
fn clone_and_drop_race_the_last_put_and_its_kill<W: Word>() {
    model(|| {
        let world = Arc::new(World::default());
        let a = new_obj::<W>(&world, false);
        let b = a.clone();
        let t = thread::spawn(move || {
            let c = b.clone();
            c.write_slot(1);
            drop(c);
            drop(b);
        });
        let u = thread::spawn(move || {
            a.write_slot(0);
            drop(a);
        });
        t.join().unwrap();
        u.join().unwrap();
        assert_eq!(world.released.load(SeqCst), 1);
        world.finish::<W>();
    });
}

/// The last put of a kept object races a lookup: the object stays at count
/// zero (or the lookup's reference), findable, never released.
fn keep_leaves_a_findable_object_at_zero<W: Word>() {
    model(|| {
        let world = Arc::new(World::default());
        let a = new_obj::<W>(&world, true);
        let w = world.clone();
        let t = thread::spawn(move || {
            let found = lookup::<W>(&w).expect("kept objects stay findable");
            assert_eq!(w.released.load(SeqCst), 0);
            drop(found);
        });
        let u = thread::spawn(move || drop(a));
        t.join().unwrap();
        u.join().unwrap();
        let again = lookup::<W>(&world).expect("still in the table");
        assert_eq!(again.lockref.count(), Some(1));
        assert_eq!(world.released.load(SeqCst), 0);
        // Tear down: no longer kept, the last put kills it.
        *again.lockref.lock() = false;
        drop(again);
        assert_eq!(world.released.load(SeqCst), 1);
        world.finish::<W>();
    });
}

/// A lookup through the outer table races the kill: it gets a reference
/// only to an object that is not dead, which then cannot be freed under
/// it; the kill removes the entry under the table's lock, after marking
/// the object dead under its own (no lock-order inversion: the table's
/// lock is never taken while the object's is held).
fn try_get_through_the_table_races_the_kill<W: Word>() {
    model(|| {
        let world = Arc::new(World::default());
        let a = new_obj::<W>(&world, false);
        let w = world.clone();
        let t = thread::spawn(move || {
            if let Some(found) = lookup::<W>(&w) {
                assert!(!w.freed.load(SeqCst), "a reference to a freed object");
                found.write_slot(1);
                drop(found);
            }
        });
        let u = thread::spawn(move || {
            a.write_slot(0);
            drop(a);
        });
        t.join().unwrap();
        u.join().unwrap();
        assert_eq!(world.released.load(SeqCst), 1);
        assert_eq!(*world.table.lock().unwrap(), None);
        world.finish::<W>();
    });
}

/// A shrinker's eviction (a reference taken through the table, the
/// table's lock dropped, then `evict`) races a lookup of the same object,
/// kept at zero: the lookup gets it alive or nothing, the object dies at
/// most once and only when the eviction's reference was the last, and
/// otherwise stays kept and findable.
fn an_eviction_races_a_lookup<W: Word>() {
    model(|| {
        let world = Arc::new(World::default());
        drop(new_obj::<W>(&world, true));
        let w = world.clone();
        let shrinker = thread::spawn(move || {
            let candidate = lookup::<W>(&w).expect("kept, so findable");
            candidate.write_slot(0);
            CountedRef::evict(candidate)
        });
        let w = world.clone();
        let reader = thread::spawn(move || {
            if let Some(found) = lookup::<W>(&w) {
                assert!(!w.freed.load(SeqCst), "a reference to a freed object");
                found.write_slot(1);
                drop(found);
            }
        });
        let evicted = shrinker.join().unwrap();
        reader.join().unwrap();
        let released = world.released.load(SeqCst);
        assert_eq!(released, usize::from(evicted), "died once, by the eviction");
        if !evicted {
            // The reader's put came last and kept it: evict it now.
            let kept = lookup::<W>(&world).expect("kept at zero, findable");
            assert!(CountedRef::evict(kept));
        }
        assert_eq!(world.released.load(SeqCst), 1);
        world.finish::<W>();
    });
}

/// A put of two references races a clone and drop: the count ends exact,
/// and the final put kills once.
fn put_many_races_gets<W: Word>() {
    model(|| {
        let world = Arc::new(World::default());
        let a = new_obj::<W>(&world, false);
        let raw = CountedRef::into_raw(a.clone());
        let _second = CountedRef::into_raw(a.clone());
        let b = a.clone();
        let t = thread::spawn(move || {
            drop(b.clone());
            drop(b);
        });
        let addr = raw.as_ptr() as usize;
        let u = thread::spawn(move || {
            let raw = NonNull::new(addr as *mut Obj<W>).unwrap();
            // SAFETY: this thread owns the two raw references.
            unsafe { CountedRef::put_many(raw, 2) }.unwrap();
        });
        t.join().unwrap();
        u.join().unwrap();
        assert_eq!(a.lockref.count(), Some(1));
        drop(a);
        assert_eq!(world.released.load(SeqCst), 1);
        world.finish::<W>();
    });
}

/// A path consumed by one thread (its parts handed on and dropped) races
/// the drop of a clone: each object is killed exactly once.
fn path_consumption_races_the_dentry_kill<W: Word>() {
    model(|| {
        let world = Arc::new(World::default());
        let path = PathRef::new(new_obj::<W>(&world, false), new_obj::<W>(&world, false));
        let copy = path.clone();
        let t = thread::spawn(move || {
            let (mnt, dentry) = copy.into_parts();
            drop(dentry);
            drop(mnt);
        });
        let u = thread::spawn(move || drop(path));
        t.join().unwrap();
        u.join().unwrap();
        assert_eq!(world.released.load(SeqCst), 2);
        world.finish::<W>();
    });
}

/// A file for the token models.
struct File {
    count: OpenCount,
    path: u32,
    freed: Arc<AtomicUsize>,
    released: Arc<AtomicUsize>,
}

// SAFETY: made by `alloc` (a `Box`); both frees free it once.
unsafe impl Openable for File {
    fn open_count(&self) -> &OpenCount {
        &self.count
    }

    unsafe fn free(this: NonNull<Self>) {
        // SAFETY: unreferenced, from the box.
        let f = unsafe { Box::from_raw(this.as_ptr()) };
        f.freed.fetch_add(1, SeqCst);
    }

    unsafe fn release_opened(this: NonNull<Self>) {
        // SAFETY: as above.
        let f = unsafe { Box::from_raw(this.as_ptr()) };
        assert_eq!(f.path, 7, "the open's write is seen by the release");
        f.released.fetch_add(1, SeqCst);
    }
}

fn alloc(freed: &Arc<AtomicUsize>, released: &Arc<AtomicUsize>) -> Unopened<File> {
    let f = Box::new(File {
        count: OpenCount::new(),
        path: 0,
        freed: freed.clone(),
        released: released.clone(),
    });
    // SAFETY: new, count one, referenced from nowhere else.
    unsafe { Unopened::from_raw(NonNull::from(Box::leak(f))) }
}

/// A token released while another thread releases its own: each frees at
/// once, exactly once, with no deferred release.
#[test]
fn token_release_frees_once() {
    model(|| {
        let (freed, released) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (one, other) = (alloc(&freed, &released), alloc(&freed, &released));
        let t = thread::spawn(move || other.release());
        let u = thread::spawn(move || one.release());
        t.join().unwrap();
        u.join().unwrap();
        assert_eq!((freed.load(SeqCst), released.load(SeqCst)), (2, 0));
    });
}

/// An opened file's references dropped on two threads: one deferred
/// release, which sees what the open wrote.
#[test]
fn opened_last_put_releases_once() {
    model(|| {
        let (freed, released) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let file: Opened<File> = alloc(&freed, &released)
            .open(|f| {
                f.path = 7;
                Ok::<(), ()>(())
            })
            .map_err(|_| ())
            .unwrap();
        let dup = file.clone();
        let t = thread::spawn(move || drop(dup));
        let u = thread::spawn(move || drop(file));
        t.join().unwrap();
        u.join().unwrap();
        assert_eq!((freed.load(SeqCst), released.load(SeqCst)), (0, 1));
    });
}

/// An object with a grace section (its memory outlives the model, as an
/// RCU or epoch scheme would keep it): the last put reaches zero without
/// the lock, and is raced by a lookup that revives the object and puts it
/// again. Both putters then reach the lock; exactly one kills. `last_put`
/// is asked only at zero: on the compare-and-swap word exactly once (the
/// putter that locks while the other holds a reference re-checks the count
/// and leaves the decision to it); on the fetch_add word a revive landing
/// under the lock can make it ask twice, and `kill_if_zero` refuses the
/// first kill.
struct Graced<W: Word> {
    lockref: LockRef<(), W>,
    /// Whether the word freezes the count under its lock (the
    /// compare-and-swap word), so that `last_put` always sees zero.
    frozen: bool,
    /// The kill is decided without the lock (`fate_unlocked`), and, with
    /// `Some(true)`, known before the last put (`killed_at_zero`): a table
    /// entry removed, or of a table that keeps none. `None`: `last_put`
    /// decides under the lock.
    unlocked_kill: Option<bool>,
    released: AtomicUsize,
    asked: AtomicUsize,
}

impl<W: Word> Graced<W> {
    /// A new one, referenced once, never freed inside the model.
    fn leaked(frozen: bool, unlocked_kill: Option<bool>) -> NonNull<Self> {
        NonNull::from(Box::leak(Box::new(Graced {
            lockref: LockRef::with_raw((), W::default()),
            frozen,
            unlocked_kill,
            released: AtomicUsize::new(0),
            asked: AtomicUsize::new(0),
        })))
    }
}

// SAFETY: never freed inside the model (the grace the contract asks for);
// `fate_unlocked` and `killed_at_zero` read nothing that changes.
unsafe impl<W: Word> RefCounted for Graced<W> {
    type Data = ();
    type Word = W;
    type Grace = ();

    fn lockref(&self) -> &LockRef<(), W> {
        &self.lockref
    }

    fn last_put(&self, guard: &mut LockRefGuard<'_, (), W>) -> Fate {
        self.asked.fetch_add(1, SeqCst);
        assert!(
            !self.frozen || guard.count() == Some(0),
            "last_put asked with a reference out"
        );
        Fate::Kill
    }

    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
        // SAFETY: never freed during the model.
        unsafe { this.as_ref() }.released.fetch_add(1, SeqCst);
        None
    }

    fn grace() -> Option<()> {
        Some(())
    }

    fn fate_unlocked(&self) -> Option<Fate> {
        self.unlocked_kill.map(|_| Fate::Kill)
    }

    fn killed_at_zero(&self) -> bool {
        self.unlocked_kill == Some(true)
    }
}

fn grace_put_to_zero_races_a_revival_and_kills_once<W: Word>(frozen: bool) {
    model(move || {
        let raw = Graced::<W>::leaked(frozen, None);
        let addr = raw.as_ptr() as usize;
        // SAFETY: the new object's count of one.
        let a = unsafe { CountedRef::from_raw(raw) };
        let t = thread::spawn(move || {
            let ptr = NonNull::new(addr as *mut Graced<W>).unwrap();
            // SAFETY: never freed during the model.
            if let Some(found) = unsafe { CountedRef::try_get(ptr) } {
                drop(found);
            }
        });
        let u = thread::spawn(move || drop(a));
        t.join().unwrap();
        u.join().unwrap();
        // SAFETY: never freed during the model; freed below.
        let obj = unsafe { raw.as_ref() };
        assert_eq!(obj.released.load(SeqCst), 1);
        let asked = obj.asked.load(SeqCst);
        if frozen {
            assert_eq!(
                asked, 1,
                "asked only by the putter that saw zero under the lock"
            );
        } else {
            assert!((1..=2).contains(&asked), "{asked}");
        }
        assert_eq!(obj.lockref.count(), None, "dead");
        // SAFETY: unreferenced, from the box above.
        drop(unsafe { Box::from_raw(raw.as_ptr()) });
    });
}

/// The lockless kill of a last put races a lookup that revives the
/// object: with `known_before`, the put drops its reference and kills in
/// one compare-and-swap (`put_many_and_kill`); without, it drops to zero,
/// then kills in a second (`kill_if_zero_unlocked`). Either kill lands
/// only on the count it expects: a lookup that got its reference holds a
/// live object, released once, after that reference. (A kill that does
/// not check the count kills under the lookup's reference: the mutants
/// `put-and-kill-of-a-revived-object` and `lockless-kill-of-a-revived-entry`
/// fail these.)
fn a_lockless_kill_races_a_revival(known_before: bool) {
    model(move || {
        let raw = Graced::<lockref::CasWord>::leaked(true, Some(known_before));
        let addr = raw.as_ptr() as usize;
        // SAFETY: the new object's count of one.
        let held = unsafe { CountedRef::from_raw(raw) };
        let lookup = thread::spawn(move || {
            let ptr = NonNull::new(addr as *mut Graced<lockref::CasWord>).unwrap();
            // SAFETY: never freed during the model.
            if let Some(found) = unsafe { CountedRef::try_get(ptr) } {
                // The other put's kill may run here.
                thread::yield_now();
                assert!(found.lockref.count().is_some(), "alive under its reference");
                assert_eq!(found.released.load(SeqCst), 0, "and not released");
            }
        });
        let put = thread::spawn(move || drop(held));
        lookup.join().unwrap();
        put.join().unwrap();
        // SAFETY: never freed during the model; freed below.
        let obj = unsafe { raw.as_ref() };
        assert_eq!(obj.released.load(SeqCst), 1, "released once");
        assert_eq!(obj.asked.load(SeqCst), 0, "decided without `last_put`");
        assert_eq!(obj.lockref.count(), None, "dead");
        // SAFETY: unreferenced, from the box above.
        drop(unsafe { Box::from_raw(raw.as_ptr()) });
    });
}

#[test]
fn a_put_and_kill_in_one_swap_races_a_revival() {
    a_lockless_kill_races_a_revival(true);
}

#[test]
fn a_kill_after_a_lockless_zero_races_a_revival() {
    a_lockless_kill_races_a_revival(false);
}

/// The `CountedRef` and `PathRef` models above, once per word.
macro_rules! on_each_word {
    ($($model:ident),* $(,)?) => {
        mod cas_word {
            $(#[test] fn $model() { super::$model::<lockref::CasWord>() })*
            #[test]
            fn grace_put_to_zero_races_a_revival_and_kills_once() {
                super::grace_put_to_zero_races_a_revival_and_kills_once::<lockref::CasWord>(true)
            }
        }
        mod add_word {
            use lockref::experimental::AddWord;
            $(#[test] fn $model() { super::$model::<AddWord>() })*
            #[test]
            fn grace_put_to_zero_races_a_revival_and_kills_once() {
                super::grace_put_to_zero_races_a_revival_and_kills_once::<AddWord>(false)
            }
        }
    };
}

on_each_word!(
    clone_and_drop_race_the_last_put_and_its_kill,
    keep_leaves_a_findable_object_at_zero,
    try_get_through_the_table_races_the_kill,
    an_eviction_races_a_lookup,
    put_many_races_gets,
    path_consumption_races_the_dentry_kill,
);
