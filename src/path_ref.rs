//! [`PathRef`]: a consumable pair of counted references, a mount's and a
//! dentry's (the kernel's `struct path`).

/// A mount reference and a dentry reference held together (the kernel's
/// `struct path` after `path_get`), for any two counted handles whose
/// `Clone` takes a reference and whose `Drop` puts it ([`CountedRef`], or
/// a per-CPU mount count's handle).
///
/// `Clone` takes both references (`path_get`); `Drop` puts each exactly
/// once (`path_put`). Consuming the path, with
/// [`into_parts`](Self::into_parts) or an open that takes it by value,
/// hands both references on with no count moved (seed 000's
/// `vfs_open_consume`: two atomic operations fewer than `path_get` then
/// `path_put`).
///
/// [`CountedRef`]: crate::CountedRef
///
/// ```
/// use lockref::PathRef;
/// use std::sync::Arc;
///
/// let path = PathRef::new(Arc::new("mnt"), Arc::new("etc"));
/// let copy = path.clone(); // path_get: both counts up
/// assert_eq!(Arc::strong_count(path.dentry()), 2);
/// let (mnt, dentry) = copy.into_parts(); // consumed: no count moved
/// assert_eq!(Arc::strong_count(&dentry), 2);
/// drop((mnt, dentry, path)); // path_put, each reference once
/// ```
///
/// A consumed path cannot be used again:
///
/// ```compile_fail
/// use lockref::PathRef;
/// use std::sync::Arc;
///
/// let path = PathRef::new(Arc::new("mnt"), Arc::new("etc"));
/// let (mnt, dentry) = path.into_parts();
/// let again = path.clone(); // error: `path` was moved by `into_parts`
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[must_use = "a path holds two references until it is dropped or consumed"]
pub struct PathRef<M, D> {
    mnt: M,
    dentry: D,
}

impl<M, D> PathRef<M, D> {
    /// The path made of these two references, which it takes over.
    ///
    /// ```
    /// let path = lockref::PathRef::new(1, 2);
    /// assert_eq!((*path.mnt(), *path.dentry()), (1, 2));
    /// ```
    #[inline]
    pub const fn new(mnt: M, dentry: D) -> Self {
        PathRef { mnt, dentry }
    }

    /// The mount's reference.
    ///
    /// ```
    /// assert_eq!(*lockref::PathRef::new("m", "d").mnt(), "m");
    /// ```
    #[inline]
    pub const fn mnt(&self) -> &M {
        &self.mnt
    }

    /// The dentry's reference.
    ///
    /// ```
    /// assert_eq!(*lockref::PathRef::new("m", "d").dentry(), "d");
    /// ```
    #[inline]
    pub const fn dentry(&self) -> &D {
        &self.dentry
    }

    /// Consumes the path, handing both references on unchanged.
    ///
    /// ```
    /// assert_eq!(lockref::PathRef::new("m", "d").into_parts(), ("m", "d"));
    /// ```
    #[inline]
    pub fn into_parts(self) -> (M, D) {
        (self.mnt, self.dentry)
    }
}
