//! [`OpenFlags`]: the `open(2)` flags this cache implements.

use core::fmt;

use crate::errno::Errno;

/// Each flag's Linux name and bits, the access modes first. The one table
/// of names: parsing and printing both use it.
const NAMES: [(&str, u32); 6] = [
    ("O_RDONLY", 0),
    ("O_WRONLY", 0o1),
    ("O_RDWR", 0o2),
    ("O_CREAT", OpenFlags::CREAT),
    ("O_EXCL", OpenFlags::EXCL),
    ("O_DIRECTORY", OpenFlags::DIRECTORY),
];

/// `open(2)` flags: the access mode and the flags this cache implements.
///
/// ```
/// use lockref_dcache::OpenFlags;
///
/// let f = OpenFlags::WRONLY.creat().excl();
/// assert_eq!(f.bits(), 0o301);
/// assert_eq!(OpenFlags::from_bits(0o301), Ok(f));
/// assert!(OpenFlags::from_bits(0o4000000).is_err()); // unknown flag
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFlags(u32);

impl OpenFlags {
    /// `O_RDONLY`.
    pub const RDONLY: OpenFlags = OpenFlags(0);
    /// `O_WRONLY`.
    pub const WRONLY: OpenFlags = OpenFlags(0o1);
    /// `O_RDWR`.
    pub const RDWR: OpenFlags = OpenFlags(0o2);
    const ACCMODE: u32 = 0o3;
    const CREAT: u32 = 0o100;
    const EXCL: u32 = 0o200;
    const DIRECTORY: u32 = 0o200000;
    const KNOWN: u32 = Self::ACCMODE | Self::CREAT | Self::EXCL | Self::DIRECTORY;

    /// Parses Linux `open(2)` flag bits (see the type's example).
    ///
    /// # Errors
    ///
    /// [`Errno::Inval`] for bits this cache does not implement, access mode
    /// 3, or `O_CREAT | O_DIRECTORY` (as Linux since 6.4).
    pub const fn from_bits(bits: u32) -> Result<OpenFlags, Errno> {
        if bits & !Self::KNOWN != 0
            || bits & Self::ACCMODE == Self::ACCMODE
            || (bits & Self::CREAT != 0 && bits & Self::DIRECTORY != 0)
        {
            return Err(Errno::Inval);
        }
        Ok(OpenFlags(bits))
    }

    /// The bits of the flag named `name` (`"O_CREAT"`), if this cache
    /// implements it.
    ///
    /// ```
    /// use lockref_dcache::OpenFlags;
    ///
    /// assert_eq!(OpenFlags::bits_named("O_EXCL"), Some(0o200));
    /// assert_eq!(OpenFlags::bits_named("O_CLOEXEC"), None);
    /// ```
    pub fn bits_named(name: &str) -> Option<u32> {
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, bits)| bits)
    }

    /// The Linux flag bits.
    ///
    /// ```
    /// assert_eq!(lockref_dcache::OpenFlags::RDWR.bits(), 2);
    /// ```
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// With `O_CREAT`: create the file if it does not exist.
    ///
    /// ```
    /// assert!(lockref_dcache::OpenFlags::WRONLY.creat().is_creat());
    /// ```
    #[must_use]
    pub const fn creat(self) -> OpenFlags {
        OpenFlags(self.0 | Self::CREAT)
    }

    /// With `O_EXCL`: with `O_CREAT`, fail with `EEXIST` if it exists.
    ///
    /// ```
    /// assert!(lockref_dcache::OpenFlags::WRONLY.creat().excl().is_excl());
    /// ```
    #[must_use]
    pub const fn excl(self) -> OpenFlags {
        OpenFlags(self.0 | Self::EXCL)
    }

    /// With `O_DIRECTORY`: fail with `ENOTDIR` unless a directory.
    ///
    /// ```
    /// assert!(lockref_dcache::OpenFlags::RDONLY.directory().is_directory());
    /// ```
    #[must_use]
    pub const fn directory(self) -> OpenFlags {
        OpenFlags(self.0 | Self::DIRECTORY)
    }

    /// Whether `O_CREAT` is set.
    ///
    /// ```
    /// assert!(!lockref_dcache::OpenFlags::RDONLY.is_creat());
    /// ```
    pub const fn is_creat(self) -> bool {
        self.0 & Self::CREAT != 0
    }

    /// Whether `O_EXCL` is set.
    ///
    /// ```
    /// assert!(!lockref_dcache::OpenFlags::RDONLY.is_excl());
    /// ```
    pub const fn is_excl(self) -> bool {
        self.0 & Self::EXCL != 0
    }

    /// Whether `O_DIRECTORY` is set.
    ///
    /// ```
    /// assert!(!lockref_dcache::OpenFlags::RDONLY.is_directory());
    /// ```
    pub const fn is_directory(self) -> bool {
        self.0 & Self::DIRECTORY != 0
    }

    /// Whether the access mode allows writing.
    ///
    /// ```
    /// assert!(lockref_dcache::OpenFlags::RDWR.is_write());
    /// assert!(!lockref_dcache::OpenFlags::RDONLY.is_write());
    /// ```
    pub const fn is_write(self) -> bool {
        self.0 & Self::ACCMODE != 0
    }
}

impl fmt::Display for OpenFlags {
    /// The flags as Linux names them, `|`-joined, access mode first.
    ///
    /// ```
    /// use lockref_dcache::OpenFlags;
    ///
    /// assert_eq!(OpenFlags::WRONLY.creat().to_string(), "O_WRONLY|O_CREAT");
    /// assert_eq!(OpenFlags::RDONLY.to_string(), "O_RDONLY");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = self.0 & Self::ACCMODE;
        let (access, flags) = NAMES.split_at(3);
        let name = access
            .iter()
            .find(|(_, b)| *b == mode)
            .map_or("O_RDONLY", |(n, _)| n);
        f.write_str(name)?;
        for (name, bits) in flags {
            if self.0 & bits != 0 {
                write!(f, "|{name}")?;
            }
        }
        Ok(())
    }
}
