//! The exit-notification webhook: one HTTP POST of a CloudEvent in binary mode (`ce-*` headers,
//! the JSON data as the body, `Idempotency-Key`), bounded by a per-request timeout. Retrying is
//! the action path's business (see `action`), so that a completion's attempts, not its
//! requests, are what is bounded. Built on the HTTP stack kube already brings (hyper 1,
//! hyper-util's client, hyper-rustls with ring and native roots).
//!
//! The headers are written by hand, per the CloudEvents 1.0 HTTP binding: the `cloudevents-sdk`
//! crate would add chrono, snafu, uuid, delegate-attr and async-trait for six headers.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::exit::notification::Notification;

enum Transport {
    /// http:// needs no TLS roots (tests, in-cluster receivers behind a mesh).
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
}

pub struct Webhook {
    transport: Transport,
    url: http::Uri,
}

/// Why one POST did not deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostError {
    /// No complete answer within the timeout. The receiver may still have acted on it.
    Timeout(Duration),
    /// Refused, reset, or unreadable.
    Transport(String),
    /// A non-2xx answer.
    Status(u16),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostError::Timeout(after) => write!(f, "webhook timed out after {after:?}"),
            PostError::Transport(error) => write!(f, "webhook request failed: {error}"),
            PostError::Status(status) => write!(f, "webhook answered {status}"),
        }
    }
}

impl Webhook {
    pub fn new(url: &str) -> anyhow::Result<Webhook> {
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
        Ok(Webhook { transport, url })
    }

    /// POSTs `notification` once; a 2xx answer read to its end within `timeout` delivers it.
    pub async fn post(
        &self,
        notification: &Notification,
        timeout: Duration,
    ) -> Result<(), PostError> {
        let mut request = http::Request::post(self.url.clone());
        for (name, value) in &notification.headers {
            request = request.header(*name, value.as_str());
        }
        let request = request
            .body(Full::new(Bytes::from(notification.body.to_string())))
            .map_err(|e| PostError::Transport(format!("cannot build the request: {e}")))?;
        let exchange = async {
            let sent = match &self.transport {
                Transport::Plain(client) => client.request(request).await,
                Transport::Tls(client) => client.request(request).await,
            };
            let response = sent.map_err(|e| PostError::Transport(e.to_string()))?;
            let status = response.status();
            // Read the answer to the end so the connection can be reused.
            response
                .into_body()
                .collect()
                .await
                .map_err(|e| PostError::Transport(format!("reading the answer: {e}")))?;
            if status.is_success() {
                Ok(())
            } else {
                Err(PostError::Status(status.as_u16()))
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Err(PostError::Timeout(timeout)))
    }
}
