//! The NATS JetStream sink: each notification is published to one subject as its CloudEvent in
//! structured mode (see `structured`), with the completion key as `Nats-Msg-Id`, and counts as
//! delivered once the stream's acknowledgement arrives. JetStream drops a second message with
//! the same id inside the stream's duplicate window, so a resend after a failure that did
//! reach the stream (a lost acknowledgement, a restart between send and mark) is not stored
//! twice; past the window, the marks on the Workflow are what keep a completion from being
//! sent again.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::{self, message::PublishMessage};

use super::structured::{CONTENT_TYPE, structured};
use super::{Reason, Sending, Sink, SinkError};
use crate::exit::notification::Notification;

/// How the connection to NATS is made (`--exit-nats-*`).
#[derive(Clone, Debug, Default)]
pub struct NatsOptions {
    /// A `.creds` file (user JWT and NKey seed).
    pub creds_file: Option<PathBuf>,
    /// Trust only the PEM certificates in this file, and require TLS.
    pub ca_file: Option<PathBuf>,
}

pub struct Nats {
    jetstream: jetstream::Context,
    subject: String,
}

/// The longest any acknowledgement is awaited inside the client; each send has its own,
/// shorter deadline around it.
const ACK_WAIT_CEILING: Duration = Duration::from_secs(600);

impl Nats {
    /// A client that connects in the background (a NATS server down at start fails the sends,
    /// which are retried, rather than the controller) and reconnects on its own.
    pub async fn connect(url: &str, subject: &str, options: &NatsOptions) -> anyhow::Result<Nats> {
        if subject.is_empty() || subject.contains(['*', '>', ' ']) {
            anyhow::bail!(
                "--exit-nats-subject {subject:?}: publish to one subject, without wildcards"
            );
        }
        let mut connect = async_nats::ConnectOptions::new()
            .name("pipewarden-exit-gate")
            .retry_on_initial_connect();
        if let Some(path) = &options.creds_file {
            connect = connect
                .credentials_file(path)
                .await
                .map_err(|e| anyhow::anyhow!("--exit-nats-creds-file {}: {e}", path.display()))?;
        }
        if let Some(path) = &options.ca_file {
            if !path.is_file() {
                anyhow::bail!("--exit-nats-ca-file {}: not a file", path.display());
            }
            connect = connect
                .add_root_certificates(path.clone())
                .require_tls(true);
        }
        let client = connect
            .connect(url)
            .await
            .map_err(|e| anyhow::anyhow!("--exit-nats-url {url:?}: {e}"))?;
        let jetstream = jetstream::ContextBuilder::new()
            .timeout(ACK_WAIT_CEILING)
            .build(client);
        Ok(Nats {
            jetstream,
            subject: subject.to_owned(),
        })
    }

    async fn publish(&self, notification: &Notification) -> Result<(), PublishError> {
        let message = PublishMessage::build()
            .payload(structured(notification))
            .message_id(&notification.key)
            .header("Content-Type", CONTENT_TYPE);
        let ack = self
            .jetstream
            .send_publish(self.subject.clone(), message)
            .await?
            .await?;
        if ack.duplicate {
            // Stored by an earlier attempt whose outcome was not seen: delivered all the same.
            tracing::debug!(key = notification.key, stream = ack.stream, "duplicate");
        }
        Ok(())
    }
}

impl Sink for Nats {
    fn name(&self) -> &'static str {
        "nats"
    }

    fn send<'a>(&'a self, notification: &'a Notification, timeout: Duration) -> Sending<'a> {
        Box::pin(async move {
            match tokio::time::timeout(timeout, self.publish(notification)).await {
                Ok(published) => published.map_err(|error| sink_error(&error, timeout)),
                Err(_) => Err(SinkError::Timeout(timeout)),
            }
        })
    }
}

/// No stream on the subject, or a message too large for the server, will not pass on the next
/// attempt; anything else (no connection, a JetStream error) may.
fn sink_error(error: &PublishError, timeout: Duration) -> SinkError {
    let text = format!("NATS publish failed: {error}");
    match error.kind() {
        PublishErrorKind::TimedOut => SinkError::Timeout(timeout),
        PublishErrorKind::StreamNotFound | PublishErrorKind::MaxPayloadExceeded => {
            SinkError::Permanent(Reason {
                text,
                answered: true,
            })
        }
        _ => SinkError::unanswered(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_stream_or_an_oversized_message_is_permanent_and_a_lost_ack_a_timeout() {
        let after = Duration::from_secs(2);
        let error = |kind| sink_error(&PublishError::new(kind), after);
        assert_eq!(error(PublishErrorKind::TimedOut), SinkError::Timeout(after));
        for permanent in [
            PublishErrorKind::StreamNotFound,
            PublishErrorKind::MaxPayloadExceeded,
        ] {
            assert_eq!(error(permanent).label(), "permanent", "{permanent:?}");
        }
        for retryable in [
            PublishErrorKind::BrokenPipe,
            PublishErrorKind::MaxAckPending,
            PublishErrorKind::Other,
        ] {
            assert_eq!(error(retryable).label(), "retryable", "{retryable:?}");
        }
    }

    #[tokio::test]
    async fn a_wildcard_or_empty_subject_is_refused_before_connecting() {
        for subject in ["", "pipewarden.*", "pipewarden.>", "two words"] {
            let refused = Nats::connect("nats://127.0.0.1:9", subject, &NatsOptions::default())
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                refused.contains("--exit-nats-subject"),
                "{subject:?}: {refused}"
            );
        }
    }
}
