//! What the host's integration tests and benches share: policy components (built on demand),
//! fixtures, Argo workflows and timing. A crate, so the benches need no `#[path]` into tests.

pub mod exit;
mod policy_build;
pub mod timing;

use std::path::PathBuf;

pub use policy_build::built_policy;
pub use timing::{Percentiles, measure, ms, print_table, ratio, us};

pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// Cargo's target directory, where `make policies` puts the components.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"))
}

/// Default engine options with a compiled-policy cache shared by the test run, so each
/// policy is compiled once rather than on every load (slow in debug builds).
pub fn cached_options() -> pipewarden::engine::PolicyOptions {
    pipewarden::engine::PolicyOptions {
        cache_dir: Some(target_dir().join("policy-test-cache")),
        ..Default::default()
    }
}

/// An SWF fixture as compact JSON text.
pub fn swf_fixture(name: &str) -> String {
    let text =
        std::fs::read_to_string(repo_path(&format!("tests/data/swf/{name}"))).expect("fixture");
    let value: serde_json::Value = serde_yaml::from_str(&text).expect("fixture yaml");
    value.to_string()
}

pub fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_path(relative)).expect("repo file")
}
