//! Shared by the SWF end-to-end tests: seeding SWFs as KFP left them, running the controller
//! in-process on a client that logs every request it sends, and reading back what it did.

// Each test binary uses a part of this module.
mod always_conflict;
mod cluster;
mod controller;
pub mod fleet;
mod kfp_api;
pub mod side;

pub use cluster::*;
pub use controller::*;
pub use kfp_api::KfpApi;

use std::time::Duration;

/// How long any one condition may take to come true.
pub const WAIT: Duration = Duration::from_secs(90);
/// The KFP version the tests render for, matching the default settings.
pub const TARGET: &str = "2.17.0";

pub const DEFAULT_POLICY: &str = "kfp-default";
pub use crate::repo::{DEFAULT_SETTINGS, built_policy, init_logs, repo_path};
pub const DOWNSTREAM_POLICY: &str = "kfp-downstream-example";
pub const DOWNSTREAM_SETTINGS: &str = "policies/kfp-downstream-example/settings/example.json";

/// The merge patch of the upstream reproduction (KFP #11296).
pub const KFP_11296_CORRUPTION: &str = r#"{"spec":{"workflow":{"spec":{"dynamicKey1":"dynamicValue1","dynamicKey2":"dynamicValue2"}}}}"#;
