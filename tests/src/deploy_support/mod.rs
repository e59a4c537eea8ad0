//! Shared by the deploy and high-availability tests: the manifests rendered from a copy of
//! `deploy/`, objects applied (or dry-run) through discovery, controllers started in-process on
//! any client (a ServiceAccount's, a partitioned one), a ConfigMap-like policy volume, scraping
//! `/metrics` and reading the PromQL that queries it, the real `pipewarden` binary, and the Helm
//! chart rendered beside kustomize.

// Each test binary uses a part of this module.
mod access;
mod binary;
mod compare;
mod crd_stubs;
mod files;
mod helm;
mod http;
mod manifests;
mod partition;
mod pod_env;
pub mod promql;
mod replica;
mod writers;

pub use access::*;
pub use binary::*;
pub use compare::*;
pub use crd_stubs::*;
pub use files::*;
pub use helm::*;
pub use http::*;
pub use manifests::*;
pub use partition::*;
pub use pod_env::*;
pub use replica::*;
pub use writers::*;

pub use crate::repo::{DEFAULT_SETTINGS, built_policy, init_logs, repo_path};

use std::time::Duration;

/// How long any one condition may take to come true (a hang guard, not a performance bound).
pub const WAIT: Duration = Duration::from_secs(90);
/// The KFP version SWFs are rendered for, matching the default settings.
pub const TARGET: &str = "2.17.0";
pub const DOWNSTREAM_SETTINGS: &str = "policies/kfp-downstream-example/settings/example.json";

/// Waits until `check` holds, for at most [`WAIT`]; returns how long it took.
pub async fn wait_for(what: &str, mut check: impl FnMut() -> bool) -> anyhow::Result<Duration> {
    let started = std::time::Instant::now();
    crate::wait::until(what, WAIT, || {
        let done = check();
        async move { Ok(done.then_some(())) }
    })
    .await?;
    Ok(started.elapsed())
}
