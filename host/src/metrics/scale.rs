//! Metrics of the SWF loop at scale: how writes are paced, which watch events were the echo of
//! its own writes, and which per-SWF Events a mass rebuild left out.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::ReasonLabel;

#[derive(Default)]
pub struct ScaleMetrics {
    /// Decisions and writes allowed in flight now (adaptive, at most --concurrency).
    pub swf_concurrency_limit: Gauge,
    /// Requests the API server refused with 429 Too Many Requests, after the client's retries.
    pub swf_throttled: Counter,
    /// Watch events recognised as the echo of this replica's own write: no new decision.
    pub swf_own_writes_seen: Counter,
    /// Per-SWF Events not created because the Event queue was full, by reason.
    pub swf_events_dropped: Family<ReasonLabel, Counter>,
    /// Due resyncs put off while SWFs not yet decided under what is in force wait.
    pub swf_resyncs_deferred: Counter,
}

impl ScaleMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = ScaleMetrics::default();
        registry.register(
            "swf_concurrency_limit",
            "SWF decisions and writes allowed in flight now (adaptive)",
            metrics.swf_concurrency_limit.clone(),
        );
        registry.register(
            "swf_throttled",
            "SWF loop requests refused with 429 Too Many Requests",
            metrics.swf_throttled.clone(),
        );
        registry.register(
            "swf_own_writes_seen",
            "Watch events recognised as the echo of this replica's own SWF write",
            metrics.swf_own_writes_seen.clone(),
        );
        registry.register(
            "swf_events_dropped",
            "Per-SWF Events not created because the Event queue was full",
            metrics.swf_events_dropped.clone(),
        );
        registry.register(
            "swf_resyncs_deferred",
            "Due SWF resyncs put off while SWFs never decided under the policy and target in force wait",
            metrics.swf_resyncs_deferred.clone(),
        );
        metrics
    }
}
