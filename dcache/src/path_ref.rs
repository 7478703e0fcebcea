//! [`PathRef`]: a mount and a dentry, referenced together.

use core::fmt;

use crate::dentry_ref::DentryRef;
use crate::mount::Mount;

/// A path: one reference on a mount and one on a dentry (the kernel's
/// `struct path` after `path_get`). Cloning takes both references again;
/// dropping releases each exactly once. Opening a file can *consume* it
/// ([`EmptyFile::open_consume`](crate::EmptyFile::open_consume)): the file takes over both references and
/// no count moves (seed 000).
///
/// A consumed path cannot be used again:
///
/// ```compile_fail
/// use lockref_dcache::{Dcache, OpenFlags};
///
/// let cache = Dcache::new(Default::default());
/// let path = cache.root();
/// let file = cache.alloc_file(OpenFlags::RDONLY).open_consume(path);
/// let again = path.clone(); // error: `path` was moved into the file
/// ```
#[must_use = "a path holds two references until it is dropped or consumed by an open"]
pub struct PathRef<'c> {
    pub(crate) mnt: &'c Mount,
    pub(crate) dentry: DentryRef<'c>,
}

impl<'c> PathRef<'c> {
    /// The dentry.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert!(cache.root().dentry().is_self_parented());
    /// ```
    pub fn dentry(&self) -> &DentryRef<'c> {
        &self.dentry
    }

    /// The dentry's name.
    ///
    /// ```
    /// let cache = lockref_dcache::Dcache::new(Default::default());
    /// assert_eq!(cache.root().name(), b"/");
    /// ```
    pub fn name(&self) -> &[u8] {
        self.dentry.name()
    }
}

impl Clone for PathRef<'_> {
    /// `path_get`: `mntget` and `dget`.
    fn clone(&self) -> Self {
        self.mnt.get();
        PathRef {
            mnt: self.mnt,
            dentry: self.dentry.clone(),
        }
    }
}

impl Drop for PathRef<'_> {
    /// `path_put`: the dentry field's drop is the `dput`; this is the
    /// `mntput`.
    fn drop(&mut self) {
        self.mnt.put();
    }
}

impl fmt::Debug for PathRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathRef")
            .field("dentry", &self.dentry)
            .finish()
    }
}
