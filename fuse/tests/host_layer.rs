//! The host layer against a hostile user on filesystems other than the
//! share's own plain one: a btrfs share with subvolumes (every subvolume
//! a device of its own on one mount), a mount inside the share. Each test
//! is an attack that held before its fix, through a real mount; both
//! inode tables.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use lockref_fuse::{InodeTable, Passthrough};

mod common;
use common::volume::Volume;
use common::*;

/// The descriptors this process (the server) holds on files deleted from
/// the host whose path was `path`.
fn deleted_files_held(path: &Path) -> usize {
    let deleted = format!("{} (deleted)", path.display());
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.as_os_str() == deleted.as_str())
        .count()
}

/// Point 2 of the third audit: on a btrfs share, a file removed through
/// the mount inside a subvolume (which any user may create) stayed
/// allocated until the server exited: the removal marked the inode gone
/// only when it was on the share's own device, so the kernel's FORGET
/// kept it, with its descriptor. 301 MiB stayed pinned and root's next
/// write got `ENOSPC`. A removal now finds the inode on any device the
/// server has seen.
fn a_file_removed_in_a_subvolume_is_freed<T: InodeTable>() {
    let volume = std::cell::RefCell::new(None);
    with_mount_made::<T>(
        4,
        |source| {
            let image = source.parent().unwrap().join("share.img");
            *volume.borrow_mut() = Some(Volume::btrfs(&image, source));
            sh(&format!(
                "btrfs -q subvolume create {}/sub",
                source.display()
            ));
            Passthrough::<T>::new(source).unwrap()
        },
        |m| {
            assert_ne!(
                fs::metadata(m.host("sub")).unwrap().dev(),
                fs::metadata(m.host("")).unwrap().dev(),
                "on the host, a subvolume is a device of its own"
            );
            fs::write(m.at("sub/big"), vec![b'x'; 8 << 20]).unwrap();
            assert_eq!(fs::read(m.at("sub/big")).unwrap().len(), 8 << 20);
            wait_for_releases(m);
            fs::remove_file(m.at("sub/big")).unwrap();
            assert!(m.forget_all());
            assert_eq!(
                deleted_files_held(&m.host("sub/big")),
                0,
                "{}: the removed file is still held open by the server",
                T::NAME
            );
            eprintln!(
                "{}: a file removed in a btrfs subvolume is not held",
                T::NAME
            );
            sh(&format!(
                "btrfs -q subvolume delete {}",
                m.host("sub").display()
            ));
            volume.borrow_mut().take().unwrap().detach();
        },
    );
}

/// Point 4 of the third audit: a file deleted on the host directly (not
/// through the mount) stayed allocated while the server kept its inode's
/// cached descriptor: while the kernel knew the inode, and after it forgot
/// it (the lockref table keeps up to 8,192 forgotten inodes), for the
/// server's life if nothing evicted it; another user's `stat` was enough.
/// The sweeper (`sweep.rs`) now closes such descriptors within two sweeps
/// (4 s); the test waits up to 15 s.
fn a_file_deleted_on_the_host_is_let_go<T: InodeTable>() {
    with_mount::<T>(|m| {
        for (batch, forgotten) in [("known", false), ("forgotten", true)] {
            let paths: Vec<_> = (0..8).map(|i| format!("{batch}{i}")).collect();
            for p in &paths {
                fs::write(m.host(p), vec![b'x'; 1 << 20]).unwrap();
            }
            // Another user's `stat` of each: the server looks them up.
            let stats: Vec<String> = paths
                .iter()
                .map(|p| m.at(p).display().to_string())
                .collect();
            let out = as_user(65534, "stat").args(&stats).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            if forgotten {
                assert!(m.forget_all());
            }
            for p in &paths {
                fs::remove_file(m.host(p)).unwrap();
            }
            let held = || {
                paths
                    .iter()
                    .map(|p| deleted_files_held(&m.host(p)))
                    .sum::<usize>()
            };
            let deadline = Instant::now() + Duration::from_secs(15);
            while held() > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            assert_eq!(
                held(),
                0,
                "{}: files deleted on the host ({batch} to the kernel) still held: {:?}",
                T::NAME,
                m.fs.descriptor_stats()
            );
            eprintln!(
                "{}: 8 files deleted on the host ({batch} to the kernel) let go: {:?}",
                T::NAME,
                m.fs.descriptor_stats()
            );
        }
    });
}

on_both_tables!(
    a_file_removed_in_a_subvolume_is_freed,
    a_file_deleted_on_the_host_is_let_go,
);
