//! The one place that names atomics, `UnsafeCell` and spin hints.
//!
//! Under `cfg(lockref_loom)` everything comes from loom so that the models in
//! `loom-tests/` explore every interleaving of the real code; otherwise it
//! comes from `core`. The `UnsafeCell` wrapper offers the loom shape
//! (`get_mut` handing out a tracked pointer, `with_mut`) in both worlds, as
//! tokio's and sharded-slab's shims do.

// `--cfg lockref_loom` asks for loom's types, which come with the `loom`
// feature: without it, one error that says so (and `core`'s types below,
// so that it is the only one).
#[cfg(all(lockref_loom, not(feature = "loom")))]
compile_error!(
    "`--cfg lockref_loom` needs lockref's `loom` feature: depend on lockref with \
     `features = [\"loom\"]` (for example in [dev-dependencies]), or pass \
     `--features lockref/loom`; see the README's \"Loom models of your own code\""
);

cfg_if::cfg_if! {
    if #[cfg(all(lockref_loom, feature = "loom"))] {
        pub(crate) use loom::cell::{MutPtr, UnsafeCell};
        pub(crate) use loom::hint::spin_loop;
        #[allow(unused_imports)]
        pub(crate) use loom::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicUsize, Ordering};
        #[cfg(target_has_atomic = "64")]
        #[allow(unused_imports)]
        pub(crate) use loom::sync::atomic::AtomicU64;
    } else {
        pub(crate) use core::hint::spin_loop;
        #[allow(unused_imports)]
        pub(crate) use core::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicUsize, Ordering};
        #[cfg(target_has_atomic = "64")]
        #[allow(unused_imports)]
        pub(crate) use core::sync::atomic::AtomicU64;

        /// `core::cell::UnsafeCell` with loom's interface.
        #[repr(transparent)]
        pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

        impl<T> UnsafeCell<T> {
            #[inline(always)]
            pub(crate) const fn new(data: T) -> Self {
                Self(core::cell::UnsafeCell::new(data))
            }

            #[inline(always)]
            pub(crate) fn into_inner(self) -> T {
                self.0.into_inner()
            }

            /// A pointer for exclusive access; loom tracks its lifetime.
            #[inline(always)]
            pub(crate) fn get_mut(&self) -> MutPtr<T> {
                MutPtr(self.0.get())
            }

            #[inline(always)]
            pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
                f(self.0.get())
            }
        }

        /// A raw pointer standing in for loom's tracked `MutPtr`.
        pub(crate) struct MutPtr<T>(*mut T);

        impl<T> MutPtr<T> {
            /// Calls `f` with the raw pointer (loom's `MutPtr::with`).
            #[inline(always)]
            pub(crate) fn with<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
                f(self.0)
            }

            /// # Safety
            ///
            /// The caller must have exclusive access to the cell for as
            /// long as the returned reference is used.
            #[inline(always)]
            #[allow(clippy::mut_from_ref)]
            pub(crate) unsafe fn deref(&self) -> &mut T {
                // SAFETY: the caller guarantees exclusive access (see above);
                // the pointer came from a live `UnsafeCell`.
                unsafe { &mut *self.0 }
            }
        }
    }
}

/// An `Acquire` fence after a read of `$atomic` (a relaxed or releasing
/// read-modify-write, or a relaxed load): what the thread that took a count
/// to zero, or found it saturated, needs to see every release of it.
///
/// ThreadSanitizer does not model fences and would report the free that
/// follows as a race with the other holders' puts. Under it (the build
/// script sets `lockref_sanitize_thread` when `-Zsanitizer=thread` is on),
/// this is an `Acquire` load of the same atomic instead, as `std`'s `Arc`
/// does: every write of the word is a read-modify-write, so the value it
/// reads continues the release sequences the fence would have joined. The
/// atomic is the object's, read by the one thread allowed to touch it then.
macro_rules! acquire_fence_after {
    ($atomic:expr) => {{
        #[cfg(not(lockref_sanitize_thread))]
        {
            let _ = &$atomic;
            $crate::sync::fence($crate::sync::Ordering::Acquire);
        }
        #[cfg(lockref_sanitize_thread)]
        {
            let _ = $atomic.load($crate::sync::Ordering::Acquire);
        }
    }};
}
pub(crate) use acquire_fence_after;

/// Gives the CPU to another thread, if `std` is there to ask (outside
/// loom); a spin hint otherwise (loom's yield under loom).
#[inline]
pub(crate) fn yield_cpu() {
    #[cfg(all(any(feature = "std", test), not(lockref_loom)))]
    std::thread::yield_now();
    #[cfg(not(all(any(feature = "std", test), not(lockref_loom))))]
    spin_loop();
}

/// How a lock waiter whose [`Park`](crate::park::Park) never sleeps (the
/// `Spin` park, the `no_std` default) waits between looks at the lock: a
/// spin hint each time, and with `std` (outside loom) a yield of the CPU
/// once it has spun [`SpinThenYield::SPINS`] times, which bounds what a
/// preempted holder costs when threads outnumber cores (crossbeam's
/// `Backoff::snooze`, without the growing spin). Under loom the spin hint
/// is loom's yield, so a model never spins forever.
pub(crate) struct SpinThenYield {
    #[cfg(all(any(feature = "std", test), not(lockref_loom)))]
    spins: u32,
}

impl SpinThenYield {
    /// Spins before the waiter starts yielding its CPU.
    #[cfg(all(any(feature = "std", test), not(lockref_loom)))]
    pub(crate) const SPINS: u32 = 1 << 10;

    /// A waiter that has not waited yet.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Self {
            #[cfg(all(any(feature = "std", test), not(lockref_loom)))]
            spins: 0,
        }
    }

    /// Waits once.
    #[inline]
    pub(crate) fn wait(&mut self) {
        spin_loop();
        #[cfg(all(any(feature = "std", test), not(lockref_loom)))]
        {
            if self.spins < Self::SPINS {
                self.spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Counters for the optional statistics. These are never modelled by loom:
/// they take no part in synchronization, only in accounting, and loom would
/// multiply the state space for nothing.
#[cfg(feature = "stats")]
pub(crate) use core::sync::atomic::{AtomicUsize as StatCounter, Ordering as StatOrdering};

/// Declares a function `const` except under loom, whose atomics and cells
/// have no `const` constructors: `const_fn! { pub fn new() -> Self { .. } }`.
macro_rules! const_fn {
    ($(#[$attr:meta])* $vis:vis fn $name:ident $($rest:tt)*) => {
        #[cfg(not(lockref_loom))]
        $(#[$attr])*
        $vis const fn $name $($rest)*

        #[cfg(lockref_loom)]
        $(#[$attr])*
        $vis fn $name $($rest)*
    };
}
pub(crate) use const_fn;
