//! [`Unopened`], the one-shot token of an object allocated and not opened
//! yet (seed 001), and [`Opened`], the counted reference an open turns it
//! into (the kernel's `struct file` and its `f_count`).

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use crate::sync::{AtomicUsize, Ordering};

/// The reference count of an [`Openable`] object (a file's `f_count`).
/// Only this crate's handles change it.
pub struct OpenCount(AtomicUsize);

impl OpenCount {
    crate::sync::const_fn! {
        /// A count of one: the [`Unopened`] token's.
        ///
        /// ```
        /// assert_eq!(lockref::OpenCount::new().get(), 1);
        /// ```
        #[inline]
        pub fn new() -> Self {
            OpenCount(AtomicUsize::new(1))
        }
    }

    /// The count now (a snapshot; orders nothing).
    #[inline]
    pub fn get(&self) -> usize {
        // Relaxed: a snapshot.
        self.0.load(Ordering::Relaxed)
    }
}

impl Default for OpenCount {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for OpenCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OpenCount").field(&self.get()).finish()
    }
}

/// An object that is allocated unopened, opened at most once, and then
/// counted (the kernel's `struct file`): it embeds an [`OpenCount`] and
/// says how it is freed.
///
/// # Safety
///
/// Implementers promise that [`open_count`](Self::open_count) returns the
/// same embedded count for the object's life, that every object is created
/// in an allocation that [`free`](Self::free) and
/// [`release_opened`](Self::release_opened) can free, and that both are
/// sound to call once, from any thread, for an object no reference points
/// to.
pub unsafe trait Openable: Sized {
    /// The embedded count.
    fn open_count(&self) -> &OpenCount;

    /// Frees an object that was never opened, at once, with no deferred
    /// work (`release_empty_file`).
    ///
    /// # Safety
    ///
    /// No reference to the object remains; called once.
    unsafe fn free(this: NonNull<Self>);

    /// Releases an opened object whose last [`Opened`] reference went
    /// (`fput`, which defers `__fput` to `task_work`): typically queues the
    /// release to run when the current operation returns.
    ///
    /// # Safety
    ///
    /// As [`free`](Self::free).
    unsafe fn release_opened(this: NonNull<Self>);
}

/// The one-shot token of an object that was allocated and not opened
/// (`alloc_empty_file`). It is the only reference: nothing can take
/// another while the object is unopened (there is no `get_file`), so the
/// token reads and writes the object freely (`Deref`, `DerefMut`) and no
/// other thread can race it.
///
/// It ends in one of two ways, each consuming it:
///
/// - [`open`](Self::open): the object becomes an [`Opened`] reference,
///   whose last put goes to [`Openable::release_opened`]; a failed open
///   hands the token back;
/// - [`release`](Self::release) (or dropping the token): a compare-and-swap
///   of the count from 1 to 0, the safety belt, then
///   [`Openable::free`] at once, with no deferred work (seed 001).
///
/// # Against the kernel's `WARN_ON_ONCE`
///
/// The kernel's `release_empty_file` warns if the count is not 1 and frees
/// anyway. Here a second reference cannot be obtained from safe code, so
/// the belt can only trip after unsafe code broke a contract (a forged
/// [`Opened`]); then the object is leaked, not freed, trading a leak for
/// what would be a use-after-free, and debug builds panic.
///
/// Released twice does not compile:
///
/// ```compile_fail
/// # use lockref::{Openable, Unopened};
/// # fn twice<T: Openable>(token: Unopened<T>) {
/// token.release();
/// token.release(); // error: use of moved value
/// # }
/// ```
///
/// Opened after release does not compile:
///
/// ```compile_fail
/// # use lockref::{Openable, Unopened};
/// # fn reopen<T: Openable>(token: Unopened<T>) {
/// token.release();
/// let _ = token.open(|_| Ok::<(), ()>(())); // error: use of moved value
/// # }
/// ```
///
/// An unopened object cannot reach the deferred release (only an
/// [`Opened`] reference's last put does, and only `open` makes one):
///
/// ```compile_fail
/// # use lockref::{Opened, Openable, Unopened};
/// # fn defer<T: Openable>(token: Unopened<T>) {
/// let opened: Opened<T> = token.into(); // error: no such conversion
/// # }
/// ```
///
/// # Invariants
///
/// `ptr` points to a live, never-opened `T` whose count is one, and the
/// token is its only reference: no other pointer to it is dereferenced
/// while the token exists.
#[must_use = "dropping an unopened object releases it at once; call open or release"]
pub struct Unopened<T: Openable> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: the token is the object's only reference, as a `Box<T>`.
unsafe impl<T: Openable + Send> Send for Unopened<T> {}
// SAFETY: `&Unopened` only gives `&T`, as `&Box<T>`.
unsafe impl<T: Openable + Sync> Sync for Unopened<T> {}

impl<T: Openable> Unopened<T> {
    /// The token of a newly allocated object.
    ///
    /// # Safety
    ///
    /// `ptr` points to a live object of a type whose [`Openable`] contract
    /// holds, whose count is one (a new [`OpenCount`]), and which nothing
    /// else references: the token becomes its only owner.
    #[inline]
    pub unsafe fn from_raw(ptr: NonNull<T>) -> Self {
        // INVARIANT: the caller's guarantee: a new object, count one, only
        // this token.
        Unopened {
            ptr,
            _owns: PhantomData,
        }
    }

