//! [`NodeIds`]: the node id each host inode gets, which is also the inode
//! number the kernel reports (`st_ino`): fuser sends an entry's
//! `attr.ino` as its node id, so the two cannot differ.
//!
//! A node id is a function of the host inode, the same for the server's
//! life (across the kernel's `FORGET` and a new `LOOKUP`, across
//! `drop_caches`), so `git`, `find -samefile`, `tar`, `du` and `rsync -H`
//! see one number per file while it exists:
//!
//! | host inode | node id |
//! |---|---|
//! | the shared directory | [`ROOT_ID`] (`GETATTR` still reports the host's number) |
//! | the shared directory as the mount point shows it (`root_alias.rs`) | `ROOT_ALIAS_ID`, `0xff << 56`: the one numbered id never given (numbers start at 1) |
//! | on the root's device | its host inode number |
//! | on the `n`th other device seen (`n` < 255) | `n << 56 \| ino` |
//! | anything else (inode number 0, 1 or from 2^56, a 256th device) | `0xff << 56 \| k`, the `k`th such inode, remembered for the server's life |
//! | a number the host gave again (a new birth) while the kernel holds the deleted file's inode | numbered as the row above (the tables ask for it, [`NodeIds::numbered`]) |
//!
//! The numbered rows keep one 32-byte record per such inode for the
//! server's life; on the filesystems whose inode numbers fit (ext4, XFS,
//! btrfs, tmpfs) they hold inode number 1 outside the root and the numbers
//! given again while their first file was still held. Such a file's id
//! (and `st_ino`) is the numbered one for as long as the kernel holds it,
//! and its host number once the kernel looked it up afresh after the first
//! file was forgotten.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use crate::table::{Key, ROOT_ID};

/// The bits of a node id that carry a host inode number.
const INO_BITS: u32 = 56;
/// The device index of ids that are numbered, not composed.
const NUMBERED: u64 = 0xff;
/// Devices other than the root's that get an index (1 to 254).
const OTHER_DEVICES: usize = (NUMBERED - 1) as usize;

/// The node ids of host inodes, one per inode for the server's life.
#[derive(Debug)]
pub(crate) struct NodeIds {
    root: Key,
    /// The devices other than the root's, in the order seen: the `i`th
    /// has index `i + 1`. Read on every id of another device; written once
    /// per device.
    devices: RwLock<Vec<u64>>,
    /// The inodes numbered rather than composed, and the next number.
    numbered: Mutex<(HashMap<Key, u64>, u64)>,
    /// Whether any inode is numbered (set under `numbered`'s lock).
    any_numbered: AtomicBool,
}

impl NodeIds {
    /// The ids of a share whose root is the host inode `root`.
    pub(crate) fn new(root: Key) -> Self {
        NodeIds {
            root,
            devices: RwLock::new(Vec::new()),
            numbered: Mutex::new((HashMap::new(), 1)),
            any_numbered: AtomicBool::new(false),
        }
    }

    /// The node id of the host inode `key`.
    pub(crate) fn id_of(&self, key: Key) -> u64 {
        if key == self.root {
            return ROOT_ID;
        }
        let fits = key.ino != 0 && key.ino < 1 << INO_BITS;
        if fits && key.dev == self.root.dev && key.ino != ROOT_ID {
            return key.ino;
        }
        if fits && key.dev != self.root.dev {
            if let Some(index) = self.device_index(key.dev) {
                return index << INO_BITS | key.ino;
            }
        }
        self.numbered(key)
    }

