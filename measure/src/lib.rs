//! The measurement concepts lockref's criterion benches (`benches/`) and
//! its will-it-scale harness (`harness/`) share, each defined once so both
//! measure the same thing under the same name:
//!
//! - [`GetPut`]: one reference taken and dropped, the unit every
//!   comparison times; [`Floor`] (`fetch_add` + `fetch_sub`, the physical
//!   floor) and [`LockRefGetPut`] implement it;
//! - [`layout`]: the two dentry layouts of the `stat2` comparison (lockref
//!   in the lookup line, or on its own);
//! - [`min_max()`]: slowest and fastest thread;
//! - [`machine()`] and [`cpus`]: what every table names.
//!
//! Nothing here depends on the dentry cache, so the primitive's benches do
//! not build it.

pub mod get_put;
pub mod layout;
pub mod machine;
pub mod min_max;

pub use get_put::{AddWordGetPut, CountedRefGetPut, Floor, GetPut, LockRefGetPut};
pub use machine::{cpus, machine};
pub use min_max::min_max;
