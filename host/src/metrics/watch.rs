//! Metrics of the watches, by watch (`swf`, `exit`, or `swf/<namespace>`).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::labels::WatchLabel;

metric_group! {
    pub struct WatchMetrics {
        /// Unix time of each watch's last completed list or delivered change.
        pub last_success: Family<WatchLabel, Gauge> = "watch_last_success_timestamp_seconds",
        /// Watch failures, each followed by a pause and a fresh list, by watch.
        pub errors: Family<WatchLabel, Counter> = "watch_errors",
        /// 1 from a watch's failure until its next complete list, else 0: what alerts read,
        /// as the last success ages on a quiet cluster while the watch is healthy.
        pub failing: Family<WatchLabel, Gauge> = "watch_failing",
    }
}
