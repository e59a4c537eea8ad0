//! Metrics of the SWF loop: its decisions and writes.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::labels::{OutcomeLabel, ReasonLabel, SwfDecisionLabel};
use crate::swf::outcome::SwfDecision;

metric_group! {
    pub struct SwfMetrics {
        /// ScheduledWorkflow decisions by outcome (skip, up-to-date, rebuild, would-rebuild,
        /// render-failed, policy-error, write-failed, ...).
        pub decisions: Family<SwfDecisionLabel, Counter> = "swf_decisions",
        /// ScheduledWorkflow write requests by outcome: ok, conflict, error.
        pub writes: Family<OutcomeLabel, Counter> = "swf_writes",
        /// ScheduledWorkflows left to the next resync after their write lost every bounded
        /// conflict retry in one pass.
        pub conflicts_exhausted: Counter = "swf_conflicts_exhausted",
        /// Policy-failure Events about an SWF held back (one per SWF per window), by reason.
        pub events_held_back: Family<ReasonLabel, Counter> = "swf_events_held_back",
    }
}

impl SwfMetrics {
    /// The outcomes alerts and the dashboard read, at 0 from the start.
    pub(super) fn start_at_zero(&self) {
        super::zero(&self.writes, &["ok", "error"]);
        let decisions = [
            SwfDecision::Rebuild,
            SwfDecision::UpToDate,
            SwfDecision::RenderFailed,
            SwfDecision::PolicyError,
            SwfDecision::WriteFailed,
        ];
        for outcome in decisions {
            drop(self.decisions.get_or_create(&SwfDecisionLabel { outcome }));
        }
    }

    pub fn decided(&self, outcome: SwfDecision) {
        self.decisions
            .get_or_create(&SwfDecisionLabel { outcome })
            .inc();
    }
}
