//! Prometheus metrics, one group per area, each registering its own (`metric_group!`: a
//! field's doc comment is its help). Every failure path counts itself under a stable label.

#[macro_use]
mod group;

pub mod completions;
#[cfg(test)]
mod documented;
pub mod exit;
pub mod fleet;
pub mod info;
pub mod labels;
pub mod policy;
pub mod reports;
pub mod scale;
pub mod swf;
pub mod watch;

use std::sync::Mutex;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

pub use labels::{
    ExitDecisionLabel, ExportLabel, Label, OutcomeLabel, PolicyErrorLabels, ReasonLabel,
    SinkOutcomeLabels, StepLabel, SwfDecisionLabel, TargetLabels, WatchLabel,
};

pub struct Metrics {
    pub swf: swf::SwfMetrics,
    /// The SWF loop at scale: pacing, echoes of its own writes, dropped Events.
    pub scale: scale::ScaleMetrics,
    pub exit: exit::ExitMetrics,
    pub policy: policy::PolicyMetrics,
    pub watch: watch::WatchMetrics,
    pub reports: reports::ReportMetrics,
    /// build_info, policy_info, mode_info, shard_info, leader, target_info.
    pub info: info::InfoMetrics,
    /// `pipewarden_swfs{state}`: each SWF by the state its last decision left it in.
    pub swfs: fleet::SwfFleet,
    /// `pipewarden_exit_completions{state}`: completed workflows by their notification's state.
    pub completions: completions::CompletionFleet,
    /// The labels `target_info` shows now.
    target_shown: Mutex<TargetLabels>,
    registry: Registry,
}

impl Metrics {
    pub fn new() -> Self {
        Self::with_swf_namespaces(false)
    }

    /// With `by_namespace`, `pipewarden_swfs` carries `swf_namespace` too (one series per
    /// namespace and state: as many as there are namespaces with SWFs).
    pub fn with_swf_namespaces(by_namespace: bool) -> Self {
        let mut registry = Registry::with_prefix("pipewarden");
        let metrics = Metrics {
            swf: swf::SwfMetrics::register(&mut registry),
            scale: scale::ScaleMetrics::register(&mut registry),
            exit: exit::ExitMetrics::register(&mut registry),
            policy: policy::PolicyMetrics::register(&mut registry),
            watch: watch::WatchMetrics::register(&mut registry),
            reports: reports::ReportMetrics::register(&mut registry),
            info: info::InfoMetrics::register(&mut registry),
            swfs: fleet::SwfFleet::register(&mut registry, by_namespace),
            completions: completions::CompletionFleet::register(&mut registry),
            target_shown: Mutex::default(),
            registry,
        };
        metrics.info.show_build();
        // The series alerts and the dashboard query exist at 0 from the start: a counter that
        // appears only at its first increment hides that increment from `increase()`, and an
        // empty family is not exported at all.
        metrics.swf.start_at_zero();
        metrics.exit.start_at_zero();
        metrics.policy.start_at_zero();
        metrics.reports.start_at_zero();
        metrics
    }

    /// Shows `labels` as the target in force, alone.
    pub fn set_target(&self, labels: TargetLabels) {
        let mut shown = self.target_shown.lock().unwrap_or_else(|p| p.into_inner());
        self.info.target.clear();
        self.info.target.get_or_create(&labels).set(1);
        *shown = labels;
    }

    /// The target in force, as last shown.
    pub fn target(&self) -> TargetLabels {
        self.target_shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn count(family: &Family<OutcomeLabel, Counter>, outcome: &str) {
        family
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_string(),
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

/// Creates each outcome's series at 0.
fn zero(family: &Family<OutcomeLabel, Counter>, outcomes: &[&str]) {
    for outcome in outcomes {
        drop(family.get_or_create(&OutcomeLabel {
            outcome: (*outcome).to_string(),
        }));
    }
}
