//! Runs the hot-entry cycle N times on one table, for callgrind.
use lockref_fuse::{DashmapTable, HotInode, LockrefTable};
fn main() {
    let which = std::env::args().nth(1).unwrap();
    let n: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(100_000);
    match which.as_str() {
        "dashmap" => { let h = HotInode::<DashmapTable>::new(); for _ in 0..n { h.run_once(); } }
        "lockref" => { let h = HotInode::<LockrefTable<0>>::new(); for _ in 0..n { h.run_once(); } }
        _ => { let h = HotInode::<LockrefTable<1024>>::new(); for _ in 0..n { h.run_once(); } }
    }
}
