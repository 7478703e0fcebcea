//! The errors a path operation reports, with their POSIX names and codes.

use core::fmt;

/// A path operation's error, named after the `errno` it stands for. Every
/// error leaves every reference count as it was before the call.
///
/// ```
/// use lockref_dcache::Errno;
///
/// assert_eq!(Errno::NoEnt.code(), 2);
/// assert_eq!(Errno::NameTooLong.to_string(), "ENAMETOOLONG: file name too long");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Errno {
    /// `ENOENT`: a component does not exist (or the path is empty).
    NoEnt,
    /// `EEXIST`: `O_CREAT | O_EXCL` on a name that exists.
    Exist,
    /// `ENOTDIR`: a component used as a directory is not one (a path
    /// component, `.` or `..` after it, or the target of a path with a
    /// trailing slash).
    NotDir,
    /// `EISDIR`: a directory opened for writing or with `O_CREAT`, a path
    /// with a trailing slash opened with `O_CREAT`, or a directory unlinked
    /// as a file.
    IsDir,
    /// `ENAMETOOLONG`: a component over [`NAME_MAX`](crate::NAME_MAX) (255)
    /// bytes, a path over [`PATH_MAX`](crate::PATH_MAX) (4095) bytes, or
    /// more than [`MAX_DEPTH`](crate::MAX_DEPTH) components.
    NameTooLong,
    /// `EXDEV`: a handle (a dentry, a path) of another cache was passed to
    /// this one.
    XDev,
    /// `EINVAL`: a name with a NUL byte, or `.`/`..` where a plain name is
    /// needed, or flags that contradict each other; a directory renamed
    /// into its own subtree.
    Inval,
    /// `ENOTEMPTY`: `rmdir` of a directory with entries, or a `rename` over
    /// one.
    NotEmpty,
    /// `EPERM`: a hard link to a directory.
    Perm,
    /// `EBUSY`: `rmdir` or `rename` of the root, or of `.` or `..`.
    Busy,
}

impl Errno {
    /// The Linux `errno` value.
    pub const fn code(self) -> i32 {
        match self {
            Errno::NoEnt => 2,
            Errno::Exist => 17,
            Errno::NotDir => 20,
            Errno::IsDir => 21,
            Errno::Inval => 22,
            Errno::NameTooLong => 36,
            Errno::XDev => 18,
            Errno::NotEmpty => 39,
            Errno::Perm => 1,
            Errno::Busy => 16,
        }
    }

    /// The symbolic name, as `strerrorname_np` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Errno::NoEnt => "ENOENT",
            Errno::Exist => "EEXIST",
            Errno::NotDir => "ENOTDIR",
            Errno::IsDir => "EISDIR",
            Errno::Inval => "EINVAL",
            Errno::NameTooLong => "ENAMETOOLONG",
            Errno::XDev => "EXDEV",
            Errno::NotEmpty => "ENOTEMPTY",
            Errno::Perm => "EPERM",
            Errno::Busy => "EBUSY",
        }
    }

    fn message(self) -> &'static str {
        match self {
            Errno::NoEnt => "no such file or directory",
            Errno::Exist => "file exists",
            Errno::NotDir => "not a directory",
            Errno::IsDir => "is a directory",
            Errno::Inval => "invalid argument",
            Errno::NameTooLong => "file name too long",
            Errno::XDev => "handle of another cache",
            Errno::NotEmpty => "directory not empty",
            Errno::Perm => "operation not permitted",
            Errno::Busy => "device or resource busy",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name(), self.message())
    }
}

impl std::error::Error for Errno {}
