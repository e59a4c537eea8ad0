//! Hot reload: when the policy file, its settings or its pin file change on disk (a ConfigMap
//! update swaps them), the KFP API server's environment changes (`--settings-from`), or the
//! tag of an `oci://` policy moves (with `--policy-allow-tag`), load and validate the new
//! policy off the decision path and swap it in atomically; a policy that fails anything is
//! refused and the old one keeps serving.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::load_policy;
use super::metrics::Metrics;
use super::policy_handle::PolicyHandle;
use super::settings_source::SettingsSource;
use crate::config::PolicyArgs;

/// Everything a reload reads; any change to these bytes triggers one.
pub struct Inputs {
    policy: PolicyArgs,
    settings: SettingsSource,
}

impl Inputs {
    pub fn new(policy: PolicyArgs, settings: SettingsSource) -> Self {
        Inputs { policy, settings }
    }

    /// A digest of the policy, the settings as read (`settings`) and the pin files together;
    /// None while one is unreadable.
    pub fn fingerprint(&self, settings: &str) -> Option<[u8; 32]> {
        let mut hasher = Sha256::new();
        hasher.update(self.policy.source_fingerprint()?);
        hasher.update([0]);
        hasher.update(settings);
        hasher.update([0]);
        let files = [
            self.policy.policy_sha256_file.as_ref(),
            self.policy.policy_verify_key.as_ref(),
        ];
        for path in files.into_iter().flatten() {
            hasher.update(std::fs::read(path).ok()?);
            hasher.update([0]);
        }
        Some(hasher.finalize().into())
    }
}

/// Polls every `interval` (ConfigMap volumes change by an atomic symlink swap, which polling
/// sees reliably) and swaps in each valid new policy. `loaded_from` is the fingerprint taken
/// before the policy in force was loaded.
pub async fn watch(
    inputs: Inputs,
    loaded_from: Option<[u8; 32]>,
    interval: Duration,
    handle: PolicyHandle,
    metrics: Arc<Metrics>,
) -> anyhow::Result<()> {
    let inputs = Arc::new(inputs);
    let mut last = loaded_from;
    loop {
        tokio::time::sleep(interval).await;
        let settings = match inputs.settings.read().await {
            Ok(settings) => settings,
            // A file briefly missing mid-swap; a Deployment the API server did not return.
            Err(error) => {
                tracing::debug!(
                    error = format!("{error:#}"),
                    "settings unreadable; next time"
                );
                continue;
            }
        };
        // An OCI tag is resolved over the network: off the async workers.
        let now = {
            let (inputs, text) = (inputs.clone(), settings.text.clone());
            tokio::task::spawn_blocking(move || inputs.fingerprint(&text)).await?
        };
        // A file briefly missing mid-swap is not a change worth acting on.
        if now.is_none() || now == last {
            continue;
        }
        last = now;
        let (inputs, metrics_for_load) = (inputs.clone(), metrics.clone());
        let loaded = tokio::task::spawn_blocking(move || {
            let given = inputs.settings.is_given();
            load_policy(&inputs.policy, &settings, given, &metrics_for_load)
        })
        .await?;
        match loaded {
            Ok(loaded) => {
                let previous = handle.current().policy.digest().to_string();
                let next = loaded.policy.digest().to_string();
                handle.swap(loaded);
                tracing::info!(%previous, %next, "policy swapped");
            }
            Err(error) => {
                tracing::error!(
                    error = format!("{error:#}"),
                    "new policy refused; the previous one keeps serving"
                );
            }
        }
    }
}
