//! The exit-notification webhook: an HTTP POST of JSON with an `Idempotency-Key` header,
//! retried with jittered backoff a bounded number of times. Built on the HTTP stack kube
//! already brings (hyper 1, hyper-util's client, hyper-rustls with ring and native roots).

use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::controller::metrics::Metrics;
use crate::exit::retry::{jittered, retryable_status};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const BACKOFF_BASE: Duration = Duration::from_millis(200);
const BACKOFF_CAP: Duration = Duration::from_secs(5);

enum Transport {
    /// http:// needs no TLS roots (tests, in-cluster receivers behind a mesh).
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
}

pub struct Webhook {
    transport: Transport,
    url: http::Uri,
    attempts: u32,
}

impl Webhook {
    pub fn new(url: &str, attempts: u32) -> anyhow::Result<Webhook> {
        let url: http::Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("--exit-webhook-url {url:?}: {e}"))?;
        let builder = Client::builder(TokioExecutor::new());
        let transport = match url.scheme_str() {
            Some("http") => Transport::Plain(builder.build_http()),
            Some("https") => {
                let connector = HttpsConnectorBuilder::new()
                    .with_native_roots()
                    .map_err(|e| anyhow::anyhow!("webhook TLS: {e}"))?
                    .https_only()
                    .enable_http1()
                    .build();
                Transport::Tls(builder.build(connector))
            }
            _ => anyhow::bail!("--exit-webhook-url must start with http:// or https://"),
        };
        Ok(Webhook {
            transport,
            url,
            attempts: attempts.max(1),
        })
    }

    /// POSTs `body` until a 2xx answer, a non-retryable one, or the attempts run out.
    pub async fn deliver(&self, metrics: &Metrics, body: &Value, key: &str) -> Result<(), String> {
        let body = Bytes::from(body.to_string());
        let mut last_error = String::new();
        for attempt in 0..self.attempts {
            if attempt > 0 {
                tokio::time::sleep(jittered(attempt - 1, BACKOFF_BASE, BACKOFF_CAP)).await;
            }
            match self.post(body.clone(), key).await {
                Ok(status) if status.is_success() => {
                    Metrics::count(&metrics.exit_webhook_requests, "ok");
                    return Ok(());
                }
                Ok(status) => {
                    Metrics::count(&metrics.exit_webhook_requests, "rejected");
                    last_error = format!("webhook answered {status}");
                    if !retryable_status(status.as_u16()) {
                        break;
                    }
                }
                Err(error) => {
                    Metrics::count(&metrics.exit_webhook_requests, "error");
                    last_error = error;
                }
            }
        }
        Err(last_error)
    }

    async fn post(&self, body: Bytes, key: &str) -> Result<http::StatusCode, String> {
        let request = http::Request::post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header("idempotency-key", key)
            .body(Full::new(body))
            .map_err(|e| format!("cannot build the webhook request: {e}"))?;
        let sent = match &self.transport {
            Transport::Plain(client) => client.request(request),
            Transport::Tls(client) => client.request(request),
        };
        let response = tokio::time::timeout(REQUEST_TIMEOUT, sent)
            .await
            .map_err(|_| format!("webhook timed out after {REQUEST_TIMEOUT:?}"))?
            .map_err(|e| format!("webhook request failed: {e}"))?;
        let status = response.status();
        // Read the answer to the end so the connection can be reused.
        let _ = tokio::time::timeout(REQUEST_TIMEOUT, response.into_body().collect()).await;
        Ok(status)
    }
}
