//! The webhook sink: one HTTP POST of a CloudEvent in binary mode (`ce-*` headers, the JSON
//! data as the body, `Idempotency-Key`), bounded by a per-request timeout. Retrying is the
//! action path's business (see `action`), so that a completion's attempts, not its requests,
//! are what is bounded; which HTTP failures are worth retrying soon is decided here. Built on the HTTP stack kube already brings (hyper 1,
//! hyper-util's client, hyper-rustls with ring and native roots).
//!
//! The headers are written by hand, per the CloudEvents 1.0 HTTP binding: the `cloudevents-sdk`
//! crate would add chrono, snafu, uuid, delegate-attr and async-trait for six headers.
//!
//! What lets a receiver trust a request: https (system roots or a CA file), an optional
//! `X-Pipewarden-Signature: sha256=<hex>` (HMAC-SHA256 of the body) and, beside it, the
//! Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`: an
//! HMAC-SHA256 over id, timestamp and body, so a receiver can refuse a replayed request), and
//! an optional bearer token. Key and token are read from their files on every request, so a rotated Secret is
//! used without a restart. Plain http is refused for hosts that are not loopback unless
//! allowed (a mesh with mTLS): a token or a signed body would cross the network in the clear.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::{Reason, Sending, Sink, SinkError};
use crate::exit::notification::Notification;
use crate::exit::retry::retryable_status;

enum Transport {
    /// http:// needs no TLS roots (tests, in-cluster receivers behind a mesh).
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
}

pub struct Webhook {
    transport: Transport,
    url: http::Uri,
    signing_key_file: Option<PathBuf>,
    token_file: Option<PathBuf>,
}

/// How requests are made trustworthy to the receiver (`--exit-webhook-*`).
#[derive(Clone, Debug, Default)]
pub struct WebhookOptions {
    pub ca_file: Option<PathBuf>,
    pub signing_key_file: Option<PathBuf>,
    pub token_file: Option<PathBuf>,
    pub allow_http: bool,
}

