//! Command-line options shared by every command that loads a policy.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::floor::{Floor, check};
use crate::engine::{Budget, BudgetPreset, BudgetSettings, Policy, PolicyOptions, RetryObserver};
use crate::oci::{FetchOptions, Fetched, PolicyRef, VerifyKey};

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Policy")]
pub struct PolicyArgs {
    /// The policy component: a .wasm file, or an OCI artifact `oci://REGISTRY/REPO@sha256:...`
    /// (pulled by digest into <cache-dir>/oci, and read from there when the registry is away).
    #[arg(long, env = "PIPEWARDEN_POLICY")]
    pub policy: PathBuf,
    /// Accept an `oci://` policy reference with a tag and no digest; the tag is resolved at
    /// every load, and a move of the tag is reloaded.
    #[arg(long, env = "PIPEWARDEN_POLICY_ALLOW_TAG")]
    pub policy_allow_tag: bool,
    /// Credentials for `oci://` policies: a Docker config file or a mounted pull secret
    /// (`.dockerconfigjson`). Default: $DOCKER_CONFIG/config.json or ~/.docker/config.json.
    #[arg(long, env = "PIPEWARDEN_REGISTRY_AUTH_FILE")]
    pub registry_auth_file: Option<PathBuf>,
    /// A cosign public key (cosign.pub): an `oci://` policy loads only with a cosign signature
    /// by this key on its manifest digest; checked at start and at every reload.
    #[arg(long, env = "PIPEWARDEN_POLICY_VERIFY_KEY")]
    pub policy_verify_key: Option<PathBuf>,
    /// Refuse the policy unless its digest is this (sha256:<hex>).
    #[arg(long, env = "PIPEWARDEN_POLICY_SHA256")]
    pub policy_sha256: Option<String>,
    /// A file holding the pin (sha256:<hex>); re-read on every (re)load. Keep it apart from
    /// the policy it pins (the shipped manifests set --policy-sha256 in the Deployment).
    #[arg(
        long,
        env = "PIPEWARDEN_POLICY_SHA256_FILE",
        conflicts_with = "policy_sha256"
    )]
    pub policy_sha256_file: Option<PathBuf>,
    /// Directory for compiled policies; loads from it when possible.
    #[arg(long, env = "PIPEWARDEN_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The policy's limits: compiled (Rust) or interpreter (Python, JavaScript); each flag
    /// below overrides one of them [default: compiled, or the settings' `pipewarden.io/budget`].
    #[arg(long, env = "PIPEWARDEN_POLICY_BUDGET", value_enum)]
    pub budget: Option<BudgetPreset>,
    /// Deadline for render-swf, in milliseconds [compiled 100, interpreter 1000].
    #[arg(long, env = "PIPEWARDEN_RENDER_TIMEOUT_MS")]
    pub render_timeout_ms: Option<u64>,
    /// Deadline for the other exports, in milliseconds [compiled 10, interpreter 250].
    #[arg(long, env = "PIPEWARDEN_DECISION_TIMEOUT_MS")]
    pub decision_timeout_ms: Option<u64>,
    /// Guest memory cap per call, in MiB [compiled 64, interpreter 128].
    #[arg(long, env = "PIPEWARDEN_MEMORY_LIMIT_MIB")]
    pub memory_limit_mib: Option<usize>,
    /// Decisions that may run at once (instance pool slots) [compiled 64, interpreter 16].
    #[arg(long, env = "PIPEWARDEN_POLICY_POOL_SIZE")]
    pub policy_pool_size: Option<u32>,
    /// Core instances one policy instance may create [compiled 16, interpreter 64].
    #[arg(long, env = "PIPEWARDEN_POLICY_CORE_INSTANCES")]
    pub policy_core_instances: Option<u32>,
}

impl PolicyArgs {
    /// The floors of the policy's limits (after a settings budget is filled in).
    pub fn floors(&self) -> Vec<Floor> {
        let budget = self.resolved_budget();
        vec![
            Floor::count(
                "--render-timeout-ms",
                "PIPEWARDEN_RENDER_TIMEOUT_MS",
                budget.render_timeout.as_millis() as u64,
                10,
            ),
            Floor::count(
                "--decision-timeout-ms",
                "PIPEWARDEN_DECISION_TIMEOUT_MS",
                budget.decision_timeout.as_millis() as u64,
                5,
            ),
            Floor::count(
                "--memory-limit-mib",
                "PIPEWARDEN_MEMORY_LIMIT_MIB",
                budget.memory_mib as u64,
                8,
            ),
            Floor::count(
                "--policy-pool-size",
                "PIPEWARDEN_POLICY_POOL_SIZE",
                budget.pool_size.into(),
                1,
            ),
            Floor::count(
                "--policy-core-instances",
                "PIPEWARDEN_POLICY_CORE_INSTANCES",
                budget.core_instances.into(),
                1,
            ),
        ]
    }

