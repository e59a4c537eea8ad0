//! Metrics of the exit gate: its decisions, the processing of each completion, the deliveries
//! of notifications by sink, and the tombstones it keeps.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use super::labels::{ExitDecisionLabel, OutcomeLabel, SinkOutcomeLabels, StepLabel};
use crate::exit::decision::{ExitDecision, Step};

metric_group! {
    pub struct ExitMetrics {
        /// Workflow events by exit eligibility: process, skip, reject-stale, requeue; or
        /// error, malformed, delay-dropped (a re-check not scheduled), run-counted.
        pub decisions: Family<ExitDecisionLabel, Counter> = "exit_decisions",
        /// Exit processing by outcome, once per completion handled: sent, already-notified,
        /// already-failed, already-skipped, skipped-old, unconfirmed, gone, gave-up,
        /// superseded, not-leader, in-flight.
        pub notifications: Family<OutcomeLabel, Counter> = "exit_notifications",
        /// Failed attempts of the exit action path by step: read, claim, event, deliver, mark.
        pub attempt_failures: Family<StepLabel, Counter> = "exit_attempt_failures",
        /// Completions given up on (attempts ran out, the claim was older than the give-up
        /// age, or a retry superseded it), each with an ExitNotificationFailed Event.
        pub gave_up: Counter = "exit_gave_up",
        /// Completions being processed now.
        pub in_flight: Gauge = "exit_in_flight",
        /// Pending claims the periodic sweep picked up.
        pub swept: Counter = "exit_swept",
        /// From the gate taking a completion to its notification being delivered, in seconds.
        pub notification_seconds: Histogram = "exit_notification_seconds"
            with Histogram::new(exponential_buckets(0.001, 4.0, 10)),
        /// Exit notification deliveries by sink and outcome: ok, timeout, retryable,
        /// permanent, queue-full, fenced.
        pub deliveries: Family<SinkOutcomeLabels, Counter> = "exit_deliveries",
        /// Exit webhook requests by outcome (deprecated: use exit_deliveries; removed in the
        /// release after the one that added it).
        pub webhook_requests: Family<OutcomeLabel, Counter> = "exit_webhook_requests",
        /// Exit deliveries waiting for a slot.
        pub delivery_queued: Gauge = "exit_delivery_queued",
        /// Exit deliveries being sent.
        pub deliveries_in_flight: Gauge = "exit_deliveries_in_flight",
        /// Tombstone cache entries.
        pub tombstones: Gauge = "tombstones",
    }
}

impl ExitMetrics {
    /// Counts one delivery of `sink` as `outcome`, and under the old name as `legacy` when
    /// the sink is the webhook.
    pub fn count_delivery(&self, sink: &str, outcome: &str, legacy: &str) {
        self.deliveries
            .get_or_create(&SinkOutcomeLabels {
                sink: sink.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
        if sink == "webhook" {
            super::Metrics::count(&self.webhook_requests, legacy);
        }
    }

    pub fn decided(&self, outcome: ExitDecision) {
        self.decisions
            .get_or_create(&ExitDecisionLabel { outcome })
            .inc();
    }

    pub fn step_failed(&self, step: Step) {
        self.attempt_failures
            .get_or_create(&StepLabel { step })
            .inc();
    }

    pub(super) fn start_at_zero(&self) {
        super::zero(&self.notifications, &["sent", "gave-up"]);
    }
}
