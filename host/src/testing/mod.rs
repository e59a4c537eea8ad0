//! In-process test support for the loops' step logic: a scripted fake API server and the
//! default policy, loaded once per test binary. Compiled for the crate's own tests only.

mod default_policy;
pub mod fake_api;
mod scenario;

pub use default_policy::DefaultPolicy;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use crate::engine::{Policy, PolicyOptions};

fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"))
}

/// The default policy as `make policies` builds it, through the test run's compiled-policy
/// cache; without a build, the same logic compiled natively (a fresh clone tests without Wasm).
pub fn default_policy() -> DefaultPolicy {
    static POLICY: OnceLock<DefaultPolicy> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            let path = target_dir().join("wasm32-wasip2/policy/kfp_default.wasm");
            if !path.exists() {
                return DefaultPolicy::native("{}");
            }
            // Generous deadlines: these tests check steps, not speed, on shared cores.
            let options = PolicyOptions {
                cache_dir: Some(target_dir().join("policy-test-cache")),
                render_timeout: Duration::from_secs(5),
                decision_timeout: Duration::from_secs(2),
                ..PolicyOptions::default()
            };
            Policy::load(&path, options)
                .expect("load the default policy")
                .into()
        })
        .clone()
}

/// A file of the repository's test data, as JSON (YAML files are read as YAML).
pub fn data(relative: &str) -> serde_json::Value {
    let path = repo_path(&format!("tests/data/{relative}"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The default policy's settings for KFP 2.17.0, as shipped.
pub fn default_settings() -> String {
    let path = repo_path("policies/kfp-default/settings/kfp-2.17.0.json");
    std::fs::read_to_string(path).expect("the shipped settings")
}
