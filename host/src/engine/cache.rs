//! On-disk cache of compiled policies, keyed by (wasm digest, engine configuration).
//!
//! Trust boundary: the cache directory must be writable only by the controller. Each artifact
//! is read fully into memory and checked against its recorded sha256 before deserializing, so a
//! torn write or corruption is caught; tampering by someone who can write the directory is not.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

pub(crate) struct ArtifactCache {
    dir: PathBuf,
}

impl ArtifactCache {
    pub(crate) fn new(dir: &Path) -> Self {
        ArtifactCache {
            dir: dir.to_path_buf(),
        }
    }

    /// The artifact path for a policy digest ("sha256:<hex>") under this engine's configuration.
    pub(crate) fn artifact_path(&self, engine: &Engine, wasm_digest: &str) -> PathBuf {
        let hex = wasm_digest.trim_start_matches("sha256:");
        self.dir
            .join(format!("{hex}-{}.cwasm", engine_fingerprint(engine)))
    }

    /// A previously compiled component, or None if absent, corrupt or made by another engine.
    pub(crate) fn load(&self, engine: &Engine, wasm_digest: &str) -> Option<Component> {
        let path = self.artifact_path(engine, wasm_digest);
        let bytes = std::fs::read(&path).ok()?;
        let recorded = std::fs::read_to_string(checksum_path(&path)).ok()?;
        if recorded.trim() != sha256_hex(&bytes) {
            tracing::warn!(path = %path.display(), "compiled policy failed its checksum; recompiling");
            return None;
        }
        // SAFETY: the bytes were produced by `Component::serialize` of this engine configuration
        // (the file name carries the engine fingerprint, and wasmtime re-checks compatibility),
        // written by this controller into its own cache directory, and verified against the
        // checksum recorded beside them. The bytes are in memory, so they cannot change after
        // the check.
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
        let path = self.artifact_path(engine, wasm_digest);
        let result = component
            .serialize()
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|bytes| {
                std::fs::create_dir_all(&self.dir)?;
                write_atomically(&checksum_path(&path), sha256_hex(&bytes).as_bytes())?;
                write_atomically(&path, &bytes)
            });
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "cannot cache compiled policy");
        }
    }
}

fn checksum_path(artifact: &Path) -> PathBuf {
    artifact.with_extension("cwasm.sha256")
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Unique per writer, so concurrent loads of one policy never share a temporary file.
    let tmp = path.with_extension(format!(
        "tmp{}-{:016x}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let mut file = std::fs::File::create(&tmp)?;
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

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
