//! On-disk cache of compiled policies, keyed by (wasm digest, engine configuration).
//!
//! Trust boundary: the cache directory must be writable only by the controller. Each artifact
//! is checked against its recorded XXH3-128 checksum, then mapped from the file rather than
//! copied; a torn write or corruption is caught, tampering by someone who can write the
//! directory is not (a cryptographic digest would not change that, and is slower to compute
//! over a 36 MB interpreter policy). Artifacts are only ever replaced by rename, so the file
//! mapped is never rewritten in place.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

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
        let recorded = std::fs::read_to_string(checksum_path(&path)).ok()?;
        let actual = match checksum_file(&path) {
            Ok(actual) => actual,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot read compiled policy; recompiling");
                return None;
            }
        };
        if recorded.trim() != actual {
            tracing::warn!(path = %path.display(), "compiled policy failed its checksum; recompiling");
            return None;
        }
        // SAFETY: the file was produced by `Component::serialize` of this engine configuration
        // (its name carries the engine fingerprint, and wasmtime re-checks compatibility),
        // written by this controller into its own cache directory, and matched the checksum
        // recorded beside it. Artifacts are only replaced by rename, never rewritten in place,
        // so the mapping keeps the bytes just checked.
        match unsafe { Component::deserialize_file(engine, &path) } {
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
                write_atomically(&checksum_path(&path), checksum(&bytes).as_bytes())?;
                write_atomically(&path, &bytes)
            });
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "cannot cache compiled policy");
        }
    }
}

fn checksum_path(artifact: &Path) -> PathBuf {
    artifact.with_extension("cwasm.xxh3")
}

fn checksum(bytes: &[u8]) -> String {
    checksum_text(xxh3_128(bytes))
}

fn checksum_text(hash: u128) -> String {
    format!("{hash:032x}")
}

/// The checksum of a file, read in chunks: no buffer the size of the artifact.
fn checksum_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Xxh3::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut chunk)?;
        if read == 0 {
            return Ok(checksum_text(hasher.digest128()));
        }
        hasher.update(&chunk[..read]);
    }
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
