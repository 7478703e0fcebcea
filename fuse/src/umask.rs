//! Each serving thread's own umask, set to the caller's for a creation,
//! so that the host applies it exactly as it would for the caller: the
//! umask where the directory has no default ACL, the default ACL where it
//! has one (`FUSE_DONT_MASK` leaves both to the server).
//!
//! A thread gets a umask of its own by leaving the process's filesystem
//! context (`unshare(CLONE_FS)`, as virtiofsd's threads do), once, at its
//! first creation; then a creation switches it only when the caller's
//! differs from the last one (`umask`, which cannot fail), as the
//! credentials are switched (`creds.rs`). Before, each creation read the
//! directory's default ACL (`getxattr`) to decide whether to apply the
//! umask itself: one system call more for every file made. Where the
//! thread cannot leave (never on Linux for `CLONE_FS`), the server goes
//! on doing that ([`crate::fs::Passthrough::creation_mode`]).
//!
//! Nothing of the server depends on the rest of the context `CLONE_FS`
//! shares (the working directory and the root): every path is relative to
//! a descriptor.

use std::cell::Cell;

use nix::sched::{unshare, CloneFlags};
use nix::sys::stat::Mode;

/// This thread has not tried to leave the process's context.
const NOT_TRIED: u32 = u32::MAX;
/// This thread could not leave it: its umask is the process's (0).
const SHARED: u32 = u32::MAX - 1;

thread_local! {
    /// This thread's umask once it has its own, or [`NOT_TRIED`] or
    /// [`SHARED`].
    static OWN: Cell<u32> = const { Cell::new(NOT_TRIED) };
}

/// Sets this thread's umask to `umask` for a creation it is about to
/// make; whether it could (`false`: the thread shares the process's
/// umask, 0, and the caller must mask the mode itself).
pub(crate) fn set_for_creation(umask: u32) -> bool {
    let umask = umask & 0o777;
    OWN.with(|own| {
        let now = match own.get() {
            SHARED => return false,
            NOT_TRIED => {
                if unshare(CloneFlags::CLONE_FS).is_err() {
                    own.set(SHARED);
                    return false;
                }
                // Set below whatever was inherited.
                NOT_TRIED
            }
            now => now,
        };
        if now != umask {
            nix::sys::stat::umask(Mode::from_bits_truncate(umask));
            own.set(umask);
        }
        true
    })
}

/// This thread's own umask, if it has one (for tests).
#[cfg(test)]
fn own() -> Option<u32> {
    OWN.with(|own| Some(own.get()).filter(|&u| u != NOT_TRIED && u != SHARED))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a thread of its own: its umask changes, the process's (read on
    /// another thread, which shares the process's context) does not.
    #[test]
    fn a_threads_umask_is_its_own() {
        let process = || {
            std::thread::spawn(|| {
                let was = nix::sys::stat::umask(Mode::empty());
                nix::sys::stat::umask(was);
                was.bits()
            })
            .join()
            .unwrap()
        };
        let before = process();
        std::thread::spawn(move || {
            assert!(set_for_creation(0o027));
            assert_eq!(own(), Some(0o027));
            let mut file = std::env::temp_dir();
            file.push(format!("lockref-umask-{}", std::process::id()));
            let made = std::fs::File::create(&file).unwrap();
            let mode =
                std::os::unix::fs::PermissionsExt::mode(&made.metadata().unwrap().permissions());
            std::fs::remove_file(&file).unwrap();
            assert_eq!(mode & 0o777, 0o640, "the thread's umask applied");
            assert!(set_for_creation(0o027), "unchanged: no call");
            assert!(set_for_creation(0o002));
            assert_eq!(own(), Some(0o002));
        })
        .join()
        .unwrap();
        assert_eq!(process(), before, "the process's umask unchanged");
    }
}
