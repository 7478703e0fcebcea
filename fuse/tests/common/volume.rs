//! Volumes mounted inside a test's shared directory (a loop-mounted ext4
//! or btrfs, a tmpfs), unmounted even when the test fails.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::sh;

/// A filesystem mounted at a directory for the length of a test.
pub struct Volume {
    at: PathBuf,
}

impl Volume {
    /// A 64 MiB ext4 volume keeping half its blocks for root, at `at`
    /// (an empty directory), writable by everyone.
    pub fn ext4_with_half_reserved(image: &Path, at: &Path) -> Self {
        Self::loop_mounted(image, 64, "mkfs.ext4 -q -F -m 50", at)
    }

    /// A 64 MiB ext4 volume whose inodes are 128 bytes (no room for a
    /// birth time: `statx` gives none), at `at`, writable by everyone.
    pub fn ext4_without_birth_times(image: &Path, at: &Path) -> Self {
        Self::loop_mounted(image, 64, "mkfs.ext4 -q -F -I 128", at)
    }

    /// A 256 MiB btrfs volume (btrfs' smallest with room to write) at
    /// `at`, writable by everyone.
    pub fn btrfs(image: &Path, at: &Path) -> Self {
        Self::loop_mounted(image, 256, "mkfs.btrfs -q -f", at)
    }

    /// A tmpfs at `at`, writable by everyone.
    pub fn tmpfs(at: &Path) -> Self {
        sh(&format!(
            "mount -t tmpfs -o size=64m tmpfs {}",
            at.display()
        ));
        fs::set_permissions(at, fs::Permissions::from_mode(0o777)).unwrap();
        Volume { at: at.to_owned() }
    }

    /// A tmpfs at `at` that users other than root may search but not
    /// read (mode 0711).
    pub fn tmpfs_unreadable(at: &Path) -> Self {
        sh(&format!(
            "mount -t tmpfs -o size=64m,mode=0711 tmpfs {}",
            at.display()
        ));
        Volume { at: at.to_owned() }
    }

    fn loop_mounted(image: &Path, mib: u64, mkfs: &str, at: &Path) -> Self {
        fs::File::create(image).unwrap().set_len(mib << 20).unwrap();
        sh(&format!("{mkfs} {}", image.display()));
        sh(&format!(
            "mount -o loop {} {}",
            image.display(),
            at.display()
        ));
        fs::set_permissions(at, fs::Permissions::from_mode(0o777)).unwrap();
        Volume { at: at.to_owned() }
    }

    /// Detaches it from the tree at once; it goes, and its loop device
    /// with it, when its last user lets go.
    pub fn detach(self) {
        sh(&format!("umount -l {}", self.at.display()));
        std::mem::forget(self);
    }

    /// Unmounts it (its loop device goes with it), waiting a while for
    /// the server's last descriptor on it: the table counts an inode gone
    /// when it unlinks it, a moment before the thread that forgot it drops
    /// its value and closes the descriptor, so `forget_all` can return
    /// first and the volume be busy for that moment.
    pub fn unmount(self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = std::process::Command::new("umount")
                .arg(&self.at)
                .output()
                .unwrap();
            if out.status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "`umount {}` failed for 10 s: {}",
                self.at.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::mem::forget(self);
    }

    /// Bytes a user other than root may still allocate.
    pub fn available_to_users(&self) -> u64 {
        let st = nix::sys::statvfs::statvfs(&self.at).unwrap();
        st.blocks_available() * st.fragment_size()
    }
}

impl Drop for Volume {
    /// On a failure: detached, whatever still holds it.
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.at)
            .status();
    }
}