    /// Gives up the token without releasing the object: the caller owns it
    /// (and its count of one) and must free it through its own means. For
    /// measuring the old behaviour only (sending an unopened object down
    /// the deferred path, as before seed 001); nothing else needs it.
    #[inline]
    #[must_use = "the object is leaked unless the caller frees it"]
    pub fn into_raw(this: Self) -> NonNull<T> {
        ManuallyDrop::new(this).ptr
    }

    /// Opens the object: `init` gets exclusive access to fill in what an
    /// open object holds (a file's path, its mode); on success the token
    /// becomes the first [`Opened`] reference, with no count moved. On
    /// failure the token comes back with `init`'s error, to be released.
    ///
    /// # Errors
    ///
    /// Whatever `init` returns; the object is unopened and untouched by
    /// this call (but for `init`'s own writes).
    #[allow(clippy::result_large_err)]
    pub fn open<E>(
        mut self,
        init: impl FnOnce(&mut T) -> Result<(), E>,
    ) -> Result<Opened<T>, (E, Self)> {
        match init(&mut self) {
            // INVARIANT: the token's count of one becomes the `Opened`
            // handle's, and the token is consumed.
            Ok(()) => Ok(Opened {
                ptr: Self::into_raw(self),
                _owns: PhantomData,
            }),
            Err(e) => Err((e, self)),
        }
    }

    /// Frees the never-opened object now (`release_empty_file`): its count
    /// goes from 1 to 0 with one compare-and-swap, then
    /// [`Openable::free`] runs, with no deferred work.
    pub fn release(self) {
        let ptr = Self::into_raw(self);
        // SAFETY: the token's reference keeps the object alive here.
        let count = unsafe { ptr.as_ref() }.open_count();
        // Acquire on success: the uses of whoever held a reference before
        // (none, unless a contract was broken) happen before the free.
        // Relaxed on failure: we only report.
        match count
            .0
            .compare_exchange(1, 0, Ordering::Acquire, Ordering::Relaxed)
        {
            // SAFETY: the count was 1 (ours) and is now 0; an unopened
            // object is referenced from nowhere else.
            Ok(_) => unsafe { T::free(ptr) },
            Err(found) => {
                // Leaked: see the type's docs.
                debug_assert!(false, "unopened object has {found} references; leaked");
            }
        }
    }
}

impl<T: Openable> Deref for Unopened<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the token owns the live object.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Openable> DerefMut for Unopened<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the token is the only reference to the object, and
        // `&mut self` excludes every other use of the token.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: Openable> Drop for Unopened<T> {
    /// Releases the object, as [`release`](Unopened::release).
    fn drop(&mut self) {
        // `release` forgets the copy it consumes: no second drop.
        Unopened {
            ptr: self.ptr,
            _owns: PhantomData,
        }
        .release();
    }
}

impl<T: Openable + fmt::Debug> fmt::Debug for Unopened<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Unopened").field(&**self).finish()
    }
}

/// A counted reference to an opened object (`struct file *` with `f_count`
/// held). `Clone` is `get_file`; dropping the last reference calls
/// [`Openable::release_opened`] (`fput`).
///
/// Orderings: `Clone` is `Relaxed`, a put `Release`, and the last put
/// `Acquire` too before the release (as `Arc`).
///
/// # Invariants
///
/// `ptr` points to a live, opened `T` whose count counts this handle (one
/// of its references is the handle's, given back once, by its drop).
pub struct Opened<T: Openable> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: as `Arc<T>`.
unsafe impl<T: Openable + Send + Sync> Send for Opened<T> {}
// SAFETY: as `Arc<T>`.
unsafe impl<T: Openable + Send + Sync> Sync for Opened<T> {}

/// Counts past this panic: a count that large means leaked handles in a
/// loop, and wrapping would free a live object. Unlike `Arc`, which aborts,
/// `clone` panics, and leaves the count raised: the object is leaked,
/// never freed early, and the panic unwinds (or aborts, with
/// `panic = "abort"`) as the caller's build chooses.
const MAX_OPENED: usize = isize::MAX as usize;

impl<T: Openable> Clone for Opened<T> {
    /// `get_file`.
    #[inline]
    fn clone(&self) -> Self {
        // Relaxed: our reference keeps the object alive (as `Arc::clone`).
        let old = self.open_count().0.fetch_add(1, Ordering::Relaxed);
        if old > MAX_OPENED {
            too_many_references();
        }
        // INVARIANT: the reference just counted is the new handle's.
        Opened {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

#[cold]
#[inline(never)]
fn too_many_references() -> ! {
    panic!("Opened: reference count overflow")
}

impl<T: Openable> Drop for Opened<T> {
    /// `fput`.
    #[inline]
    fn drop(&mut self) {
        // Release: our uses of the object happen before its release.
        if self.open_count().0.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Acquire: every other holder's releasing put happens before the
        // release (as `Arc::drop`). A load rather than a fence: the same
        // guarantee, and ThreadSanitizer models it (it does not model
        // standalone fences).
        self.open_count().0.load(Ordering::Acquire);
        // SAFETY: the count reached zero: ours was the last reference.
        unsafe { T::release_opened(self.ptr) };
    }
}

impl<T: Openable> Deref for Opened<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: our reference keeps the object alive.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Openable + fmt::Debug> fmt::Debug for Opened<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Opened").field(&**self).finish()
    }
}
