//! Where the demo keeps the controller's log, and a one-line account of what it holds.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use pipewarden_tests::repo::repo_path;

const FLAG: &str = "--log=";

/// `--log=PATH` if given, else `demo/pipewarden.log` in the cargo target directory; its
/// directory is created.
pub fn path(mut args: impl Iterator<Item = String>) -> Result<PathBuf> {
    let given = args.find_map(|arg| arg.strip_prefix(FLAG).map(PathBuf::from));
    let path = match given {
        Some(path) if path.as_os_str().is_empty() => bail!("{FLAG} needs a file name"),
        Some(path) => path,
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| repo_path("target"), PathBuf::from)
            .join("demo/pipewarden.log"),
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(path)
}

/// `PATH (N lines: W warnings, E errors)`, the path as short as the working directory allows.
pub fn summary(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the controller log {}", path.display()))?;
    let count = |level: &str| text.lines().filter(|l| has_level(l, level)).count();
    Ok(format!(
        "{} ({} lines: {} warnings, {} errors)",
        shown(path).display(),
        text.lines().count(),
        count("WARN"),
        count("ERROR")
    ))
}

/// Whether a log line (text or JSON) is at `level`.
fn has_level(line: &str, level: &str) -> bool {
    line.split_whitespace().nth(1) == Some(level)
        || line.contains(&format!("\"level\":\"{level}\""))
}

fn shown(path: &Path) -> PathBuf {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let cwd = std::env::current_dir().ok();
    match cwd.and_then(|cwd| absolute.strip_prefix(cwd).ok().map(Path::to_path_buf)) {
        Some(relative) => relative,
        None => absolute,
    }
}
