//! The `pipewarden` binary a Deployment runs, for tests that run it as a process.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Result, bail};

use super::repo_path;

/// `target/debug/pipewarden`, built by `cargo build -p pipewarden` (and by `cargo test
/// --workspace`, for the host's own tests). Fails loudly if it is missing or older than the
/// host's sources, rather than testing stale code.
pub fn pipewarden_binary() -> Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"));
    let binary = target.join("debug/pipewarden");
    let Ok(built) = std::fs::metadata(&binary).and_then(|m| m.modified()) else {
        bail!(
            "missing {}: build it with `cargo build -p pipewarden`",
            binary.display()
        );
    };
    let sources = newest(&repo_path("host/src"))?;
    if sources > built {
        bail!(
            "{} is older than host/src: rebuild it with `cargo build -p pipewarden`",
            binary.display()
        );
    }
    Ok(binary)
}

/// The newest modification time of any file under `dir`.
fn newest(dir: &Path) -> Result<SystemTime> {
    let mut latest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let time = if entry.file_type()?.is_dir() {
            newest(&entry.path())?
        } else {
            entry.metadata()?.modified()?
        };
        latest = latest.max(time);
    }
    Ok(latest)
}
