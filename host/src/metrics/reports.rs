//! Metrics of the policy reports.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::labels::OutcomeLabel;

metric_group! {
    pub struct ReportMetrics {
        /// Policy report (OpenReports Report) requests by outcome: applied, deleted, error.
        pub writes: Family<OutcomeLabel, Counter> = "report_writes",
    }
}

impl ReportMetrics {
    pub(super) fn start_at_zero(&self) {
        super::zero(&self.writes, &["applied", "deleted", "error"]);
    }
}
