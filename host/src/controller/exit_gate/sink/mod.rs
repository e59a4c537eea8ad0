//! Where exit notifications go. A sink sends one notification within a deadline and says how
//! it failed in the terms the action path retries by; the delivery pools and the action path
//! know only the [`Sink`] trait. Each sink maps its own transport's errors (HTTP statuses,
//! JetStream answers) to a [`SinkError`].
//!
//! A sink is not where exactly-once lives: the claim and the mark on the Workflow are, and a
//! sink is asked to deliver one completion more than once only after a failure, always with
//! the same idempotency key, for its receiver (or server) to deduplicate.

pub mod nats;
pub mod structured;
pub mod webhook;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::config::ExitArgs;
use crate::exit::notification::Notification;
use nats::{Nats, NatsOptions};
use webhook::{Webhook, WebhookOptions};

/// A send under way (boxed, so that delivery holds any sink as `dyn Sink`).
pub type Sending<'a> = Pin<Box<dyn Future<Output = Result<(), SinkError>> + Send + 'a>>;

/// One destination of exit notifications.
pub trait Sink: Send + Sync {
    /// The `sink` label of `pipewarden_exit_deliveries_total`.
    fn name(&self) -> &'static str;

    /// Sends `notification` once; done (or failed) within `timeout`.
    fn send<'a>(&'a self, notification: &'a Notification, timeout: Duration) -> Sending<'a>;
}

/// The sink the flags name: the webhook, NATS, or none (completions are claimed, recorded and
/// marked sent without a notification).
pub async fn from_args(args: &ExitArgs) -> anyhow::Result<Option<Arc<dyn Sink>>> {
    if let Some(url) = &args.exit_webhook_url {
        let options = WebhookOptions {
            ca_file: args.exit_webhook_ca_file.clone(),
            signing_key_file: args.exit_webhook_signing_key_file.clone(),
            token_file: args.exit_webhook_token_file.clone(),
            allow_http: args.exit_webhook_allow_http,
        };
        return Ok(Some(Arc::new(Webhook::new(url, &options)?)));
    }
    if let Some(url) = &args.exit_nats_url {
        let options = NatsOptions {
            creds_file: args.exit_nats_creds_file.clone(),
            ca_file: args.exit_nats_ca_file.clone(),
        };
        let nats = Nats::connect(url, &args.exit_nats_subject, &options).await?;
        return Ok(Some(Arc::new(nats)));
    }
    Ok(None)
}

/// Why one send did not deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkError {
    /// No complete answer within the deadline. The receiver may still have taken it, so the
    /// next attempt gets a longer deadline (and the slow lane).
    Timeout(Duration),
    /// Another attempt may well succeed: no answer (refused, reset), a server error, throttling.
    Retryable(Reason),
    /// Refused for a reason another attempt soon will not change (an HTTP 4xx, a stream that
    /// does not exist): tried again only after the longest backoff.
    Permanent(Reason),
}

/// What a sink said about a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub text: String,
    /// The other end answered (an HTTP status, a JetStream error), rather than not at all.
    /// Kept for the `rejected`/`error` split of the old metric name.
    pub answered: bool,
}

impl SinkError {
    /// A failure without any answer from the other end.
    pub fn unanswered(text: impl Into<String>) -> SinkError {
        SinkError::Retryable(Reason {
            text: text.into(),
            answered: false,
        })
    }

    /// The `outcome` label of `pipewarden_exit_deliveries_total`.
    pub fn label(&self) -> &'static str {
        match self {
            SinkError::Timeout(_) => "timeout",
            SinkError::Retryable(_) => "retryable",
            SinkError::Permanent(_) => "permanent",
        }
    }

    /// The `outcome` label of the old `pipewarden_exit_webhook_requests_total`.
    pub fn legacy_label(&self) -> &'static str {
        match self {
            SinkError::Timeout(_) => "timeout",
            SinkError::Retryable(reason) | SinkError::Permanent(reason) if reason.answered => {
                "rejected"
            }
            SinkError::Retryable(_) | SinkError::Permanent(_) => "error",
        }
    }
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SinkError::Timeout(after) => write!(f, "timed out after {after:?}"),
            SinkError::Retryable(reason) | SinkError::Permanent(reason) => {
                f.write_str(&reason.text)
            }
        }
    }
}

impl std::error::Error for SinkError {}