    /// The node ids `key`'s inode may have now, without giving any, in
    /// the order to try them: the one [`id_of`](Self::id_of) gives it (the
    /// root's, its host number on the root's device, or composed with its
    /// device's index on a device seen before), then its numbered id if it
    /// was given one (a file whose number the host gave again may hold
    /// either; looked for only if the first is not it, and without a lock
    /// while nothing is numbered). Nothing for a device never seen (no
    /// inode of it can be in the tables). Read only: a removal, or a
    /// revival of a kept inode, finds an inode here on any device; only a
    /// lookup gives new indexes and numbers.
    pub(crate) fn known_ids(&self, key: Key) -> impl Iterator<Item = u64> + '_ {
        let composed = if key == self.root {
            Some(ROOT_ID)
        } else if key.ino == 0 || key.ino >= 1 << INO_BITS {
            None
        } else if key.dev == self.root.dev {
            (key.ino != ROOT_ID).then_some(key.ino)
        } else {
            let devices = self.devices.read().unwrap_or_else(|e| e.into_inner());
            let index = devices.iter().position(|&d| d == key.dev);
            index.map(|i| (i as u64 + 1) << INO_BITS | key.ino)
        };
        let numbered = core::iter::once_with(move || {
            // Relaxed: a hint; a key numbered meanwhile is being looked up
            // now, and is found by that lookup.
            if key == self.root || !self.any_numbered.load(Ordering::Relaxed) {
                return None;
            }
            let numbered = self.numbered.lock().unwrap_or_else(|e| e.into_inner());
            numbered.0.get(&key).copied()
        });
        composed.into_iter().chain(numbered.flatten())
    }

    /// The index of a device other than the root's, given on first sight;
    /// `None` once 254 devices have one.
    fn device_index(&self, dev: u64) -> Option<u64> {
        let position = |devices: &[u64]| devices.iter().position(|&d| d == dev);
        let known = position(&self.devices.read().unwrap_or_else(|e| e.into_inner()));
        let index = match known {
            Some(i) => i,
            None => {
                let mut devices = self.devices.write().unwrap_or_else(|e| e.into_inner());
                match position(&devices) {
                    Some(i) => i,
                    None if devices.len() < OTHER_DEVICES => {
                        devices.push(dev);
                        devices.len() - 1
                    }
                    None => return None,
                }
            }
        };
        Some(index as u64 + 1)
    }

    /// A numbered id for `key`, the same for the server's life: for a host
    /// inode whose own id names another live inode (a number the host
    /// gave again after a deletion, with a new birth).
    pub(crate) fn numbered(&self, key: Key) -> u64 {
        let mut numbered = self.numbered.lock().unwrap_or_else(|e| e.into_inner());
        let (ids, next) = &mut *numbered;
        if let Some(&id) = ids.get(&key) {
            return id;
        }
        let id = NUMBERED << INO_BITS | *next;
        *next += 1;
        ids.insert(key, id);
        // Relaxed: see `known_ids`.
        self.any_numbered.store(true, Ordering::Relaxed);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(dev: u64, ino: u64) -> Key {
        Key { dev, ino, birth: 0 }
    }

    #[test]
    fn the_roots_device_keeps_host_inode_numbers() {
        let ids = NodeIds::new(key(7, 2));
        assert_eq!(ids.id_of(key(7, 2)), ROOT_ID);
        assert_eq!(ids.id_of(key(7, 12)), 12);
        assert_eq!(ids.id_of(key(7, (1 << 56) - 1)), (1 << 56) - 1);
    }

    #[test]
    fn other_devices_are_told_apart_by_their_index() {
        let ids = NodeIds::new(key(7, 2));
        let a = ids.id_of(key(8, 12));
        let b = ids.id_of(key(9, 12));
        assert_eq!((a, b), (1 << 56 | 12, 2 << 56 | 12));
        assert_eq!(ids.id_of(key(8, 12)), a, "the same id again");
        assert_eq!(ids.id_of(key(8, 1)), 1 << 56 | 1, "1 is no root there");
    }

    #[test]
    fn inodes_that_do_not_fit_are_numbered_once() {
        let ids = NodeIds::new(key(7, 2));
        let one = ids.id_of(key(7, 1));
        let zero = ids.id_of(key(7, 0));
        let large = ids.id_of(key(7, 1 << 56));
        assert_eq!(
            (one, zero, large),
            (0xff << 56 | 1, 0xff << 56 | 2, 0xff << 56 | 3)
        );
        assert_eq!(ids.id_of(key(7, 1)), one, "remembered");
    }

    #[test]
    fn known_ids_are_found_on_every_device_and_given_by_none() {
        let ids = NodeIds::new(key(7, 2));
        let known = |dev, ino| ids.known_ids(key(dev, ino)).collect::<Vec<_>>();
        assert_eq!(known(7, 2), [ROOT_ID]);
        assert_eq!(known(7, 12), [12]);
        assert_eq!(known(8, 12), [], "a device not seen");
        assert_eq!(known(8, 12), [], "and still not given an index");
        let other = ids.id_of(key(8, 12));
        assert_eq!(known(8, 12), [other]);
        assert_eq!(known(8, 13), [1 << 56 | 13], "its device is known now");
        assert_eq!(known(7, 1), [], "1 is numbered, and is not yet");
        let again = ids.numbered(key(7, 12));
        assert_eq!(known(7, 12), [12, again]);
    }

    #[test]
    fn a_255th_device_is_numbered() {
        let ids = NodeIds::new(key(0, 2));
        for dev in 1..=254 {
            assert_eq!(ids.id_of(key(dev, 5)) >> 56, dev);
        }
        assert_eq!(ids.id_of(key(255, 5)), 0xff << 56 | 1);
        assert_eq!(ids.id_of(key(255, 5)), 0xff << 56 | 1);
    }
}
