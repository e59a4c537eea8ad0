//! Flags of the exit gate.

use std::path::PathBuf;
use std::time::Duration;

use super::duration::parse_duration;
use super::floor::{Floor, SECOND};

/// What the exit gate does with a completion it lets through.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitMode {
    Notify,
    Observe,
}

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Exit gate")]
pub struct ExitArgs {
    /// Run the exit gate (watches argoproj.io Workflows); turn off where Argo is not installed.
    #[arg(long, env = "PIPEWARDEN_EXIT_GATE", default_value_t = true, action = clap::ArgAction::Set)]
    pub exit_gate: bool,
    /// notify: claim, record and deliver each completion's notification; observe: decide and
    /// record what would be notified (an ExitNotificationObserved Event and
    /// pipewarden_exit_notifications{outcome="observed"}), write nothing to workflows, send
    /// nothing: a first install's report-only mode.
    #[arg(long, env = "PIPEWARDEN_EXIT_MODE", value_enum, default_value_t = ExitMode::Notify)]
    pub exit_mode: ExitMode,
    /// POST each exit notification (a CloudEvent, HTTP binary mode) to this http:// or
    /// https:// URL.
    #[arg(long, env = "PIPEWARDEN_EXIT_WEBHOOK_URL")]
    pub exit_webhook_url: Option<String>,
    /// Trust only the PEM certificates in this file for an https:// webhook (a private CA).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_WEBHOOK_CA_FILE",
        requires = "exit_webhook_url"
    )]
    pub exit_webhook_ca_file: Option<PathBuf>,
    /// Sign each request: X-Pipewarden-Signature: sha256=<hex of HMAC-SHA256 of the body>,
    /// keyed with this file's contents (read per request, so a rotated Secret is used).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_WEBHOOK_SIGNING_KEY_FILE",
        requires = "exit_webhook_url"
    )]
    pub exit_webhook_signing_key_file: Option<PathBuf>,
    /// Send Authorization: Bearer <this file's contents> (read per request, e.g. a projected
    /// service account token).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_WEBHOOK_TOKEN_FILE",
        requires = "exit_webhook_url"
    )]
    pub exit_webhook_token_file: Option<PathBuf>,
    /// Allow a plain http:// webhook on a host that is not loopback (e.g. inside a mesh that
    /// adds mTLS); refused otherwise.
    #[arg(long, env = "PIPEWARDEN_EXIT_WEBHOOK_ALLOW_HTTP", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub exit_webhook_allow_http: bool,
    /// Publish each exit notification (a CloudEvent, structured mode) to NATS JetStream at this
    /// nats:// or tls:// URL instead of POSTing it, with Nats-Msg-Id set to the completion key
    /// so that the stream drops a resend within its duplicate window.
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_NATS_URL",
        conflicts_with = "exit_webhook_url"
    )]
    pub exit_nats_url: Option<String>,
    /// The subject notifications are published to; a JetStream stream must capture it.
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_NATS_SUBJECT",
        default_value = "pipewarden.exit.completed"
    )]
    pub exit_nats_subject: String,
    /// Connect to NATS with this credentials file (a user JWT and NKey seed).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_NATS_CREDS_FILE",
        requires = "exit_nats_url"
    )]
    pub exit_nats_creds_file: Option<PathBuf>,
    /// Require TLS to NATS and trust only the PEM certificates in this file (a private CA).
    #[arg(long, env = "PIPEWARDEN_EXIT_NATS_CA_FILE", requires = "exit_nats_url")]
    pub exit_nats_ca_file: Option<PathBuf>,
    /// Attempts of the action path (confirming read, claim, Event, delivery) per completion,
    /// each with at most one webhook request or NATS publish; then the completion is given up
    /// (an ExitNotificationFailed Event and pipewarden_exit_gave_up).
    #[arg(
        long,
        alias = "exit-webhook-attempts",
        env = "PIPEWARDEN_EXIT_ATTEMPTS",
        default_value_t = 16
    )]
    pub exit_attempts: u32,
    /// Wait before the second attempt; it doubles per attempt (jittered) up to
    /// --exit-retry-max-delay.
    #[arg(long, env = "PIPEWARDEN_EXIT_RETRY_DELAY", default_value = "2s", value_parser = parse_duration)]
    pub exit_retry_delay: Duration,
    /// The longest wait between two attempts (also after a receiver's 4xx).
    #[arg(long, env = "PIPEWARDEN_EXIT_RETRY_MAX_DELAY", default_value = "10m", value_parser = parse_duration)]
    pub exit_retry_max_delay: Duration,
    /// Timeout of one delivery (a webhook request, answer included, or a NATS publish and its
    /// acknowledgement); a timed-out delivery is retried with a longer one (2x, then 4x).
    #[arg(long, env = "PIPEWARDEN_EXIT_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub exit_webhook_timeout: Duration,
    /// Deliveries in flight at once (a quarter more for receivers that timed out).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_DELIVERY_CONCURRENCY",
        default_value_t = 256
    )]
    pub exit_delivery_concurrency: usize,
    /// Deliveries that may wait for a request slot, per lane; beyond it an attempt fails and
    /// is retried after its backoff.
    #[arg(long, env = "PIPEWARDEN_EXIT_DELIVERY_QUEUE", default_value_t = 1024)]
    pub exit_delivery_queue: usize,
    /// The CloudEvents `source` of exit notifications (a URI-reference).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_EVENT_SOURCE",
        default_value = "/pipewarden/exit-gate"
    )]
    pub exit_event_source: String,
    /// Unclaimed completions older than this when first seen are not notified (no flood on
    /// install); each is reported: skipped/<key>, an ExitNotificationSkipped Event, a metric.
    #[arg(long, env = "PIPEWARDEN_EXIT_CATCHUP_WINDOW", default_value = "1h", value_parser = parse_duration)]
    pub exit_catchup_window: Duration,
    /// A claim still pending this long after its workflow finished is given up at once,
    /// whatever attempts a restart would allow.
    #[arg(long, env = "PIPEWARDEN_EXIT_GIVE_UP_AFTER", default_value = "24h", value_parser = parse_duration)]
    pub exit_give_up_after: Duration,
    /// How often pending claims no attempt is working on are taken up again.
    #[arg(long, env = "PIPEWARDEN_EXIT_SWEEP_INTERVAL", default_value = "60s", value_parser = parse_duration)]
    pub exit_sweep_interval: Duration,
    /// How long a tombstone is kept after it was recorded or last raised (Argo keeps 1300 s).
    #[arg(long, env = "PIPEWARDEN_TOMBSTONE_TTL", default_value = "1300s", value_parser = parse_duration)]
    pub tombstone_ttl: Duration,
    /// How long a replica's claim on a completion holds before another may take it over
    /// [default: 4 x --exit-webhook-timeout + 30s, past any delivery still in flight].
    #[arg(long, env = "PIPEWARDEN_EXIT_CLAIM_TTL", value_parser = parse_duration)]
    pub exit_claim_ttl: Option<Duration>,
    /// Keys (a mounted Secret, shared by the replicas; one a line, the first signs, every one
    /// verifies) that claims are signed with; a pending mark without a valid signature is then
    /// not a claim. Unset: claims are unsigned (a warning at start); set, a file missing or
    /// holding no key refuses to start.
    #[arg(long, env = "PIPEWARDEN_EXIT_MARK_KEY_FILE")]
    pub exit_mark_key_file: Option<PathBuf>,
    /// Most tombstones held; the least recently used are evicted beyond it.
    #[arg(
        long,
        env = "PIPEWARDEN_TOMBSTONE_MAX_ENTRIES",
        default_value_t = 200_000
    )]
    pub tombstone_max_entries: u64,
}

