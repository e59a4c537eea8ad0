//! The KFP version SWFs are rendered for: fixed by flag, or learned by polling the KFP
//! apiserver's health endpoint. Watchers see each change once.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;

use tokio::sync::watch;

use crate::swf::healthz::{self, HEALTHZ_PATH, Health};
use crate::swf::serving::InstallFacts;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Polls `{base_url}/apis/v2beta1/healthz`: plain HTTP (the in-cluster service), or HTTPS
/// (KFP's cert-manager TLS overlays) verified against `--kfp-api-ca-file` or the system roots.
pub struct HealthPoller {
    url: hyper::Uri,
    client: Transport,
}

enum Transport {
    Plain(Client<HttpConnector, Empty<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Empty<Bytes>>),
}

impl HealthPoller {
    pub fn new(base_url: &str, ca_file: Option<&Path>) -> anyhow::Result<Self> {
        let url = format!("{}{HEALTHZ_PATH}", base_url.trim_end_matches('/'));
        let url: hyper::Uri = url
            .parse()
            .with_context(|| format!("--kfp-api-url: {url} is not a URL"))?;
        let builder = Client::builder(TokioExecutor::new());
        let client = match (url.scheme_str(), ca_file) {
            (Some("http"), None) => Transport::Plain(builder.build_http()),
            (Some("http"), Some(_)) => {
                bail!("--kfp-api-ca-file is given but --kfp-api-url {base_url} is not https://")
            }
            (Some("https"), ca_file) => {
                let connector = HttpsConnectorBuilder::new();
                let connector = match ca_file {
                    Some(path) => connector
                        .with_tls_config(crate::cluster::tls::trusting(path, "--kfp-api-ca-file")?),
                    None => connector
                        .with_native_roots()
                        .context("--kfp-api-url: no system trust roots; give --kfp-api-ca-file")?,
                };
                let connector = connector.https_only().enable_http1().build();
                Transport::Tls(builder.build(connector))
            }
            _ => bail!("--kfp-api-url must start with http:// or https://, got {url}"),
        };
        Ok(HealthPoller { url, client })
    }

    /// What the KFP apiserver reports now: its version and mode.
    pub async fn fetch(&self) -> anyhow::Result<Health> {
        let request = async {
            match &self.client {
                Transport::Plain(client) => client.get(self.url.clone()).await,
                Transport::Tls(client) => client.get(self.url.clone()).await,
            }
        };
        let response = tokio::time::timeout(REQUEST_TIMEOUT, request)
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
        healthz::health(&body).map_err(|e| anyhow::anyhow!("GET {}: {e}", self.url))
    }

    /// Polls every `interval` until the receivers are gone, publishing each change of the
    /// version (after `mapped`, the `--compile-as` mappings) and of what the install facts
    /// hold of it (the reported version, multi-user mode).
    pub async fn run(
        self,
        interval: Duration,
        target: watch::Sender<Option<String>>,
        install: Arc<watch::Sender<InstallFacts>>,
        mapped: impl Fn(Option<String>) -> Option<String>,
    ) {
        loop {
            tokio::time::sleep(interval).await;
            if target.is_closed() {
                return;
            }
            match self.fetch().await {
                Ok(health) => {
                    install.send_if_modified(|facts| {
                        let modified = facts.reported != health.version
                            || facts.healthz_multi_user != health.multi_user;
                        facts.reported.clone_from(&health.version);
                        facts.healthz_multi_user = health.multi_user;
                        modified
                    });
                    publish(&target, mapped(health.version));
                }
                Err(error) => tracing::warn!(
                    error = %format!("{error:#}"),
                    "target version poll failed; keeping the last one"
                ),
            }
        }
    }
}

/// Sends `version` if it differs from the current one, logging the change (the loop's standing
/// then says whether it is served).
pub fn publish(target: &watch::Sender<Option<String>>, version: Option<String>) {
    target.send_if_modified(|current| {
        if *current == version {
            return false;
        }
        tracing::info!(
            from = current.as_deref().unwrap_or("unknown"),
            to = version.as_deref().unwrap_or("unknown"),
            "target version changed; every SWF is reconciled again"
        );
        *current = version;
        true
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str, ca: Option<&Path>) -> String {
        match HealthPoller::new(url, ca) {
            Ok(_) => panic!("{url} with {ca:?} was accepted"),
            Err(error) => format!("{error:#}"),
        }
    }

    #[test]
    fn a_ca_file_needs_https_and_a_certificate_and_other_schemes_are_refused() {
        let dir = std::env::temp_dir().join(format!("pipewarden-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let http = refused("http://ml-pipeline.kubeflow:8888", Some(&empty));
        assert!(http.contains("is not https://"), "{http}");
        let none = refused("https://ml-pipeline.kubeflow:8888", Some(&empty));
        assert!(
            none.contains("empty.pem") && none.contains("no PEM certificate"),
            "{none}"
        );
        let missing = refused(
            "https://ml-pipeline.kubeflow:8888",
            Some(&dir.join("gone.pem")),
        );
        assert!(missing.contains("gone.pem"), "{missing}");
        let ftp = refused("ftp://ml-pipeline.kubeflow:8888", None);
        assert!(ftp.contains("http:// or https://"), "{ftp}");
        assert!(HealthPoller::new("https://ml-pipeline.kubeflow:8888", None).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