    /// Refuses a policy limit below its floor.
    pub fn check_floors(&self) -> anyhow::Result<()> {
        check(&self.floors())
    }

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
            cache_dir: self.cache_dir.clone(),
            pinned_sha256,
            ..PolicyOptions::default()
        }
        .with_budget(&self.resolved_budget()))
    }

    /// These flags, each one not given taken from a settings document's budget.
    pub fn with_settings_budget(&self, settings: &BudgetSettings) -> PolicyArgs {
        PolicyArgs {
            budget: self.budget.or(settings.preset),
            memory_limit_mib: self.memory_limit_mib.or(settings.memory_mib),
            render_timeout_ms: self.render_timeout_ms.or(settings.render_timeout_ms),
            decision_timeout_ms: self.decision_timeout_ms.or(settings.decision_timeout_ms),
            policy_pool_size: self.policy_pool_size.or(settings.pool_size),
            policy_core_instances: self.policy_core_instances.or(settings.core_instances),
            ..self.clone()
        }
    }

    /// The preset's limits with the flags given on top.
    pub fn resolved_budget(&self) -> Budget {
        let preset = self.budget.unwrap_or_default().budget();
        Budget {
            memory_mib: self.memory_limit_mib.unwrap_or(preset.memory_mib),
            render_timeout: self
                .render_timeout_ms
                .map_or(preset.render_timeout, Duration::from_millis),
            decision_timeout: self
                .decision_timeout_ms
                .map_or(preset.decision_timeout, Duration::from_millis),
            pool_size: self.policy_pool_size.unwrap_or(preset.pool_size),
            core_instances: self.policy_core_instances.unwrap_or(preset.core_instances),
            resident_bytes: preset.resident_bytes,
        }
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
        match self.oci_reference()? {
            Some(reference) => {
                let fetched = self.fetch_oci(&reference, options.max_component_bytes)?;
                let label = fetched.reference.to_string();
                // The layer digest pins the bytes (a --policy-sha256 given instead must match).
                let options = PolicyOptions {
                    pinned_sha256: options.pinned_sha256.or(Some(fetched.layer_digest.clone())),
                    ..options
                };
                Policy::from_bytes(&fetched.wasm, &label, options)
                    .with_context(|| format!("cannot load policy {label}"))
            }
            None if self.policy_verify_key.is_some() => anyhow::bail!(
                "--policy-verify-key verifies oci:// policies; {} is a file (pin it with --policy-sha256)",
                self.policy.display()
            ),
            None => Policy::load(&self.policy, options)
                .with_context(|| format!("cannot load policy {}", self.policy.display())),
        }
    }

    /// The `oci://` reference `--policy` names, if it names one.
    pub fn oci_reference(&self) -> anyhow::Result<Option<PolicyRef>> {
        let text = self.policy.to_string_lossy();
        if !crate::oci::is_oci(&text) {
            return Ok(None);
        }
        Ok(Some(PolicyRef::parse(&text)?))
    }

    /// Pulls (or reads from the cache) the policy artifact `reference` names.
    pub fn fetch_oci(&self, reference: &PolicyRef, max_bytes: usize) -> anyhow::Result<Fetched> {
        let options = FetchOptions {
            cache_dir: self.cache_dir.clone(),
            auth_file: self.registry_auth_file.clone(),
            allow_tag: self.policy_allow_tag,
            max_layer_bytes: max_bytes as u64,
            verify_key: self.verify_key()?,
        };
        let fetched = crate::oci::blocking(crate::oci::fetch(reference, &options))?;
        tracing::info!(
            reference = %fetched.reference,
            from_cache = fetched.from_cache,
            bytes = fetched.wasm.len(),
            "policy artifact fetched"
        );
        Ok(fetched)
    }

    fn verify_key(&self) -> anyhow::Result<Option<VerifyKey>> {
        let Some(path) = &self.policy_verify_key else {
            return Ok(None);
        };
        let pem = std::fs::read_to_string(path).with_context(|| {
            format!("cannot read the policy verification key {}", path.display())
        })?;
        let key = VerifyKey::from_pem(&pem)
            .map_err(|why| anyhow::anyhow!("policy verification key {}: {why}", path.display()))?;
        Ok(Some(key))
    }

    /// What identifies the policy bytes without loading them: the file's bytes, or for an OCI
    /// reference the reference and, when a tag is allowed, the digest it points to now.
    pub fn source_fingerprint(&self) -> Option<Vec<u8>> {
        match self.oci_reference() {
            Ok(None) => std::fs::read(&self.policy).ok(),
            Ok(Some(reference)) if reference.digest.is_none() && self.policy_allow_tag => {
                let resolved = crate::oci::blocking(crate::oci::resolve_tag(
                    &reference,
                    self.registry_auth_file.as_deref(),
                ))
                .ok()?;
                Some(format!("{reference}@{resolved}").into_bytes())
            }
            Ok(Some(reference)) => Some(reference.to_string().into_bytes()),
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        policy: PolicyArgs,
    }

    fn flags(args: &[&str]) -> PolicyArgs {
        let argv = ["pipewarden", "--policy", "p.wasm"].iter().chain(args);
        Flags::try_parse_from(argv).unwrap().policy
    }

    #[test]
    fn flags_override_the_settings_budget_which_overrides_the_preset() {
        let from_settings = BudgetSettings {
            preset: Some(BudgetPreset::Interpreter),
            decision_timeout_ms: Some(400),
            pool_size: Some(24),
            ..BudgetSettings::default()
        };
        let budget = flags(&["--policy-pool-size", "32"])
            .with_settings_budget(&from_settings)
            .resolved_budget();
        let interpreter = BudgetPreset::Interpreter.budget();
        assert_eq!(budget.pool_size, 32, "the flag wins");
        assert_eq!(budget.decision_timeout, Duration::from_millis(400));
        assert_eq!(
            budget.memory_mib, interpreter.memory_mib,
            "the settings' preset"
        );
        let plain = flags(&[]).with_settings_budget(&BudgetSettings::default());
        assert_eq!(plain.resolved_budget(), BudgetPreset::Compiled.budget());
    }
}
