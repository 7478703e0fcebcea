//! [`CountedRef`]: an owned reference to an object that embeds a
//! [`LockRef`](crate::LockRef) (on any word), with the keep-or-kill
//! decision at zero ([`RefCounted`], in `ref_counted.rs`).

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::Deref;
use core::ptr::NonNull;

use crate::error::CountError;
use crate::guard::PutOrLock;
use crate::last_put::{put_many, release_chain, Killed};
use crate::ref_counted::RefCounted;

/// An owned, counted reference to a [`RefCounted`] object: one pointer.
/// `Clone` takes a reference (`dget`), `Drop` puts it (`dput`): lockless
/// unless it is the last one, which takes the object's lock to decide
/// whether the object stays or dies.
///
/// | kernel | Rust-for-Linux | here |
/// |---|---|---|
/// | `dget`, `lockref_get` | `ARef::clone` (`inc_ref`) | [`Clone`] |
/// | `dput`: `fast_dput`, `retain_dentry`, `dentry_kill` | `ARef::drop` (`dec_ref`) | [`Drop`], [`RefCounted::last_put`], [`RefCounted::release`] |
/// | `lockref_get_not_dead` on a lookup's result | | [`CountedRef::try_get`] |
/// | handing a reference to user space (a FUSE `LOOKUP` reply) | `ARef::into_raw` / `from_raw` | [`CountedRef::into_raw`] / [`CountedRef::from_raw`] |
/// | `FORGET(nlookup)` | | [`CountedRef::put_many`] |
///
/// # Orderings
///
/// Clone is `Relaxed` (as `Arc::clone`). A put is `Release`, and the last
/// put's lock (or, with a grace section, the put that reaches zero) is
/// `Acquire`, so [`RefCounted::last_put`] and [`RefCounted::release`] see
/// every write any holder made before dropping its reference (the `Arc`
/// rule). [`try_get`](Self::try_get) is `Acquire`.
///
/// # Why the last put takes the lock
///
/// The kernel's `fast_dput` drops to zero locklessly, then locks and checks
/// the count again. Without a grace section that is a use-after-free: A
/// puts 1 -> 0; a lookup (B) revives it, 0 -> 1, and puts 1 -> 0; A and B
/// both go for the lock; A wins, decides to kill, releases and frees; B
/// then locks freed memory. The kernel is safe because both run under RCU,
/// which keeps the memory. So a put reaches zero only under the lock
/// (`put_or_lock`), unless the type supplies that grace
/// ([`RefCounted::grace`]). With it, a put whose count reads as the last
/// enters the grace section and drops to zero without the lock; then
/// [`RefCounted::fate_unlocked`] may keep the object as it is, or kill it
/// with one more compare-and-swap (zero to dead, which fails if a lookup
/// revived it), and only an undecided object takes the lock. An object
/// whose kill at zero is certain before its last put
/// ([`RefCounted::killed_at_zero`]: removed from its table, of a cache
/// that keeps none) is dropped and killed in one compare-and-swap, with
/// no grace section. A put that is not the last enters no grace section
/// (one compare-and-swap).
///
/// # Examples
///
/// ```
/// use core::ptr::NonNull;
/// use lockref::{CasWord, CountedRef, Fate, LockRef, LockRefGuard, RefCounted};
///
/// /// An inode, allocated with `Box`, killed when its last reference goes
/// /// unless something keeps it.
/// struct Inode {
///     ino: u64,
///     lockref: LockRef<bool>, // guards "keep me cached"
/// }
///
/// unsafe impl RefCounted for Inode {
///     type Data = bool;
///     type Word = CasWord;
///     type Grace = ();
///     fn lockref(&self) -> &LockRef<bool> {
///         &self.lockref
///     }
///     fn last_put(&self, keep: &mut LockRefGuard<'_, bool>) -> Fate {
///         if **keep { Fate::Keep } else { Fate::Kill }
///     }
///     unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
///         // SAFETY: allocated by `Box` below, dead and unreferenced.
///         drop(unsafe { Box::from_raw(this.as_ptr()) });
///         None
///     }
/// }
///
/// let raw = NonNull::from(Box::leak(Box::new(Inode { ino: 7, lockref: LockRef::new(false) })));
/// // SAFETY: the new inode's count of one is this reference.
/// let inode = unsafe { CountedRef::from_raw(raw) };
/// let again = inode.clone(); // lockless
/// assert_eq!(again.ino, 7);
/// drop(again); // lockless: not the last
/// drop(inode); // the last: locked, `last_put` says kill, `release` frees
/// ```
///
/// # Invariants
///
/// `ptr` points to a live `T` whose count counts this handle: one of the
/// references it counts is the handle's, given back exactly once (by its
/// drop, or by [`into_raw`](Self::into_raw) handing it to the caller). So
/// while the handle exists the object is alive and not dead.
pub struct CountedRef<T: RefCounted> {
    ptr: NonNull<T>,
    /// Owns a reference to a `T` (for the drop check and variance).
    _owns: PhantomData<T>,
}

