//! Path component names: validated, hashed, short ones stored inline.

use std::boxed::Box;

use crate::errno::Errno;

/// The longest component name, in bytes (`NAME_MAX`).
///
/// ```
/// use lockref_dcache::{Dcache, Errno, OpenFlags, NAME_MAX};
///
/// let cache = Dcache::new(Default::default());
/// let long = format!("/{}", "x".repeat(NAME_MAX + 1));
/// assert_eq!(cache.open(&long, OpenFlags::RDONLY).err(), Some(Errno::NameTooLong));
/// ```
pub const NAME_MAX: usize = 255;

/// Names up to this many bytes live inside the dentry (the kernel's
/// `d_iname`); longer ones are allocated.
pub(crate) const INLINE_NAME: usize = 30;

/// Checks one component for use as a name in a directory.
///
/// # Errors
///
/// [`Errno::NoEnt`] for an empty name, [`Errno::NameTooLong`] over
/// [`NAME_MAX`], [`Errno::Inval`] for `/` or NUL inside, or `.`/`..`.
pub(crate) fn validate(name: &[u8]) -> Result<(), Errno> {
    if name.is_empty() {
        return Err(Errno::NoEnt);
    }
    check_len(name)?;
    if is_dot(name) || name.iter().any(|&b| b == b'/' || b == 0) {
        return Err(Errno::Inval);
    }
    Ok(())
}

/// [`Errno::NameTooLong`] for a name over [`NAME_MAX`]. A path walk asks
/// this of a component only when it looks the component up in a directory,
/// as Linux's filesystems do in their `->lookup`: a too-long name under a
/// regular file or a missing directory fails as that walk fails
/// (`ENOTDIR`, `ENOENT`), not with `ENAMETOOLONG`.
pub(crate) fn check_len(name: &[u8]) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        Err(Errno::NameTooLong)
    } else {
        Ok(())
    }
}

/// Whether a component is `.` or `..`, which name a directory and cannot
/// be created or removed.
pub(crate) fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// The hash of `name` in directory `parent` (an address): FNV-1a over the
/// bytes, salted with the parent as the kernel salts `full_name_hash`, and
/// finished with a multiply-xorshift so that the low bits (the bucket
/// index) depend on every byte. Not keyed: like the kernel's, it assumes
/// names are not chosen to collide.
pub(crate) fn hash(parent: usize, name: &[u8]) -> u64 {
    // Under loom the bucket must not depend on heap addresses, which
    // differ between the executions of a model.
    let parent = if cfg!(loom) { 0 } else { parent };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (parent as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

/// A dentry's name, immutable for the dentry's life.
pub(crate) enum Name {
    Inline { len: u8, bytes: [u8; INLINE_NAME] },
    Heap(Box<[u8]>),
}

impl Name {
    /// Copies a name that [`validate`] accepted (or the empty name of a
    /// root or pseudo dentry).
    pub(crate) fn new(name: &[u8]) -> Self {
        if name.len() <= INLINE_NAME {
            let mut bytes = [0; INLINE_NAME];
            bytes[..name.len()].copy_from_slice(name);
            Name::Inline {
                len: name.len() as u8,
                bytes,
            }
        } else {
            Name::Heap(name.into())
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Name::Heap(b) => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        assert_eq!(validate(b"a"), Ok(()));
        assert_eq!(validate(&[b'x'; NAME_MAX]), Ok(()));
        assert_eq!(validate(&[b'x'; NAME_MAX + 1]), Err(Errno::NameTooLong));
        assert_eq!(validate(b""), Err(Errno::NoEnt));
        for bad in [&b"."[..], b"..", b"a/b", b"a\0b", b"/"] {
            assert_eq!(validate(bad), Err(Errno::Inval), "{bad:?}");
        }
        assert_eq!(validate(b"..."), Ok(()));
    }

    #[test]
    fn inline_and_heap_names_round_trip() {
        for len in [0, 1, INLINE_NAME, INLINE_NAME + 1, NAME_MAX] {
            let raw = std::vec![b'n'; len];
            assert_eq!(Name::new(&raw).as_bytes(), &raw[..]);
        }
        assert!(matches!(Name::new(b"short"), Name::Inline { .. }));
        assert!(matches!(Name::new(&[b'l'; 40]), Name::Heap(_)));
    }

    #[test]
    fn hash_depends_on_parent_and_every_byte() {
        assert_ne!(hash(1, b"abc"), hash(2, b"abc"));
        assert_ne!(hash(1, b"abc"), hash(1, b"abd"));
        assert_ne!(hash(1, b"ab"), hash(1, b"abc"));
        assert_eq!(hash(7, b"same"), hash(7, b"same"));
    }
}
