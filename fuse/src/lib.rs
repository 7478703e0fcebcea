//! A passthrough FUSE filesystem whose inode table is a
//! [`lockref_table::Table`] (lockref's safe table of counted objects, on
//! [`CountedRef`](lockref::CountedRef)): a real client of the crates,
//! driven by the kernel and by real programs.
//!
//! It mirrors a host directory. Each host inode the kernel learns of gets
//! a node id and an entry in the inode table, counted by one reference per
//! kernel lookup (a `LOOKUP`, `CREATE`, `MKDIR`, `MKNOD`, `SYMLINK` or
//! `LINK` reply, or a `READDIRPLUS` entry), per open handle and per request
//! in flight. `FORGET` gives the kernel's back, `nlookup` at a time
//! ([`Table::forget`](lockref_table::Table::forget)), and the inode leaves
//! the table when its last reference goes: lookups take no lock, and every
//! put is one lockless atomic but that last one, which takes the inode's
//! lock and then the table's bucket locks to remove it.
//!
//! The same binary runs the baseline, [`VirtiofsdTable`], which counts as
//! virtiofsd's passthrough store does (an atomic count per inode, the
//! store's lock taken exclusively on every `FORGET`), so both are measured
//! side by side.
//!
//! The server (everything but the two tables and the request mix) and its
//! dependencies (nix, libc, clap, and fuser for its types: the request
//! path, the mount and `INIT` are the server's own) are the default
//! feature `server`;
//! the harness builds the crate without it.
//!
//! | piece | file |
//! |---|---|
//! | the table interface, [`Key`], [`ForgetError`] | `table.rs` |
//! | the inode number (`st_ino`) reported for a host inode | `inode_numbers.rs` |
//! | [`LockrefTable`] (lockref) | `lockref_inodes.rs` |
//! | [`VirtiofsdTable`] (virtiofsd-style) | `virtiofsd_inodes.rs` |
//! | [`DashmapTable`] (on `dashmap`, measured only) | `dashmap_inodes.rs` |
//! | the filesystem's state, how a request reaches its inode, [`Passthrough`] | `fs.rs` |
//! | what the server has done, for tests and reports (its counters) | `reports.rs` |
//! | `LOOKUP`, `MKNOD`, `MKDIR`, `SYMLINK`, `LINK`, `UNLINK`, `RMDIR`, `RENAME`, `READLINK` | `names.rs` |
//! | `GETATTR`, `SETATTR`, `ACCESS`, `STATFS` | `attrs.rs` |
//! | `OPEN`, `CREATE`, `READ`, `WRITE`, `FLUSH`, `FSYNC`, `RELEASE` | `files.rs` |
//! | kernel passthrough of open files (on by default, registered as an ordinary user), each open inode's I/O mode | `backing.rs` |
//! | `OPENDIR`, `READDIR`, `READDIRPLUS`, `FSYNCDIR` | `dirs.rs` |
//! | the FUSE wire format of both transports: a request's parts, a reply | `wire/` |
//! | the one dispatcher: each request's operation, whichever transport | `dispatch.rs` |
//! | a decided request's reply, written for its transport | `answer.rs` |
//! | a request served in its user's turn, on either transport | `turns.rs` |
//! | the `/dev/fuse` transport: `INIT`, the serving threads, `fusermount3` | `dev/` |
//! | open file and directory handles | `handles.rs` |
//! | the caller's credentials per request | `creds.rs` |
//! | mount options, [`mount::spawn`], [`mount::serve`] | `mount.rs` |
//! | the share shown through an alias of the root, whose ACL the kernel caches | `root_alias.rs` |
//! | names, attributes, `/proc/self/fd`; what a lookup learns of a host inode, its key | `host/` |
//! | a host inode: a descriptor, or a file handle and its slot | `host_inode.rs` |
//! | a file handle's bytes, as the host gave them | `handle_bytes.rs` |
//! | `name_to_handle_at`, `open_by_handle_at` | `file_handle.rs` |
//! | the mounts inodes are named by handle on, each with its reopening descriptor | `mounts.rs` |
//! | the bounded cache of reopened descriptors | `descriptors/` |
//! | closing cached descriptors of files deleted on the host | `sweep.rs` |
//! | memory given back to the host after many `FORGET`s | `trim.rs` |
//! | each serving thread's own umask, the caller's at a creation | `umask.rs` |
//! | a request's inode with its descriptor (`Live`) | `live.rs` |
//! | [`Options`], [`HostInodes`], [`DEFAULT_TTL`] | `options.rs` |
//! | extended attributes and POSIX ACLs | `xattr.rs` |
//! | fallocate, `SEEK_DATA`/`SEEK_HOLE`, copy_file_range | `ranges.rs` |
//! | [`RequestMix`], [`HotInode`]: the tables' share of requests, for measurements | `workload.rs` |
//! | each user's share of the serving threads, a lone user's turns in one word | `shares/` |
//! | FUSE over io_uring: the rings, their threads and watchdog | `uring/` |
//! | fault hooks for the tests (feature `testing`) | `fault.rs` |

