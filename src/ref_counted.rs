//! [`RefCounted`], the contract of an object that embeds its [`LockRef`]
//! so that [`CountedRef`] can own references to it, and [`Fate`], its
//! decision at zero. The handle is `counted.rs`, its cold last put
//! `last_put.rs`; both depend on this file, not on each other.

use core::ptr::NonNull;

use crate::counted::CountedRef;
use crate::guard::LockRefGuard;
use crate::lockref::LockRef;
use crate::raw::raw_lockref::RawLockRef;

/// What becomes of an object whose last reference went, decided by
/// [`RefCounted::last_put`] under the object's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It stays, at count zero, findable by lookups (a hashed dentry, an
    /// inode in a table); a later [`CountedRef::try_get`] revives it.
    Keep,
    /// It is marked dead under the lock (no reference can be taken any
    /// more), and then, after the lock is released,
    /// [`RefCounted::release`] tears it down and frees it.
    ///
    /// The kill is [`LockRefGuard::kill_if_zero`]: it happens only if the
    /// count is still zero at the mark. On the default word the count is
    /// frozen under the lock and the kill always happens; on a word where a
    /// lookup's [`CountedRef::try_get`] lands while the lock is held (the
    /// experimental `fetch_add` word), a revived object stays, and its next
    /// last put asks [`RefCounted::last_put`] again.
    Kill,
}

/// An object counted by the [`LockRef`] it embeds, on any
/// [`RawLockRef`] word, so that [`CountedRef`] can own references to it (the kernel's dentry and
/// `dget`/`dput`; Rust-for-Linux's `AlwaysRefCounted`).
///
/// # Removal from a table guarded by an outer lock
///
/// Lookups that find an object through a table without holding a
/// reference take one with [`CountedRef::try_get`], which fails once the
/// object is dead. Two shapes fit:
///
/// - **The outer lock nests inside the object's lock** (the kernel's
///   dentry kill: `d_lock`, then the hash bucket's lock; lookups walk the
///   chain under RCU and take no lock): unlink the object from the table in
///   [`last_put`](Self::last_put), under both locks, and return
///   [`Fate::Kill`].
/// - **The outer lock is taken before the object's** (virtiofsd's inode
///   store, a FUSE inode map: a lookup takes the map's lock, finds the
///   inode, takes a reference): taking the map's lock in `last_put` would
///   invert the order. Return [`Fate::Kill`] instead: the object is marked
///   dead under its own lock, which is then released, so a lookup that finds
///   it under the map's lock fails `try_get` and treats it as absent (and
///   may insert a new object under the same key). Then, in
///   [`release`](Self::release), take the map's lock and remove the entry
///   *if it still points to this object*. Once it is removed under the
///   map's lock, no lookup can still be looking at it, and it may be freed.
///
/// # Safety
///
/// Implementers promise that:
///
/// - [`lockref`](Self::lockref) returns the same lockref, embedded in the
///   object, for the object's whole life, and that its count is changed
///   only by [`CountedRef`] (or under its lock by code that keeps the
///   count equal to the number of `CountedRef`s, and raw references handed
///   out by [`CountedRef::into_raw`]);
/// - every value of `Self` whose references a `CountedRef` may own lives
///   where [`release`](Self::release) can free it (the type is only ever
///   created in such an allocation), and stays in memory while its count is
///   positive or it is kept at zero;
/// - `release` is sound to call once for a dead object no reference points
///   to, from any thread (see its contract), including one killed without
///   `last_put` being asked ([`fate_unlocked`](Self::fate_unlocked),
///   [`killed_at_zero`](Self::killed_at_zero));
/// - if [`grace`](Self::grace) returns `Some`, an object's memory stays
///   valid while any grace value returned before its death is alive, even
///   after `release` (which must defer the free past them: an RCU grace
///   period, an epoch); and the state
///   [`retain_unlocked`](Self::retain_unlocked) and
///   [`fate_unlocked`](Self::fate_unlocked) read changes only while the
///   changer holds a reference (or its lock), so that a put's `Acquire`
///   at zero sees it.
pub unsafe trait RefCounted: Sized {
    /// What the embedded lock guards.
    type Data;
    /// The embedded lockref's word: [`CasWord`](crate::CasWord) (with its
    /// contention policy), or another [`RawLockRef`].
    type Word: RawLockRef;
    /// A read-side section of a deferred reclamation scheme (an epoch pin,
    /// an RCU read lock), held across a put that may reach zero without
    /// the lock; `()` for types without one.
    type Grace;