impl ExitArgs {
    /// The claim TTL in force.
    pub fn claim_ttl(&self) -> Duration {
        self.exit_claim_ttl
            .unwrap_or(self.exit_webhook_timeout * 4 + Duration::from_secs(30))
    }

    pub fn floors(&self) -> Vec<Floor> {
        vec![
            Floor::duration(
                "--exit-claim-ttl",
                Some("PIPEWARDEN_EXIT_CLAIM_TTL"),
                self.claim_ttl(),
                Duration::from_secs(10),
            ),
            Floor::count(
                "--exit-attempts",
                "PIPEWARDEN_EXIT_ATTEMPTS",
                u64::from(self.exit_attempts),
                1,
            ),
            Floor::count(
                "--exit-delivery-concurrency",
                "PIPEWARDEN_EXIT_DELIVERY_CONCURRENCY",
                self.exit_delivery_concurrency as u64,
                1,
            ),
            Floor::count(
                "--exit-delivery-queue",
                "PIPEWARDEN_EXIT_DELIVERY_QUEUE",
                self.exit_delivery_queue as u64,
                1,
            ),
            Floor::duration(
                "--exit-webhook-timeout",
                Some("PIPEWARDEN_EXIT_WEBHOOK_TIMEOUT"),
                self.exit_webhook_timeout,
                SECOND,
            ),
            Floor::duration(
                "--exit-retry-max-delay",
                Some("PIPEWARDEN_EXIT_RETRY_MAX_DELAY"),
                self.exit_retry_max_delay,
                SECOND,
            ),
            Floor::duration(
                "--exit-give-up-after",
                Some("PIPEWARDEN_EXIT_GIVE_UP_AFTER"),
                self.exit_give_up_after,
                Duration::from_secs(60),
            ),
            Floor::duration(
                "--exit-sweep-interval",
                Some("PIPEWARDEN_EXIT_SWEEP_INTERVAL"),
                self.exit_sweep_interval,
                SECOND,
            ),
            Floor::duration(
                "--exit-catchup-window",
                Some("PIPEWARDEN_EXIT_CATCHUP_WINDOW"),
                self.exit_catchup_window,
                SECOND,
            ),
            Floor::duration(
                "--exit-retry-delay",
                Some("PIPEWARDEN_EXIT_RETRY_DELAY"),
                self.exit_retry_delay,
                SECOND,
            ),
            Floor::duration(
                "--tombstone-ttl",
                Some("PIPEWARDEN_TOMBSTONE_TTL"),
                self.tombstone_ttl,
                SECOND,
            ),
            Floor::count(
                "--tombstone-max-entries",
                "PIPEWARDEN_TOMBSTONE_MAX_ENTRIES",
                self.tombstone_max_entries,
                100,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::ExitArgs;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        exit: ExitArgs,
    }

    #[test]
    fn one_sink_at_a_time_and_nats_options_only_with_nats() {
        let both = [
            "pipewarden",
            "--exit-webhook-url=https://receiver/",
            "--exit-nats-url=nats://nats:4222",
        ];
        assert!(Cli::try_parse_from(both).is_err());
        let alone = ["pipewarden", "--exit-nats-creds-file=/creds/user.creds"];
        assert!(Cli::try_parse_from(alone).is_err());
        let nats = Cli::try_parse_from(["pipewarden", "--exit-nats-url=nats://nats:4222"])
            .unwrap()
            .exit;
        assert_eq!(nats.exit_nats_subject, "pipewarden.exit.completed");
        assert!(nats.exit_webhook_url.is_none());
    }
}