#[cfg(feature = "server")]
mod answer;
#[cfg(feature = "server")]
mod attrs;
#[cfg(feature = "server")]
mod backing;
#[cfg(feature = "server")]
mod creds;
mod dashmap_inodes;
#[cfg(feature = "server")]
mod descriptors;
#[cfg(feature = "server")]
mod dev;
#[cfg(feature = "server")]
mod dirs;
#[cfg(feature = "server")]
mod dispatch;
#[cfg(feature = "testing")]
mod fault;
#[cfg(feature = "server")]
mod file_handle;
#[cfg(feature = "server")]
mod files;
#[cfg(feature = "server")]
mod fs;
mod handle_bytes;
#[cfg(feature = "server")]
mod handles;
#[cfg(feature = "server")]
pub mod host;
mod host_inode;
#[cfg(feature = "server")]
mod inode_numbers;
#[cfg(feature = "server")]
mod live;
mod lockref_inodes;
#[cfg(feature = "server")]
pub mod mount;
#[cfg(feature = "server")]
mod mounts;
#[cfg(feature = "server")]
mod names;
#[cfg(feature = "server")]
mod options;
#[cfg(feature = "server")]
mod ranges;
#[cfg(feature = "server")]
mod reports;
#[cfg(feature = "server")]
mod root_alias;
#[cfg(feature = "server")]
mod shares;
#[cfg(feature = "server")]
mod sweep;
mod table;
#[cfg(feature = "server")]
mod trim;
#[cfg(feature = "server")]
mod turns;
#[cfg(feature = "server")]
mod umask;
#[cfg(feature = "server")]
mod uring;
mod virtiofsd_inodes;
#[cfg(feature = "server")]
mod wire;
mod workload;
#[cfg(feature = "server")]
mod xattr;

pub use crate::dashmap_inodes::{DashmapInode, DashmapTable};
#[cfg(feature = "server")]
pub use crate::descriptors::DescriptorStats;
#[cfg(feature = "server")]
pub use crate::fs::Passthrough;
pub use crate::host_inode::{DescriptorSlot, FileHandleBytes, HostInode};
pub use crate::lockref_inodes::{LockrefInode, LockrefTable, KEEP_FORGOTTEN};
#[cfg(feature = "server")]
pub use crate::mount::MountConfig;
#[cfg(feature = "server")]
pub use crate::options::{HostInodes, Options, DEFAULT_THREADS, DEFAULT_TTL};
#[cfg(feature = "server")]
pub use crate::root_alias::{ROOT_ALIAS_ID, ROOT_ALIAS_NAME};
#[cfg(feature = "server")]
pub use crate::table::{ForgetError, InodeData, InodeTable, Key, ROOT_ID};
pub use crate::virtiofsd_inodes::{VirtiofsdInode, VirtiofsdTable};
pub use crate::workload::{HotInode, RequestMix};
