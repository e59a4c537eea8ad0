//! Command-line options shared by every command that loads a policy.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::engine::{Policy, PolicyOptions, RetryObserver};
use crate::oci::{FetchOptions, Fetched, PolicyRef, VerifyKey};

#[derive(clap::Args, Debug, Clone)]
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