    /// The embedded count and lock.
    fn lockref(&self) -> &LockRef<Self::Data, Self::Word>;

    /// Decides, with the lock held and the count zero, whether the object
    /// stays ([`Fate::Keep`]) or dies ([`Fate::Kill`]). It may change the
    /// data and take locks that nest inside the object's.
    fn last_put(&self, guard: &mut LockRefGuard<'_, Self::Data, Self::Word>) -> Fate;

    /// Tears down and frees a killed object: it is dead (no reference can
    /// be taken) and no reference points to it. Returns a reference it
    /// held that is to be dropped next (a dentry's parent), so that long
    /// chains are put in a loop, not by recursion.
    ///
    /// # Safety
    ///
    /// Called once per object, by [`CountedRef`], after the object was
    /// marked dead under its lock and the lock was released. The object
    /// may still be reachable from tables: the implementation removes it
    /// (under their locks), and frees it only once no lookup can be
    /// looking at it.
    unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>>;

    /// Enters the read-side section that makes a put to zero without the
    /// lock safe (the kernel's `fast_dput` runs under `rcu_read_lock`):
    /// `None` (the default) makes the last put take the lock
    /// (`lockref_put_or_lock`), which is sound for any object. With
    /// `Some`, a put is `lockref_put_return`, and at zero
    /// [`retain_unlocked`](Self::retain_unlocked) may keep the object
    /// without the lock; otherwise the lock is taken and the count
    /// checked again, since a lookup may have taken a reference meanwhile.
    fn grace() -> Option<Self::Grace> {
        None
    }

    /// With a [`grace`](Self::grace) section only: after a lockless put
    /// brought the count to zero, whether the object certainly stays
    /// (without taking the lock). `false` (the default) takes the lock and
    /// asks [`last_put`](Self::last_put).
    fn retain_unlocked(&self) -> bool {
        false
    }

    /// Whether this object is certain to be killed at zero, asked by a put
    /// that reads its references as the last, before it drops them (the
    /// object is still referenced: everything may be read). `true` lets
    /// that put drop them and mark the object dead in one
    /// compare-and-swap, if they are still the last and the lock is free;
    /// [`last_put`](Self::last_put) and
    /// [`fate_unlocked`](Self::fate_unlocked) are then not asked, and
    /// [`release`](Self::release) runs as after any kill. A put that finds
    /// another reference taken meanwhile, or the lock held, goes the usual
    /// way. `false` (the default) always goes the usual way.
    ///
    /// Say `true` only when a kill at zero needs no decision: what makes
    /// it so holds for the object's life (removed from its table, marked
    /// to die, a cache that keeps nothing), and `release` does all the
    /// teardown (a `last_put` that unlinks the object under its lock is
    /// skipped).
    fn killed_at_zero(&self) -> bool {
        false
    }

    /// With a [`grace`](Self::grace) section only: after a lockless put
    /// brought the count to zero, the object's [`Fate`] if it is certain
    /// without the lock, or `None` to take the lock and ask
    /// [`last_put`](Self::last_put). [`Fate::Keep`] leaves the object as
    /// it is, at zero; [`Fate::Kill`] marks it dead without the lock, in
    /// one compare-and-swap, if its count is still zero and its lock free
    /// (a lookup that revived it meanwhile keeps it alive, and its own
    /// last put decides again; a held lock sends the decision to
    /// `last_put`). The default: `Keep` when
    /// [`retain_unlocked`](Self::retain_unlocked) says so, else `None`.
    ///
    /// It reads the object without a reference (another thread may revive
    /// it, put it, kill it meanwhile): only what the grace section keeps
    /// valid, and never what [`release`](Self::release) tears down.
    fn fate_unlocked(&self) -> Option<Fate> {
        self.retain_unlocked().then_some(Fate::Keep)
    }
}
