//! Temporary directories, a policy volume updated the way the kubelet updates a ConfigMap
//! volume, and sha256 pins.

use std::io::Write as _;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context as _, Result, ensure};

/// A directory of its own under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Result<TempDir> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("pipewarden-{label}-{}-{n}", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(TempDir(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies the directory tree `from` into `to` (created), files and directories only.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// `sha256:<hex>` of `bytes`, computed by coreutils' `sha256sum`, independently of the controller.
pub fn sha256_pin(bytes: &[u8]) -> Result<String> {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("running sha256sum")?;
    child
        .stdin
        .take()
        .context("sha256sum stdin")?
        .write_all(bytes)?;
    let output = child.wait_with_output()?;
    ensure!(output.status.success(), "sha256sum failed");
    let text = String::from_utf8(output.stdout)?;
    let hex = text
        .split_whitespace()
        .next()
        .context("no sha256sum output")?;
    Ok(format!("sha256:{hex}"))
}

/// A directory laid out as the kubelet lays out a ConfigMap volume: each file is a symlink
/// through `..data`, which points at a generation directory and is replaced by one rename, so a
/// reader sees all files of one update or all of the previous one.
pub struct PolicyVolume {
    dir: PathBuf,
    generation: u32,
}

impl PolicyVolume {
    pub fn new(dir: &Path) -> PolicyVolume {
        PolicyVolume {
            dir: dir.to_path_buf(),
            generation: 0,
        }
    }

    /// Where the controller reads `name` (e.g. `policy.wasm`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Publishes `files` (name, bytes) as one update.
    pub fn publish(&mut self, files: &[(&str, Vec<u8>)]) -> Result<()> {
        self.generation += 1;
        let generation = format!("..{}", self.generation);
        let staged = self.dir.join(&generation);
        std::fs::create_dir(&staged)?;
        for (name, bytes) in files {
            std::fs::write(staged.join(name), bytes)?;
        }
        let link = self.dir.join("..data_tmp");
        symlink(&generation, &link)?;
        std::fs::rename(&link, self.dir.join("..data"))?;
        for (name, _) in files {
            let visible = self.dir.join(name);
            if std::fs::symlink_metadata(&visible).is_err() {
                symlink(Path::new("..data").join(name), &visible)?;
            }
        }
        if self.generation > 1 {
            let previous = self.dir.join(format!("..{}", self.generation - 1));
            std::fs::remove_dir_all(previous)?;
        }
        Ok(())
    }
}

/// A policy, its pin and its settings, as the policy ConfigMap holds them.
pub fn policy_files(wasm: &Path, settings: &Path) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let bytes = std::fs::read(wasm).with_context(|| format!("{}", wasm.display()))?;
    let pin = sha256_pin(&bytes)?;
    Ok(vec![
        ("policy.wasm", bytes),
        ("policy.sha256", format!("{pin}\n").into_bytes()),
        ("settings.json", std::fs::read(settings)?),
    ])
}
