//! Shared by the SWF end-to-end tests: seeding SWFs as KFP left them, running the controller
//! in-process on a client that logs every request it sends, and reading back what it did.

// Each test binary uses a part of this module.
#![allow(dead_code, unused_imports)]

mod always_conflict;
mod cluster;
mod controller;
mod kfp_api;

pub use cluster::*;
pub use controller::*;
pub use kfp_api::KfpApi;

use std::path::PathBuf;
use std::time::Duration;

/// How long any one condition may take to come true.
pub const WAIT: Duration = Duration::from_secs(90);
/// The KFP version the tests render for, matching the default settings.
pub const TARGET: &str = "2.17.0";

pub const DEFAULT_POLICY: &str = "kfp-default";
pub const DEFAULT_SETTINGS: &str = "policies/kfp-default/settings/kfp-2.17.0.json";
pub const DOWNSTREAM_POLICY: &str = "kfp-downstream-example";
pub const DOWNSTREAM_SETTINGS: &str = "policies/kfp-downstream-example/settings/example.json";

/// The merge patch of the upstream reproduction (KFP #11296).
pub const SEED_000_CORRUPTION: &str = r#"{"spec":{"workflow":{"spec":{"dynamicKey1":"dynamicValue1","dynamicKey2":"dynamicValue2"}}}}"#;

pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// A policy component built by `make policies`; fails loudly, naming the command, if missing.
pub fn built_policy(crate_name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"));
    let path = target
        .join("wasm32-wasip2/policy")
        .join(format!("{}.wasm", crate_name.replace('-', "_")));
    assert!(
        path.exists(),
        "missing {}: build the policies first with `make policies`",
        path.display()
    );
    path
}

/// Controller logs go to stderr only when asked for (`PIPEWARDEN_LOG=debug`).
pub fn init_logs() {
    if std::env::var_os("PIPEWARDEN_LOG").is_some() {
        pipewarden::logging::init();
    }
}
