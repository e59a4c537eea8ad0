//! Where the etcd and kube-apiserver binaries come from.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Directory of prebuilt `etcd` and `kube-apiserver`, used instead of the build cache.
pub const BIN_ENV: &str = "PIPEWARDEN_CONTROL_PLANE_BIN";
/// Where `tests/control-plane/build.sh` puts its output (default `<repo>/.cache/bin`).
pub const CACHE_ENV: &str = "PIPEWARDEN_CONTROL_PLANE_CACHE";

/// The repository root (the parent of this crate).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests crate lives in the repo")
}

/// Paths of the two server binaries.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
}

/// The directory the Go-built binaries are taken from, and how it was chosen.
pub(crate) fn bin_dir() -> (PathBuf, String) {
    match std::env::var_os(BIN_ENV) {
        Some(dir) => (PathBuf::from(dir), format!("${BIN_ENV}")),
        None => match std::env::var_os(CACHE_ENV) {
            Some(dir) => (PathBuf::from(dir), format!("${CACHE_ENV}")),
            None => (repo_root().join(".cache/bin"), "the build cache".to_owned()),
        },
    }
}

/// Another binary `tests/control-plane/build.sh` builds (`registry`, `crane`, `kustomize`).
pub fn tool(name: &str) -> Result<PathBuf> {
    let (dir, origin) = bin_dir();
    let path = dir.join(name);
    if !path.is_file() {
        bail!(
            "{name} not found in {} ({origin}): build it with `make control-plane`",
            dir.display()
        );
    }
    Ok(path)
}

impl Binaries {
    /// `$PIPEWARDEN_CONTROL_PLANE_BIN` if set, else the build cache; fails naming what is missing.
    pub fn locate() -> Result<Self> {
        let (dir, origin) = bin_dir();
        let bins = Self {
            etcd: dir.join("etcd"),
            kube_apiserver: dir.join("kube-apiserver"),
        };
        let missing: Vec<&str> = [
            ("etcd", &bins.etcd),
            ("kube-apiserver", &bins.kube_apiserver),
        ]
        .into_iter()
        .filter(|(_, path)| !path.is_file())
        .map(|(name, _)| name)
        .collect();
        if !missing.is_empty() {
            bail!(
                "control plane binaries missing: {} not found in {} ({origin}). \
                 Build them with `make control-plane` (runs tests/control-plane/build.sh), \
                 or point ${BIN_ENV} at a directory holding etcd and kube-apiserver.",
                missing.join(" and "),
                dir.display(),
            );
        }
        Ok(bins)
    }
}