/// The most of a receiver's answer body that is read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The header carrying the body's HMAC-SHA256, as `sha256=<hex>`.
pub const SIGNATURE_HEADER: &str = "x-pipewarden-signature";
/// Standard Webhooks: when the request was sent, in seconds since the epoch.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// Standard Webhooks: `v1,<base64 HMAC-SHA256 of id.timestamp.body>`.
pub const STANDARD_SIGNATURE_HEADER: &str = "webhook-signature";

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
    pub fn new(url: &str, options: &WebhookOptions) -> anyhow::Result<Webhook> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("--exit-webhook-url {url:?}: {e}"))?;
        let builder = Client::builder(TokioExecutor::new());
        let transport = match (uri.scheme_str(), &options.ca_file) {
            (Some("http"), Some(_)) => {
                anyhow::bail!(
                    "--exit-webhook-ca-file is given but --exit-webhook-url {url} is not https://"
                )
            }
            (Some("http"), None) => {
                if !options.allow_http && !is_loopback(uri.host().unwrap_or_default()) {
                    anyhow::bail!(
                        "--exit-webhook-url {url} is plain http to a host that is not loopback: \
                         notifications (and a token or signature) would cross the network in \
                         the clear; use https:// (with --exit-webhook-ca-file for a private CA) \
                         or pass --exit-webhook-allow-http (e.g. inside a mesh with mTLS)"
                    );
                }
                Transport::Plain(builder.build_http())
            }
            (Some("https"), ca_file) => {
                let connector = HttpsConnectorBuilder::new();
                let connector = match ca_file {
                    Some(path) => connector.with_tls_config(crate::cluster::tls::trusting(
                        path,
                        "--exit-webhook-ca-file",
                    )?),
                    None => connector.with_native_roots().map_err(|e| {
                        anyhow::anyhow!("webhook TLS: {e}; give --exit-webhook-ca-file")
                    })?,
                };
                Transport::Tls(builder.build(connector.https_only().enable_http1().build()))
            }
            _ => anyhow::bail!("--exit-webhook-url must start with http:// or https://"),
        };
        // Unreadable or empty now is a configuration error, not a delivery failure.
        for (flag, file) in [
            ("--exit-webhook-signing-key-file", &options.signing_key_file),
            ("--exit-webhook-token-file", &options.token_file),
        ] {
            if let Some(path) = file {
                read_secret(flag, path)?;
            }
        }
        Ok(Webhook {
            transport,
            url: uri,
            signing_key_file: options.signing_key_file.clone(),
            token_file: options.token_file.clone(),
        })
    }

    /// The request for `body`, signed and authorised as configured.
    fn request(
        &self,
        notification: &Notification,
        body: Bytes,
        timestamp: u64,
    ) -> Result<http::Request<Full<Bytes>>, PostError> {
        let secret = |flag, path: &Path| {
            read_secret(flag, path).map_err(|e| PostError::Transport(format!("{e:#}")))
        };
        let mut request = http::Request::post(self.url.clone());
        for (name, value) in &notification.headers {
            request = request.header(*name, value.as_str());
        }
        request = request.header(TIMESTAMP_HEADER, timestamp.to_string());
        if let Some(path) = &self.signing_key_file {
            let key = secret("--exit-webhook-signing-key-file", path)?;
            request = request.header(SIGNATURE_HEADER, signature(&key, &body));
            let id = notification
                .headers
                .iter()
                .find(|(name, _)| *name == "webhook-id")
                .map_or("", |(_, id)| id.as_str());
            request = request.header(
                STANDARD_SIGNATURE_HEADER,
                standard_signature(&key, id, timestamp, &body),
            );
        }
        if let Some(path) = &self.token_file {
            let token = secret("--exit-webhook-token-file", path)?;
            let token = String::from_utf8(token)
                .map_err(|_| PostError::Transport("the webhook token is not UTF-8".to_owned()))?;
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        request
            .body(Full::new(body))
            .map_err(|e| PostError::Transport(format!("cannot build the request: {e}")))
    }

    /// POSTs `notification` once; a 2xx answer read to its end within `timeout` delivers it.
    pub async fn post(
        &self,
        notification: &Notification,
        timeout: Duration,
    ) -> Result<(), PostError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let request = self.request(notification, notification.body.clone(), now)?;
        let exchange = async {
            let sent = match &self.transport {
                Transport::Plain(client) => client.request(request).await,
                Transport::Tls(client) => client.request(request).await,
            };
            let response = sent.map_err(|e| PostError::Transport(e.to_string()))?;
            let status = response.status();
            // Read the answer to the end so the connection can be reused, up to a bound: a
            // receiver cannot make the controller hold a body of any size. Past it the
            // connection is dropped; the status has answered already.
            let read = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await;
            if let Err(error) = read
                && !error.is::<http_body_util::LengthLimitError>()
            {
                return Err(PostError::Transport(format!("reading the answer: {error}")));
            }
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

impl Sink for Webhook {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn send<'a>(&'a self, notification: &'a Notification, timeout: Duration) -> Sending<'a> {
        Box::pin(async move { self.post(notification, timeout).await.map_err(sink_error) })
    }
}

/// A 5xx, 408 or 429 may pass on the next attempt; another non-2xx answer will not soon.
fn sink_error(error: PostError) -> SinkError {
    match error {
        PostError::Timeout(after) => SinkError::Timeout(after),
        PostError::Transport(_) => SinkError::unanswered(error.to_string()),
        PostError::Status(status) => {
            let reason = Reason {
                text: error.to_string(),
                answered: true,
            };
            if retryable_status(status) {
                SinkError::Retryable(reason)
            } else {
                SinkError::Permanent(reason)
            }
        }
    }
}

/// `v1,<base64>` of the HMAC-SHA256 of `<id>.<timestamp>.<body>`, as Standard Webhooks signs:
/// keyed with the secret's bytes after `whsec_` base64-decoded when the key file holds a
/// Standard Webhooks secret, else with the file's bytes as they are.
pub fn standard_signature(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> String {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let decoded = key
        .strip_prefix(b"whsec_")
        .and_then(|secret| engine.decode(secret).ok());
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, decoded.as_deref().unwrap_or(key));
    let mut context = ring::hmac::Context::with_key(&key);
    context.update(format!("{id}.{timestamp}.").as_bytes());
    context.update(body);
    format!("v1,{}", engine.encode(context.sign().as_ref()))
}

/// `sha256=<hex>` of the HMAC-SHA256 of `body` under `key`.
pub fn signature(key: &[u8], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    format!("sha256={}", hex::encode(ring::hmac::sign(&key, body)))
}

/// A key or token file's contents, surrounding whitespace trimmed (a Secret made with
/// `--from-file` often ends in a newline); empty is an error.
fn read_secret(flag: &str, path: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
    let trimmed = bytes.trim_ascii();
    if trimmed.is_empty() {
        anyhow::bail!("{flag} {}: the file is empty", path.display());
    }
    Ok(trimmed.to_vec())
}

/// `localhost`, 127.0.0.0/8 or ::1: traffic that never leaves the node.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
