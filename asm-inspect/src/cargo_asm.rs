//! Building the probes to assembly with cargo, and telling a missing
//! rustup target (a setup step) from a failed build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a listing could not be produced.
pub(crate) enum BuildError {
    /// The target's standard library is not installed: run the command.
    TargetMissing(String),
    /// The build itself failed.
    Failed(String),
}

/// Whether rustup reports `target` as installed; `None` without rustup.
fn target_installed(target: &str) -> Option<bool> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == target),
    )
}

/// `rustup target add` for each target not installed yet.
pub(crate) fn install(targets: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = targets
        .iter()
        .copied()
        .filter(|t| target_installed(t) == Some(false))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let status = Command::new("rustup")
        .args(["target", "add"])
        .args(&missing)
        .status()
        .map_err(|e| format!("rustup: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "rustup target add {} exited with {status}",
            missing.join(" ")
        ))
    }
}

pub(crate) fn host_target() -> &'static str {
    "x86_64-unknown-linux-gnu"
}

/// Compiles the probes for `target` and returns the assembly text.
pub(crate) fn build(
    root: &Path,
    target: &str,
    flags: &[&str],
    features: &[&str],
    name: &str,
) -> Result<String, BuildError> {
    if target_installed(target) == Some(false) {
        return Err(BuildError::TargetMissing(format!(
            "rustup target add {target}"
        )));
    }
    let dir: PathBuf = root
        .join("target/asm-inspect")
        .join(name.replace([' ', '(', ')', '+'], "_"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &dir)
        .env_remove("RUSTFLAGS")
        .args([
            "rustc",
            "-q",
            "-p",
            "lockref-asm-probes",
            "--release",
            "--lib",
            "--target",
            target,
        ])
        .args(features.iter().flat_map(|f| ["--features", f]))
        .arg("--")
        .args(["--emit", "asm", "-C", "codegen-units=1"])
        .args(flags)
        .status()
        .map_err(|e| BuildError::Failed(e.to_string()))?;
    if !status.success() {
        return Err(BuildError::Failed(format!(
            "cargo rustc exited with {status}"
        )));
    }
    let deps = dir.join(target).join("release/deps");
    let newest = std::fs::read_dir(&deps)
        .map_err(|e| BuildError::Failed(format!("{}: {e}", deps.display())))?
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("lockref_asm_probes") && n.ends_with(".s")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| BuildError::Failed("no .s file produced".into()))?;
    std::fs::read_to_string(newest.path()).map_err(|e| BuildError::Failed(e.to_string()))
}
