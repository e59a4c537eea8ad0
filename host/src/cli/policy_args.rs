//! Command-line options shared by every command that loads a policy.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::engine::{Policy, PolicyOptions, RetryObserver};

#[derive(clap::Args, Debug, Clone)]
pub struct PolicyArgs {
    /// The policy component (.wasm).
    #[arg(long, env = "PIPEWARDEN_POLICY")]
    pub policy: PathBuf,
    /// Refuse the policy unless its digest is this (sha256:<hex>).
    #[arg(long, env = "PIPEWARDEN_POLICY_SHA256")]
    pub policy_sha256: Option<String>,
    /// A file holding the pin (sha256:<hex>); re-read on every (re)load, so a policy and its
    /// pin can be updated together.
    #[arg(
        long,
        env = "PIPEWARDEN_POLICY_SHA256_FILE",
        conflicts_with = "policy_sha256"
    )]
    pub policy_sha256_file: Option<PathBuf>,
    /// Directory for compiled policies; loads from it when possible.
    #[arg(long, env = "PIPEWARDEN_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Deadline for render-swf, in milliseconds.
    #[arg(long, env = "PIPEWARDEN_RENDER_TIMEOUT_MS", default_value_t = 100)]
    pub render_timeout_ms: u64,
    /// Deadline for the other exports, in milliseconds.
    #[arg(long, env = "PIPEWARDEN_DECISION_TIMEOUT_MS", default_value_t = 10)]
    pub decision_timeout_ms: u64,
    /// Guest memory cap per call, in MiB.
    #[arg(long, env = "PIPEWARDEN_MEMORY_LIMIT_MIB", default_value_t = 64)]
    pub memory_limit_mib: usize,
}

impl PolicyArgs {
    pub fn options(&self) -> anyhow::Result<PolicyOptions> {
        let pinned_sha256 = match &self.policy_sha256_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the policy pin {}", path.display()))?
                    .trim()
                    .to_string(),
            ),
            None => self.policy_sha256.clone(),
        };
        Ok(PolicyOptions {
            render_timeout: Duration::from_millis(self.render_timeout_ms),
            decision_timeout: Duration::from_millis(self.decision_timeout_ms),
            memory_limit: self.memory_limit_mib << 20,
            cache_dir: self.cache_dir.clone(),
            pinned_sha256,
            ..PolicyOptions::default()
        })
    }

    pub fn load(&self) -> anyhow::Result<Policy> {
        self.load_observed(None)
    }

    /// [`load`](Self::load), telling `retries` of each decision retried after a timeout.
    pub fn load_observed(&self, retries: Option<RetryObserver>) -> anyhow::Result<Policy> {
        let options = PolicyOptions {
            retry_observer: retries,
            ..self.options()?
        };
        Policy::load(&self.policy, options)
            .with_context(|| format!("cannot load policy {}", self.policy.display()))
    }
}

/// Reads a settings file (JSON or YAML) as the JSON text a policy receives; none means `{}`.
pub fn read_settings(path: Option<&PathBuf>) -> anyhow::Result<String> {
    let Some(path) = path else {
        return Ok("{}".into());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read settings {}", path.display()))?;
    let value: serde_json::Value = serde_yaml::from_str(&text)
        .with_context(|| format!("settings {} are neither JSON nor YAML", path.display()))?;
    Ok(value.to_string())
}
