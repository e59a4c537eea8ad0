//! Metrics of the SWF loop at scale: how writes are paced, which watch events were the echo of
//! its own writes, and which per-SWF Events a mass rebuild left out.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::labels::ReasonLabel;

metric_group! {
    pub struct ScaleMetrics {
        /// SWF decisions and writes allowed in flight now (adaptive, at most --concurrency).
        pub swf_concurrency_limit: Gauge = "swf_concurrency_limit",
        /// SWF loop requests the API server refused with 429 Too Many Requests, after the
        /// client's retries.
        pub swf_throttled: Counter = "swf_throttled",
        /// Watch events recognised as the echo of this replica's own SWF write: no new
        /// decision.
        pub swf_own_writes_seen: Counter = "swf_own_writes_seen",
        /// Per-SWF Events not created because the Event queue was full, by reason.
        pub swf_events_dropped: Family<ReasonLabel, Counter> = "swf_events_dropped",
        /// Per-SWF Events combined into one Event about their namespace (past ten of a
        /// reason in a namespace within ten minutes), by reason.
        pub swf_events_combined: Family<ReasonLabel, Counter> = "swf_events_combined",
        /// Due SWF resyncs put off while SWFs never decided under the policy and target in
        /// force wait.
        pub swf_resyncs_deferred: Counter = "swf_resyncs_deferred",
        /// SWF decisions made without asking the policy: a resync of an SWF found with nothing
        /// to do at the same resourceVersion under the same inputs, or, under `always`, an SWF
        /// still as this policy's stamped write left it (`pipewarden.io/write-digest`).
        pub swf_renders_spared: Counter = "swf_renders_spared",
        /// Bytes of compressed SWFs the store keeps for decisions to come (at most
        /// --swf-bodies-mib).
        pub swf_body_bytes: Gauge = "swf_body_bytes",
        /// SWFs read from the API server to be decided, their body not kept in the store.
        pub swf_bodies_read: Counter = "swf_bodies_read",
    }
}
