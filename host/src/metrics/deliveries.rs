//! Exit notification deliveries by sink and outcome, and the old webhook-only name kept beside
//! it for one release (dashboards and alerts move to the new name meanwhile).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::OutcomeLabel;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SinkOutcomeLabels {
    pub sink: String,
    pub outcome: String,
}

#[derive(Default)]
pub struct DeliveryMetrics {
    /// `pipewarden_exit_deliveries_total{sink,outcome}`: ok, timeout, retryable, permanent,
    /// queue-full, fenced.
    pub by_sink: Family<SinkOutcomeLabels, Counter>,
    /// `pipewarden_exit_webhook_requests_total{outcome}`, the webhook's deliveries under the old
    /// name and outcomes (ok, rejected, error, timeout, queue-full, fenced). Deprecated: removed
    /// in the release after the one that added `by_sink`.
    pub webhook_requests: Family<OutcomeLabel, Counter>,
}

impl DeliveryMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = DeliveryMetrics::default();
        registry.register(
            "exit_deliveries",
            "Exit notification deliveries by sink and outcome",
            metrics.by_sink.clone(),
        );
        registry.register(
            "exit_webhook_requests",
            "Exit webhook requests by outcome (deprecated: use exit_deliveries)",
            metrics.webhook_requests.clone(),
        );
        metrics
    }

    /// Counts one delivery of `sink` as `outcome`, and under the old name as `legacy` when
    /// the sink is the webhook.
    pub fn count(&self, sink: &str, outcome: &str, legacy: &str) {
        self.by_sink
            .get_or_create(&SinkOutcomeLabels {
                sink: sink.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
        if sink == "webhook" {
            super::Metrics::count(&self.webhook_requests, legacy);
        }
    }
}