// SAFETY: as `Arc<T>`: the handle shares `&T` between threads and may drop
// the last reference (running `release`) on any thread.
unsafe impl<T: RefCounted + Send + Sync> Send for CountedRef<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: RefCounted + Send + Sync> Sync for CountedRef<T> {}

impl<T: RefCounted> CountedRef<T> {
    /// Takes over one counted reference to the object at `ptr` (one
    /// handed out by [`into_raw`](Self::into_raw), or the count of one a
    /// new object starts with).
    ///
    /// # Safety
    ///
    /// `ptr` points to a live object of a type whose [`RefCounted`]
    /// contract holds, the caller owns one of the references its count
    /// counts, and gives it up to the returned handle. `ptr` has the
    /// provenance [`RefCounted::release`] needs to free the object.
    #[inline]
    pub unsafe fn from_raw(ptr: NonNull<T>) -> Self {
        // INVARIANT: the caller gives up a counted reference to a live
        // object at `ptr` (this fn's contract).
        CountedRef {
            ptr,
            _owns: PhantomData,
        }
    }

    /// Gives up the handle without dropping its reference, which the
    /// caller now owns (to hand across a protocol or keep in a table), for
    /// [`from_raw`](Self::from_raw) or [`put_many`](Self::put_many) later.
    ///
    /// ```
    /// # use lockref::{CountedRef, RefCounted};
    /// # fn example<T: RefCounted>(r: CountedRef<T>) {
    /// let raw = CountedRef::into_raw(r);
    /// // SAFETY: `raw` carries the reference `into_raw` gave up.
    /// let r = unsafe { CountedRef::from_raw(raw) };
    /// # drop(r); }
    /// ```
    #[inline]
    #[must_use = "the reference is leaked unless it is taken back with from_raw or put_many"]
    pub fn into_raw(this: Self) -> NonNull<T> {
        ManuallyDrop::new(this).ptr
    }

    /// The object's address (the reference stays with `this`).
    #[inline]
    pub fn as_ptr(this: &Self) -> NonNull<T> {
        this.ptr
    }

    /// Whether two handles point to the same object.
    #[inline]
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    /// Takes a reference to an object found without one (through a table,
    /// under the table's lock or a read-side section), even at count zero,
    /// unless it is dead (`lockref_get_not_dead`): never a reference to a
    /// dead object.
    ///
    /// Ordering: `Acquire` on success.
    ///
    /// # Safety
    ///
    /// `ptr` points to an object of this type that is not freed before
    /// this call returns (a dying one is fine: the call fails), with the
    /// provenance [`RefCounted::release`] needs to free it (the pointer the
    /// table holds, not one made from a `&T`).
    #[inline]
    #[must_use = "if it returned None, no reference was taken"]
    pub unsafe fn try_get(ptr: NonNull<T>) -> Option<Self> {
        // SAFETY: the caller keeps the object's memory valid for the call.
        let this = unsafe { ptr.as_ref() };
        if this.lockref().get_not_dead() {
            // SAFETY: the reference just taken is the handle's.
            Some(unsafe { Self::from_raw(ptr) })
        } else {
            None
        }
    }

    /// Puts `n` references at once (a FUSE `FORGET` of `nlookup`): lockless
    /// unless they are the last, then under the lock, deciding as the last
    /// put does. On a saturated count (the object is leaked) nothing moves,
    /// whatever `n`; `n` beyond the count's range can only be a saturated
    /// count or more than is held. `n` is a count, `u32` as every count of
    /// the API: a protocol's wider number (FUSE's 64-bit `nlookup`) above
    /// `u32::MAX` is more than any live count holds, so the caller passes
    /// `u32::MAX` for it (refused, or nothing moves on a saturated count).
    ///
    /// # Errors
    ///
    /// [`CountError::Underflow`] if the count is below `n`,
    /// [`CountError::Dead`] if the object is dead: nothing changes.
    ///
    /// # Safety
    ///
    /// The caller owns `n` references to the object at `ptr` (handed out
    /// by [`into_raw`](Self::into_raw)) and gives them up. A refused call
    /// gives up none.
    pub unsafe fn put_many(ptr: NonNull<T>, n: u32) -> Result<(), CountError> {
        if n == 0 {
            return Ok(());
        }
        // SAFETY: the caller owns the `n` references, given up on `Ok`.
        if let Some(killed) = unsafe { put_many(ptr, n) }? {
            // SAFETY: killed just now by this thread.
            unsafe { release_chain(killed.ptr) };
        }
        Ok(())
    }

    /// Kills an object kept at count zero (a cache shrinker's eviction): if
    /// unreferenced and not dead, marks it dead and releases it. Returns
    /// whether it did.
    ///
    /// # Safety
    ///
    /// As [`try_get`](Self::try_get).
    pub unsafe fn kill_unused(ptr: NonNull<T>) -> bool {
        // SAFETY: the caller keeps the object's memory valid for the call.
        let this = unsafe { ptr.as_ref() };
        let mut guard = this.lockref().lock();
        if guard.count() != Some(0) || !guard.kill_if_zero() {
            return false;
        }
        drop(guard);
        // SAFETY: dead under the lock at count zero, by this thread.
        unsafe { release_chain(ptr) };
        true
    }

