//! `lockref-fuse`: mounts a passthrough of a host directory.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use lockref_fuse::{
    HostInodes, InodeTable, LockrefTable, MountConfig, Options, Passthrough, VirtiofsdTable,
    DEFAULT_TTL,
};

/// Which inode table counts the inodes.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Table {
    /// lockref's CountedRef: lockless puts, the table's lock only for the last.
    Lockref,
    /// As virtiofsd: the store's write lock on every FORGET.
    Virtiofsd,
}

/// Mirrors SOURCE at MOUNTPOINT through FUSE.
///
/// Serves what a passthrough is asked for: files, directories, links and
/// special files with the host's permission checks as each caller;
/// extended attributes and POSIX ACLs (enforced by the kernel on every
/// path walk); fallocate, SEEK_DATA/SEEK_HOLE and copy_file_range. flock
/// and fcntl locks are kept by the kernel: they hold between processes
/// using the mount, not against direct users of SOURCE.
///
/// Examples:
///
///   lockref-fuse /srv/data /mnt/data
///
///   lockref-fuse --table virtiofsd --threads 8 --allow-other /srv/data /mnt/data
#[derive(Parser, Debug)]
#[command(version, verbatim_doc_comment)]
struct Args {
    /// The host directory to mirror.
    source: PathBuf,
    /// Where to mount it (an existing directory).
    mountpoint: PathBuf,
    /// The inode table.
    #[arg(long, value_enum, default_value_t = Table::Lockref)]
    table: Table,
    /// Threads serving requests: the most served at once for one user.
    /// One more thread reads /dev/fuse for other users' requests, so that
    /// one user's requests, however many or slow, never hold them all
    /// (each user gets a share of these threads while others wait).
    #[arg(long, default_value_t = lockref_fuse::DEFAULT_THREADS as u16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Let other users in: needed for a mount meant for several users, since
    /// without it the kernel refuses every caller but the user who mounted
    /// (FUSE's rule: EACCES for everyone else, whatever the host allows).
    /// The kernel still checks permissions, and each request acts with its
    /// caller's credentials. Needs root, or user_allow_other in
    /// /etc/fuse.conf.
    #[arg(long)]
    allow_other: bool,
    /// Keep an O_PATH descriptor per inode the kernel remembers, instead of
    /// its file handle: for a SOURCE whose filesystem gives no file handles,
    /// or a server that is not root (reopening a handle needs
    /// CAP_DAC_READ_SEARCH). Then one user with many files can exhaust the
    /// server's descriptors for everyone.
    #[arg(long)]
    inode_descriptors: bool,
    /// The most descriptors kept for inodes named by file handle, on any
    /// mount (default: half the hard limit on open descriptors, at most
    /// 65536; held to three quarters of the hard limit less 64, with a
    /// line saying so).
    #[arg(long)]
    descriptor_budget: Option<usize>,
    /// The most open files and directories one user may hold, each a host
    /// descriptor (past it, EMFILE for that user alone; default: an eighth
    /// of what the limit on descriptors leaves beside the budget)
    #[arg(long)]
    handles_per_user: Option<usize>,
    /// Serve every READ and WRITE in the server. By default the kernel
    /// reads and writes open files from the host files itself (FUSE
    /// passthrough, Linux 6.9+) where it offers it, as an ordinary user
    /// (writes meet a user's limits, root's included)
    #[arg(long)]
    no_passthrough: bool,
    /// How long the kernel may trust entries, attributes, missing names
    /// and listings without asking, in seconds (0: ask every time, for a
    /// SOURCE changed by others than the mount's users).
    #[arg(long, default_value_t = DEFAULT_TTL.as_secs_f64())]
    ttl: f64,
    /// Mount SOURCE at MOUNTPOINT as the FUSE root itself. By default a
    /// server that is root mounts it at a private directory first and
    /// shows MOUNTPOINT through a bind mount of an alias of the root,
    /// whose POSIX ACL the kernel caches: the FUSE root's it never does,
    /// which costs every path walk into the mount by a user other than
    /// SOURCE's owner a round trip to the server. Unmounting MOUNTPOINT
    /// ends the server either way.
    #[arg(long)]
    no_root_alias: bool,
    /// Serve requests through FUSE over io_uring (Linux 6.14+ with the
    /// fuse module's enable_uring=1; a server that is root): a ring per
    /// CPU, each request answered on the CPU that made it (opens answered
    /// on a ring get kernel passthrough as any other). Where the kernel
    /// offers no io_uring, /dev/fuse serves
    #[arg(long)]
    io_uring: bool,
}

fn serve<T: InodeTable>(args: &Args) -> std::io::Result<()> {
    let options = Options {
        host_inodes: if args.inode_descriptors {
            HostInodes::ByDescriptor
        } else {
            HostInodes::ByFileHandle
        },
        descriptor_budget: args.descriptor_budget,
        handles_per_user: args.handles_per_user,
        passthrough: !args.no_passthrough,
        ttl: Duration::try_from_secs_f64(args.ttl)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?,
    };
    let fs = Arc::new(Passthrough::<T>::with_options(&args.source, options)?);
    let config = MountConfig {
        threads: usize::from(args.threads),
        allow_other: args.allow_other,
        root_alias: !args.no_root_alias,
        io_uring: args.io_uring,
        ..MountConfig::default()
    };
    lockref_fuse::mount::serve(fs, &args.mountpoint, &config)
}

fn main() {
    let args = Args::parse();
    let result = match args.table {
        Table::Lockref => serve::<LockrefTable>(&args),
        Table::Virtiofsd => serve::<VirtiofsdTable>(&args),
    };
    if let Err(e) = result {
        eprintln!("lockref-fuse: {e}");
        std::process::exit(1);
    }
}
