//! The on-disk cache of pulled policies, content-addressed: `oci/manifests/sha256/<hex>` holds
//! the manifest as pulled, `oci/blobs/sha256/<hex>` the wasm layer. Everything read back is
//! checked against its digest, so a damaged entry is a miss, never a wrong policy.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

pub struct OciCache {
    root: PathBuf,
}

pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

impl OciCache {
    pub fn new(cache_dir: &Path) -> Self {
        OciCache {
            root: cache_dir.join("oci"),
        }
    }

    fn path(&self, kind: &str, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.root.join(kind).join("sha256").join(hex)
    }

    /// The bytes stored under `digest`, if present and intact.
    pub fn get(&self, kind: &str, digest: &str) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.path(kind, digest)).ok()?;
        (sha256(&bytes) == digest).then_some(bytes)
    }

    /// An entry named by another digest (the signature index: manifest digest -> signature
    /// manifest digest); its content is re-checked by whoever follows it.
    pub fn get_named(&self, kind: &str, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(kind, name)).ok()
    }

    pub fn put_named(&self, kind: &str, name: &str, bytes: &[u8]) {
        self.write(&self.path(kind, name), bytes);
    }

    /// Stores `bytes` under their digest (write then rename: readers never see half a file).
    /// A cache that cannot be written costs the next start a pull, so failure is only logged.
    pub fn put(&self, kind: &str, bytes: &[u8]) {
        self.write(&self.path(kind, &sha256(bytes)), bytes);
    }

    fn write(&self, path: &Path, bytes: &[u8]) {
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().expect("cache path has a parent"))?;
            let partial = path.with_extension(format!("partial-{}", std::process::id()));
            std::fs::write(&partial, bytes)?;
            std::fs::rename(&partial, path)
        };
        if let Err(error) = write() {
            tracing::warn!(path = %path.display(), %error, "cannot cache the pulled policy");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_entry_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("pipewarden-oci-cache-{}", std::process::id()));
        let cache = OciCache::new(&dir);
        let digest = sha256(b"policy bytes");
        assert_eq!(cache.get("blobs", &digest), None);
        cache.put("blobs", b"policy bytes");
        assert_eq!(
            cache.get("blobs", &digest).as_deref(),
            Some(&b"policy bytes"[..])
        );
        std::fs::write(cache.path("blobs", &digest), b"tampered").unwrap();
        assert_eq!(cache.get("blobs", &digest), None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