    /// Gives back this reference and, if it was the last, kills the object
    /// whatever [`RefCounted::last_put`] would decide (a cache shrinker's
    /// eviction, with no `unsafe`). Returns whether the object died; if
    /// another reference is out, nothing else happens and it lives on.
    ///
    /// The safe shape of a shrinker over a map of your own that
    /// [`release`](RefCounted::release) locks to remove the entry, where
    /// [`kill_unused`](Self::kill_unused) cannot run under that lock (the
    /// release would take it again) and cannot run after it (the pointer
    /// may be freed by then): take references to the candidates under
    /// the map's lock ([`try_get`](Self::try_get), which never revives a
    /// dying object), drop the lock, then evict each one. A lookup that
    /// takes a reference in between keeps its object: the eviction gives
    /// back only its own reference.
    ///
    /// ```
    /// # use core::ptr::NonNull;
    /// # use lockref::{CountedRef, Fate, LockRef, LockRefGuard, RefCounted};
    /// struct Entry { lockref: LockRef<()> }
    /// // SAFETY: made only by `Box::new` below; `release` frees it once.
    /// unsafe impl RefCounted for Entry {
    ///     type Data = ();
    ///     type Word = lockref::CasWord;
    ///     type Grace = ();
    ///     fn lockref(&self) -> &LockRef<()> { &self.lockref }
    ///     fn last_put(&self, _: &mut LockRefGuard<'_, ()>) -> Fate { Fate::Keep }
    ///     unsafe fn release(this: NonNull<Self>) -> Option<CountedRef<Self>> {
    ///         drop(unsafe { Box::from_raw(this.as_ptr()) });
    ///         None
    ///     }
    /// }
    /// let boxed = Box::new(Entry { lockref: LockRef::new(()) });
    /// // SAFETY: one reference, counted; the box's own pointer.
    /// let entry = unsafe { CountedRef::from_raw(NonNull::from(Box::leak(boxed))) };
    /// let kept = CountedRef::into_raw(entry.clone());
    /// drop(entry);
    /// // SAFETY: `kept` owns a reference: the object lives.
    /// unsafe { CountedRef::put_many(kept, 1) }.unwrap(); // kept at zero: Keep
    /// // The shrinker: a reference taken where the entry is found (here
    /// // `kept`, alive at zero since nothing killed it)...
    /// // SAFETY: not freed: only a kill frees it, and none ran.
    /// let candidate = unsafe { CountedRef::try_get(kept) }.unwrap();
    /// let lookup = candidate.clone(); // ...a lookup's in between...
    /// assert!(!CountedRef::evict(candidate)); // ...keeps it alive,
    /// assert!(CountedRef::evict(lookup)); // and the last one kills it.
    /// ```
    pub fn evict(this: Self) -> bool {
        let ptr = Self::into_raw(this);
        // SAFETY: we owned a reference, so the object is alive.
        let object = unsafe { ptr.as_ref() };
        let PutOrLock::Locked(mut guard) = object.lockref().put_or_lock() else {
            // Not the last: another holder keeps it, and it is not ours
            // to touch any more.
            return false;
        };
        // Ours, under the lock: at least one reference (this one) is held.
        guard
            .decrement()
            .expect("the handle's reference is counted");
        if !guard.kill_if_zero() {
            return false;
        }
        drop(guard);
        // SAFETY: dead under the lock at count zero, by this thread.
        unsafe { release_chain(ptr) };
        true
    }

    /// Drops this handle's reference. Returns the object if this killed it
    /// (it is dead, and `release_chain` must run).
    #[inline]
    pub(crate) fn put(self) -> Option<Killed<T>> {
        let ptr = Self::into_raw(self);
        // SAFETY: the handle owned the reference this gives up. Refused
        // only on a broken `RefCounted` contract (a handle always owns a
        // reference): then the count stays.
        unsafe { put_many(ptr, 1) }.unwrap_or_else(|e| {
            debug_assert!(false, "CountedRef put: {e}");
            None
        })
    }
}

impl<T: RefCounted> Clone for CountedRef<T> {
    /// Takes a reference (`lockref_get`): one lockless compare-and-swap
    /// (one `fetch_add` on the experimental word).
    #[inline]
    fn clone(&self) -> Self {
        self.lockref().get();
        // INVARIANT: the reference just taken is the new handle's; `get`
        // cannot fail here, since our own reference keeps the object live
        // and not dead.
        CountedRef {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T: RefCounted> Drop for CountedRef<T> {
    /// Puts the reference: lockless unless it is the last.
    #[inline]
    fn drop(&mut self) {
        let this = CountedRef {
            ptr: self.ptr,
            _owns: PhantomData,
        };
        if let Some(killed) = this.put() {
            // SAFETY: `put` killed it, and holds no guard any more.
            unsafe { release_chain(killed.ptr) };
        }
    }
}

impl<T: RefCounted> Deref for CountedRef<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: our reference keeps the object alive.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: RefCounted + fmt::Debug> fmt::Debug for CountedRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
