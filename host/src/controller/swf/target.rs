//! The KFP version SWFs are rendered for: fixed by flag, or learned by polling the KFP
//! apiserver's health endpoint. Watchers see each change once.

use std::time::Duration;

use anyhow::{Context as _, bail};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;

use tokio::sync::watch;

use crate::controller::metrics::Metrics;

use crate::swf::healthz::{self, HEALTHZ_PATH};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Polls `{base_url}/apis/v2beta1/healthz`. Plain HTTP: the KFP apiserver's in-cluster service.
pub struct HealthPoller {
    url: hyper::Uri,
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl HealthPoller {
    pub fn new(base_url: &str) -> anyhow::Result<Self> {
        let url = format!("{}{HEALTHZ_PATH}", base_url.trim_end_matches('/'));
        let url: hyper::Uri = url
            .parse()
            .with_context(|| format!("--kfp-api-url: {url} is not a URL"))?;
        if url.scheme_str() != Some("http") {
            bail!("--kfp-api-url: only http:// is supported (the in-cluster service), got {url}");
        }
        let client = Client::builder(TokioExecutor::new()).build_http();
        Ok(HealthPoller { url, client })
    }

    /// The version the KFP apiserver reports now; None when it reports none.
    pub async fn fetch(&self) -> anyhow::Result<Option<String>> {
        let response = tokio::time::timeout(REQUEST_TIMEOUT, self.client.get(self.url.clone()))
            .await
            .with_context(|| format!("GET {}: no answer within {REQUEST_TIMEOUT:?}", self.url))?
            .with_context(|| format!("GET {}", self.url))?;
        if !response.status().is_success() {
            bail!("GET {}: {}", self.url, response.status());
        }
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| anyhow::anyhow!("GET {}: {e}", self.url))?
            .to_bytes();
        healthz::target_version(&body).map_err(|e| anyhow::anyhow!("GET {}: {e}", self.url))
    }

    /// Polls every `interval` until the receivers are gone, publishing each change (after
    /// `mapped`, the `--compile-as` mappings).
    pub async fn run(
        self,
        interval: Duration,
        target: watch::Sender<Option<String>>,
        mapped: impl Fn(Option<String>) -> Option<String>,
        metrics: Arc<Metrics>,
    ) {
        loop {
            tokio::time::sleep(interval).await;
            if target.is_closed() {
                return;
            }
            match self.fetch().await {
                Ok(version) => publish(&target, mapped(version), &metrics),
                Err(error) => tracing::warn!(
                    error = %format!("{error:#}"),
                    "target version poll failed; keeping the last one"
                ),
            }
        }
    }
}

/// Sends `version` if it differs from the current one, logging the change; whether the policy
/// supports it is unknown until its first decision.
pub fn publish(target: &watch::Sender<Option<String>>, version: Option<String>, metrics: &Metrics) {
    target.send_if_modified(|current| {
        if *current == version {
            return false;
        }
        tracing::info!(
            from = current.as_deref().unwrap_or("unknown"),
            to = version.as_deref().unwrap_or("unknown"),
            "target version changed; every SWF is reconciled again"
        );
        metrics.set_target(version.as_deref(), None);
        *current = version;
        true
    });
}
