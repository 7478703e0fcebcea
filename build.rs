//! Detects ThreadSanitizer (`-Zsanitizer=thread`), which does not model
//! `Acquire` fences: under it the crate reads the word with an `Acquire`
//! load where it would fence (see `src/sync.rs`), so that a user's TSan run
//! over code that frees at zero reports no false race. `cfg(sanitize)` is
//! unstable, so the build script reads what Cargo passes it, as
//! crossbeam-utils does.

fn main() {
    println!("cargo:rustc-check-cfg=cfg(lockref_sanitize_thread)");
    println!("cargo:rerun-if-changed=build.rs");
    let sanitizers = std::env::var("CARGO_CFG_SANITIZE").unwrap_or_default();
    if sanitizers.split(',').any(|s| s == "thread") {
        println!("cargo:rustc-cfg=lockref_sanitize_thread");
    }
}
