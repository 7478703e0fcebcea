//! The dcache's paths: [`MountRef`], a counted reference to a mount, and
//! [`PathRef`], [`lockref::PathRef`] over a mount's and a dentry's
//! references.

use core::fmt;

use crate::cache::Dcache;
use crate::dentry_ref::DentryRef;
use crate::mount::Mount;

/// A path: one reference on a mount and one on a dentry (the kernel's
/// `struct path` after `path_get`), as [`lockref::PathRef`]. Cloning takes
/// both references again; dropping releases each exactly once. Opening a
/// file can *consume* it
/// ([`EmptyFile::open_consume`](crate::EmptyFile::open_consume)): the file
/// takes over both references and no count moves (seed 000).
///
/// ```
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// let root = cache.root();
/// assert_eq!(root.dentry().name(), b"/");
/// ```
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
pub type PathRef<'c> = lockref::PathRef<MountRef<'c>, DentryRef<'c>>;

/// A counted reference to a mount (`mntget`; dropping it is `mntput`). The
/// count is split per thread, as the kernel's per-cpu `mnt_count`.
///
/// ```
/// let cache = lockref_dcache::Dcache::new(Default::default());
/// let root = cache.root();
/// let mnt = root.mnt().clone(); // mntget
/// drop(mnt); // mntput
/// ```
pub struct MountRef<'c> {
    pub(crate) mnt: &'c Mount,
}

impl<'c> MountRef<'c> {
    /// `mntget` on `mnt`.
    pub(crate) fn new(mnt: &'c Mount) -> Self {
        mnt.get();
        MountRef { mnt }
    }
}

impl Clone for MountRef<'_> {
    /// `mntget`.
    fn clone(&self) -> Self {
        MountRef::new(self.mnt)
    }
}

impl Drop for MountRef<'_> {
    /// `mntput`.
    fn drop(&mut self) {
        self.mnt.put();
    }
}

impl fmt::Debug for MountRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MountRef").finish_non_exhaustive()
    }
}

impl Dcache {
    /// A path on the root mount to `dentry`, whose reference it takes over.
    pub(crate) fn path<'c>(&'c self, dentry: DentryRef<'c>) -> PathRef<'c> {
        PathRef::new(MountRef::new(&self.root_mnt), dentry)
    }
}
