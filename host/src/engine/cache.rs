//! On-disk cache of compiled policies, keyed by (wasm digest, engine configuration).
//!
//! A compiled artifact is native code, so it is loaded only when it carries a MAC made with
//! this cache's key over the artifact's bytes, the wasm digest it was compiled from and the
//! engine's configuration: an artifact copied under another policy's name, damaged, or written
//! by anyone without the key is a miss and is compiled again. Artifacts and key live in a
//! subdirectory the process creates 0700 inside the cache directory (`compiled/`), so the
//! directory itself may be a volume anyone in the pod may write (an emptyDir is root's and
//! 0777); the key is created 0600 and checked on the open file. A subdirectory (or key) that is
//! not the process user's own, or that others may write, turns the cache off with a warning.
//! The bytes checked are the bytes loaded. Only the newest [`KEEP`] artifacts are kept.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use ring::hmac;
use wasmtime::Engine;
use wasmtime::component::Component;

const KEY_FILE: &str = "cache.key";
/// The subdirectory of the cache directory that holds the key and the artifacts.
const SUBDIR: &str = "compiled";
/// Artifacts kept: the policy serving and the one before it (a reload that goes back).
pub(crate) const KEEP: usize = 2;
const KEY_BYTES: usize = 32;
/// Separates what the MAC covers; a new format gets a new tag.
const MAC_TAG: &[u8] = b"pipewarden compiled policy v1\0";

pub(crate) struct ArtifactCache {
    dir: PathBuf,
    /// None when the directory cannot be trusted: every load compiles.
    key: Option<hmac::Key>,
}

impl ArtifactCache {
    pub(crate) fn new(dir: &Path) -> Self {
        let dir = dir.join(SUBDIR);
        let dir = dir.as_path();
        let key = open_key(dir)
            .inspect_err(|error| {
                tracing::warn!(dir = %dir.display(), %error, "compiled-policy cache off; compiling on every load");
            })
            .ok();
        ArtifactCache {
            dir: dir.to_path_buf(),
            key,
        }
    }

    /// The artifact path for a policy digest ("sha256:<hex>") under this engine's configuration.
    pub(crate) fn artifact_path(&self, engine: &Engine, wasm_digest: &str) -> PathBuf {
        let hex = wasm_digest.trim_start_matches("sha256:");
        self.dir
            .join(format!("{hex}-{}.cwasm", engine_fingerprint(engine)))
    }

    /// A previously compiled component, or None if absent, not authentic or made by another
    /// engine.
    pub(crate) fn load(&self, engine: &Engine, wasm_digest: &str) -> Option<Component> {
        let key = self.key.as_ref()?;
        let path = self.artifact_path(engine, wasm_digest);
        let recorded = std::fs::read_to_string(mac_path(&path)).ok()?;
        let recorded = hex::decode(recorded.trim()).ok()?;
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot read compiled policy; recompiling");
                return None;
            }
        };
        let message = mac_input(engine, wasm_digest);
        if verify(key, &message, &bytes, &recorded).is_err() {
            tracing::warn!(path = %path.display(), "compiled policy failed its MAC; recompiling");
            return None;
        }
        // SAFETY: these exact bytes carry a MAC under this cache's key (readable only by the
        // process user) over the engine configuration and the wasm digest: they are what
        // `Component::serialize` of this engine produced for this policy, and wasmtime checks
        // compatibility again.
        match unsafe { Component::deserialize(engine, &bytes) } {
            Ok(component) => Some(component),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot load compiled policy; recompiling");
                None
            }
        }
    }

    /// Store a compiled component; failures only cost a recompile next time, so they are logged.
    pub(crate) fn store(&self, engine: &Engine, wasm_digest: &str, component: &Component) {
        let Some(key) = &self.key else {
            return;
        };
        let path = self.artifact_path(engine, wasm_digest);
        let result = component
            .serialize()
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|bytes| {
                let tag = sign(key, &mac_input(engine, wasm_digest), &bytes);
                write_atomically(&mac_path(&path), hex::encode(tag).as_bytes())?;
                write_atomically(&path, &bytes)
            });
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "cannot cache compiled policy");
        }
        self.remove_old();
    }

    /// Removes all but the newest [`KEEP`] artifacts (and their MACs), so the volume holds
    /// what the policies kept need, whatever number of policies was loaded before.
    fn remove_old(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut artifacts: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "cwasm"))
            .filter_map(|path| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
            .collect();
        artifacts.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
        for (_, old) in artifacts.into_iter().skip(KEEP) {
            let _ = std::fs::remove_file(mac_path(&old));
            if let Err(error) = std::fs::remove_file(&old) {
                tracing::warn!(path = %old.display(), %error, "cannot remove an old compiled policy");
            }
        }
    }
}

