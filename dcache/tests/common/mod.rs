//! Helpers shared by the dcache's integration tests.

#![allow(dead_code)]

use lockref_dcache::testing::Balance;
use lockref_dcache::{Config, Dcache, OpenFlags, Variants};

/// A small cache (64 buckets, no revalidation) with `variants`.
pub fn cache(variants: Variants) -> Dcache {
    Dcache::new(Config {
        buckets: 64,
        revalidate: false,
        variants,
        ..Config::default()
    })
}

/// The cache's balance, or a panic naming the first count off.
pub fn balanced(c: &Dcache) -> Balance {
    c.check_balanced().unwrap_or_else(|e| panic!("{e}"))
}

/// Creates the file `path` (and closes it).
pub fn touch(c: &Dcache, path: &str) {
    c.close(c.open(path, OpenFlags::WRONLY.creat()).expect("create"));
}
