//! Shared by the exit-gate end-to-end tests: the controller run in-process with the test-only
//! event hook, a webhook receiver that counts deliveries, and Workflows written as Argo's
//! controller writes them.

// Each test binary uses a part of this module.
#![allow(dead_code)]

mod controller;
mod receiver;
mod workflows;

pub use controller::*;
pub use receiver::*;
pub use workflows::*;

use std::path::PathBuf;
use std::time::Duration;

/// How long any one condition may take to come true.
pub const WAIT: Duration = Duration::from_secs(120);

/// Settings the default policy validates at load (the exit gate does not use them).
pub const DEFAULT_SETTINGS: &str = "policies/kfp-default/settings/kfp-2.17.0.json";

pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// The default policy component built by `make policies`; fails loudly, naming the command.
pub fn default_policy() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"));
    let path = target.join("wasm32-wasip2/policy/kfp_default.wasm");
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
