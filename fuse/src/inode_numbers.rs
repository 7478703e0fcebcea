//! [`InodeNumbers`]: the inode number the kernel reports for a host inode
//! (`st_ino`, a listing's `d_ino`), the same for the server's life, across
//! the kernel's `FORGET` and a new `LOOKUP` and across `drop_caches`, so
//! that `git`, `find -samefile`, `tar`, `du` and `rsync -H` see one number
//! per file while it exists. It is not the node id (the inode table's own
//! id, `table.rs`): the number is the host's, told apart across devices.
//!
//! | host inode | number |
//! |---|---|
//! | on the shared directory's device | its host inode number |
//! | on the `n`th other device seen (`n` < 255), its number below 2^56 | `n << 56 \| ino` |
//! | anything else (a number from 2^56, a 255th device) | its host inode number |
//!
//! The last row may repeat another device's number (the host's numbers
//! are per device, and every file here shows on the mount's one device):
//! the price of keeping nothing per inode. The state is one word per
//! device seen, at most 254.

use std::sync::RwLock;

/// The bits of a reported number that carry a host inode number, on a
/// device other than the share's.
const INO_BITS: u32 = 56;
/// Devices other than the share's that get an index (1 to 254).
const OTHER_DEVICES: usize = 254;

/// The inode numbers of host inodes.
#[derive(Debug)]
pub(crate) struct InodeNumbers {
    /// The shared directory's device.
    root_dev: u64,
    /// The devices other than the share's, in the order seen: the `i`th
    /// has index `i + 1`. Read for every number of another device; written
    /// once per device.
    devices: RwLock<Vec<u64>>,
}

impl InodeNumbers {
    /// The numbers of a share on device `root_dev`.
    pub(crate) fn new(root_dev: u64) -> Self {
        InodeNumbers {
            root_dev,
            devices: RwLock::new(Vec::new()),
        }
    }

    /// The number reported for host inode `ino` of device `dev`.
    pub(crate) fn number_of(&self, dev: u64, ino: u64) -> u64 {
        if dev == self.root_dev || ino >= 1 << INO_BITS {
            return ino;
        }
        match self.device_index(dev) {
            Some(index) => index << INO_BITS | ino,
            None => ino,
        }
    }

    /// The index of a device other than the share's, given on first
    /// sight; `None` once 254 devices have one.
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shares_device_keeps_host_inode_numbers() {
        let numbers = InodeNumbers::new(7);
        assert_eq!(numbers.number_of(7, 2), 2);
        assert_eq!(numbers.number_of(7, 1), 1);
        assert_eq!(numbers.number_of(7, u64::MAX), u64::MAX);
    }

    #[test]
    fn other_devices_are_told_apart_by_their_index() {
        let numbers = InodeNumbers::new(7);
        let a = numbers.number_of(8, 12);
        let b = numbers.number_of(9, 12);
        assert_eq!((a, b), (1 << 56 | 12, 2 << 56 | 12));
        assert_eq!(numbers.number_of(8, 12), a, "the same number again");
        assert_eq!(numbers.number_of(8, 1 << 56), 1 << 56, "too large: as is");
    }

    #[test]
    fn a_255th_device_keeps_its_numbers_and_nothing_grows() {
        let numbers = InodeNumbers::new(0);
        for dev in 1..=254 {
            assert_eq!(numbers.number_of(dev, 5) >> 56, dev);
        }
        assert_eq!(numbers.number_of(255, 5), 5);
        assert_eq!(numbers.devices.read().unwrap().len(), 254, "bounded");
    }
}
