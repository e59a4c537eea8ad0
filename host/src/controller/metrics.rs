//! Prometheus metrics. Every failure path counts itself under a stable label.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExportLabel {
    pub export: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyErrorLabels {
    pub export: String,
    pub kind: String,
}

pub struct Metrics {
    registry: Registry,
    /// SWF decisions by outcome: skip, up-to-date, rebuild, would-rebuild, error.
    pub swf_decisions: Family<OutcomeLabel, Counter>,
    /// SWF write requests by outcome: ok, conflict, error.
    pub swf_writes: Family<OutcomeLabel, Counter>,
    /// SWFs whose write lost every conflict retry in one pass.
    pub swf_conflicts_exhausted: Counter,
    /// Workflow events by policy eligibility: process, skip, reject-stale, requeue; or error,
    /// malformed, delay-dropped (a re-check not scheduled).
    pub exit_decisions: Family<OutcomeLabel, Counter>,
    /// Exit processing by outcome: sent, already-notified, unconfirmed, skipped-old, failed
    /// (delivery; retried later), conflict, error, not-leader.
    pub exit_notifications: Family<OutcomeLabel, Counter>,
    /// Exit webhook requests by outcome: ok, rejected (non-2xx), error (no answer).
    pub exit_webhook_requests: Family<OutcomeLabel, Counter>,
    /// Tombstone cache entries.
    pub tombstones: Gauge,
    /// Policy call failures by export and error kind.
    pub policy_errors: Family<PolicyErrorLabels, Counter>,
    /// Policy call latency by export, in seconds.
    pub policy_call_seconds: Family<ExportLabel, Histogram>,
    /// Policy loads by outcome: loaded, refused.
    pub policy_loads: Family<OutcomeLabel, Counter>,
    /// 1 while this replica holds the leader lease (or runs without election).
    pub leader: Gauge,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("pipewarden");
        let swf_decisions = Family::<OutcomeLabel, Counter>::default();
        let swf_writes = Family::<OutcomeLabel, Counter>::default();
        let swf_conflicts_exhausted = Counter::default();
        let exit_decisions = Family::<OutcomeLabel, Counter>::default();
        let exit_notifications = Family::<OutcomeLabel, Counter>::default();
        let exit_webhook_requests = Family::<OutcomeLabel, Counter>::default();
        let tombstones = Gauge::default();
        let policy_errors = Family::<PolicyErrorLabels, Counter>::default();
        let policy_call_seconds = Family::<ExportLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_01, 4.0, 10))
        });
        let policy_loads = Family::<OutcomeLabel, Counter>::default();
        let leader = Gauge::default();
        registry.register(
            "swf_decisions",
            "ScheduledWorkflow decisions by outcome",
            swf_decisions.clone(),
        );
        registry.register(
            "swf_writes",
            "ScheduledWorkflow write requests by outcome",
            swf_writes.clone(),
        );
        registry.register(
            "swf_conflicts_exhausted",
            "ScheduledWorkflows left to the next resync after bounded conflict retries",
            swf_conflicts_exhausted.clone(),
        );
        registry.register(
            "exit_decisions",
            "Workflow events by exit eligibility",
            exit_decisions.clone(),
        );
        registry.register(
            "exit_notifications",
            "Exit notifications by outcome",
            exit_notifications.clone(),
        );
        registry.register(
            "exit_webhook_requests",
            "Exit webhook requests by outcome",
            exit_webhook_requests.clone(),
        );
        registry.register("tombstones", "Tombstone cache entries", tombstones.clone());
        registry.register(
            "policy_errors",
            "Policy call failures by export and kind",
            policy_errors.clone(),
        );
        registry.register(
            "policy_call_seconds",
            "Policy call latency by export",
            policy_call_seconds.clone(),
        );
        registry.register(
            "policy_loads",
            "Policy loads by outcome",
            policy_loads.clone(),
        );
        registry.register("leader", "1 while this replica may write", leader.clone());
        Metrics {
            registry,
            swf_decisions,
            swf_writes,
            swf_conflicts_exhausted,
            exit_decisions,
            exit_notifications,
            exit_webhook_requests,
            tombstones,
            policy_errors,
            policy_call_seconds,
            policy_loads,
            leader,
        }
    }

    pub fn count(family: &Family<OutcomeLabel, Counter>, outcome: &str) {
        family
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_string(),
            })
            .inc();
    }

    pub fn policy_error(&self, error: &crate::engine::PolicyError) {
        self.policy_errors
            .get_or_create(&PolicyErrorLabels {
                export: error.export().name().to_string(),
                kind: error.kind().to_string(),
            })
            .inc();
    }

    /// The registry in Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
