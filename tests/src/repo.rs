//! Paths into this repository: fixtures, settings and the policies `make policies` builds.

use std::path::PathBuf;

use anyhow::{Result, bail};

/// Settings the default policy validates at load.
pub const DEFAULT_SETTINGS: &str = "policies/kfp-default/settings/kfp-2.17.0.json";

/// The shipped settings of a KFP release's default install, relative to the repository.
pub fn release_settings(version: &str) -> String {
    format!("policies/kfp-default/settings/kfp-{version}.json")
}

pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// A policy component built by `make policies`, or an error naming the command.
pub fn locate_policy(crate_name: &str) -> Result<PathBuf> {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo_path("target"), PathBuf::from);
    let path = target
        .join("wasm32-wasip2/policy")
        .join(format!("{}.wasm", crate_name.replace('-', "_")));
    if !path.is_file() {
        bail!(
            "missing {}: build the policies first with `make policies`",
            path.display()
        );
    }
    Ok(path)
}

/// [`locate_policy`] for tests: fails loudly, naming the command, if missing.
pub fn built_policy(crate_name: &str) -> PathBuf {
    locate_policy(crate_name).unwrap_or_else(|error| panic!("{error}"))
}

/// Controller logs go to stderr only when asked for (`PIPEWARDEN_LOG=debug`).
pub fn init_logs() {
    if std::env::var_os("PIPEWARDEN_LOG").is_some() {
        pipewarden::logging::init();
    }
}