fn mac_path(artifact: &Path) -> PathBuf {
    artifact.with_extension("cwasm.mac")
}

/// What the MAC covers besides the artifact: the engine and the wasm it was compiled from.
fn mac_input(engine: &Engine, wasm_digest: &str) -> Vec<u8> {
    [
        MAC_TAG,
        engine_fingerprint(engine).as_bytes(),
        b"\0",
        wasm_digest.as_bytes(),
        b"\0",
    ]
    .concat()
}

fn sign(key: &hmac::Key, header: &[u8], bytes: &[u8]) -> Vec<u8> {
    let mut context = hmac::Context::with_key(key);
    context.update(header);
    context.update(bytes);
    context.sign().as_ref().to_vec()
}

/// Compares in constant time, without copying a 36 MB artifact to one slice.
fn verify(key: &hmac::Key, header: &[u8], bytes: &[u8], tag: &[u8]) -> Result<(), ()> {
    let expected = sign(key, header, bytes);
    let differences = expected
        .iter()
        .zip(tag)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    (expected.len() == tag.len() && differences == 0)
        .then_some(())
        .ok_or(())
}

/// Creates the cache directory (0700) and its key (0600) if absent, and refuses either when
/// they are not the process user's own or others may write them.
fn open_key(dir: &Path) -> std::io::Result<hmac::Key> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let user = effective_uid()?;
    ensure_private(dir, user, 0o022)?;
    let path = dir.join(KEY_FILE);
    if !path.exists() {
        create_key(dir, &path)?;
    }
    // Checked on the open file, then read from it: what is checked is what is read.
    let mut file = std::fs::File::open(&path)?;
    ensure_private_metadata(&path, &file.metadata()?, user, 0o077)?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text)?;
    let key = hex::decode(text.trim())
        .ok()
        .filter(|key| key.len() == KEY_BYTES)
        .ok_or_else(|| std::io::Error::other(format!("{} is not a cache key", path.display())))?;
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &key))
}

/// Writes a new key beside `path`, then links it in place: whoever opens the cache at the
/// same time (a test binary's threads, replicas sharing a volume) finds no key or a whole one,
/// never one half written. The first link wins; the others read it.
fn create_key(dir: &Path, path: &Path) -> std::io::Result<()> {
    let tmp = dir.join(format!("{KEY_FILE}.{:016x}.tmp", rand::random::<u64>()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let key: [u8; KEY_BYTES] = rand::random();
    let written = file
        .write_all(&hex::encode(key).into_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match written {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// `path` is owned by `user` and has none of the `forbidden` permission bits.
fn ensure_private(path: &Path, user: u32, forbidden: u32) -> std::io::Result<()> {
    ensure_private_metadata(path, &std::fs::symlink_metadata(path)?, user, forbidden)
}

fn ensure_private_metadata(
    path: &Path,
    metadata: &std::fs::Metadata,
    user: u32,
    forbidden: u32,
) -> std::io::Result<()> {
    if metadata.uid() != user {
        return Err(std::io::Error::other(format!(
            "{} belongs to uid {}, not to this process (uid {user})",
            path.display(),
            metadata.uid()
        )));
    }
    if metadata.mode() & forbidden != 0 {
        return Err(std::io::Error::other(format!(
            "{} has mode {:o}: others may change it",
            path.display(),
            metadata.mode() & 0o7777
        )));
    }
    Ok(())
}

/// The effective uid, from procfs (no libc call needed).
fn effective_uid() -> std::io::Result<u32> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|uid| uid.parse().ok())
        .ok_or_else(|| std::io::Error::other("no effective uid in /proc/self/status"))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Unique per writer, so concurrent loads of one policy never share a temporary file.
    let tmp = path.with_extension(format!(
        "tmp{}-{:016x}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Changes whenever wasmtime would refuse an artifact compiled under another configuration.
fn engine_fingerprint(engine: &Engine) -> String {
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
