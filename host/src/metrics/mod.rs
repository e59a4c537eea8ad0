//! Prometheus metrics. Every failure path counts itself under a stable label.

pub mod completions;
pub mod deliveries;
pub mod fleet;
pub mod info;
pub mod scale;

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
pub struct StepLabel {
    pub step: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExportLabel {
    pub export: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabel {
    pub watch: String,
}

/// The KFP version SWFs are rendered for, whether the policy compiles for it (`true`,
/// `false`, or `unknown` while neither its probe answer nor a decision said), how its renders
/// are proven (`own-compiler-output`, `same-compiler`, `unknown`), who writes SWFs on the
/// install (`pipewarden`, `kfp-api`) and why the SWF loop writes nothing (`none` when it
/// writes).
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    pub version: String,
    pub supported: String,
    pub proof: String,
    pub owner: String,
    pub reason: String,
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
    /// Exit processing by outcome, once per completion handled: sent, already-notified,
    /// already-failed, already-skipped, skipped-old (first seen after the catch-up window),
    /// unconfirmed, gone, gave-up, superseded, not-leader; in-flight for an event whose
    /// completion was already being processed.
    pub exit_notifications: Family<OutcomeLabel, Counter>,
    /// Failed attempts of the action path by step: read, claim, event, deliver, mark.
    pub exit_attempt_failures: Family<StepLabel, Counter>,
    /// Completions given up on (the attempts ran out, the claim was older than the give-up
    /// age, or a retry superseded it); each also has an `ExitNotificationFailed` Event.
    pub exit_gave_up: Counter,
    /// Completions being processed now.
    pub exit_in_flight: Gauge,
    /// Pending claims the periodic sweep picked up.
    pub exit_swept: Counter,
    /// From the gate taking a completion to its notification being delivered, in seconds.
    pub exit_notification_seconds: Histogram,
    /// Exit deliveries by sink and outcome, and the old webhook-only name beside them.
    pub exit_deliveries: deliveries::DeliveryMetrics,
    /// Deliveries waiting for a slot, and being sent.
    pub exit_delivery_queued: Gauge,
    pub exit_deliveries_in_flight: Gauge,
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
    /// Policy calls tried once more after missing their deadline, by export.
    pub policy_timeouts_retried: Family<ExportLabel, Counter>,
    /// Policy-failure Events about an SWF held back (one per SWF per window), by reason.
    pub swf_events_held_back: Family<ReasonLabel, Counter>,
    /// The SWF loop at scale: pacing, echoes of its own writes, dropped Events.
    pub scale: scale::ScaleMetrics,
    /// Unix time of each watch's last completed list or delivered change.
    pub watch_last_success: Family<WatchLabel, Gauge>,
    /// Watch failures (each followed by a pause and a fresh list), by watch.
    pub watch_errors: Family<WatchLabel, Counter>,
    /// 1 from a watch's failure until its next complete list, else 0: what alerts watch, as
    /// the last success ages on a quiet cluster while the watch is healthy.
    pub watch_failing: Family<WatchLabel, Gauge>,
    /// 1 for the target version in force, labelled with whether the policy supports it.
    pub target_info: Family<TargetLabels, Gauge>,
    /// The labels `target_info` shows now.
    target_shown: std::sync::Mutex<TargetLabels>,
    /// build_info, policy_info, mode_info, shard_info.
    pub info: info::InfoMetrics,
    /// `pipewarden_swfs{state}`: each SWF by the state its last decision left it in.
    pub swfs: fleet::SwfFleet,
    /// `pipewarden_exit_completions{state}`: completed workflows by their notification's state.
    pub completions: completions::CompletionFleet,
    /// Policy report requests by outcome: applied, deleted, error.
    pub report_writes: Family<OutcomeLabel, Counter>,
}

impl Metrics {
    pub fn new() -> Self {
        Self::with_swf_namespaces(false)
    }

    /// With `by_namespace`, `pipewarden_swfs` carries `swf_namespace` too (one series per
    /// namespace and state: as many as there are namespaces with SWFs).
    pub fn with_swf_namespaces(by_namespace: bool) -> Self {
        let metrics = Self::unset(by_namespace);
        metrics.start_at_zero();
        metrics
    }

    fn unset(swfs_by_namespace: bool) -> Self {
        let mut registry = Registry::with_prefix("pipewarden");
        let swf_decisions = Family::<OutcomeLabel, Counter>::default();
        let swf_writes = Family::<OutcomeLabel, Counter>::default();
        let swf_conflicts_exhausted = Counter::default();
        let exit_decisions = Family::<OutcomeLabel, Counter>::default();
        let exit_notifications = Family::<OutcomeLabel, Counter>::default();
        let exit_attempt_failures = Family::<StepLabel, Counter>::default();
        let exit_gave_up = Counter::default();
        let exit_in_flight = Gauge::default();
        let exit_swept = Counter::default();
        let exit_notification_seconds = Histogram::new(exponential_buckets(0.001, 4.0, 10));
        let exit_delivery_queued = Gauge::default();
        let exit_deliveries_in_flight = Gauge::default();
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
        let exit_deliveries = deliveries::DeliveryMetrics::register(&mut registry);
        registry.register(
            "exit_attempt_failures",
            "Failed attempts of the exit action path by step",
            exit_attempt_failures.clone(),
        );
        registry.register(
            "exit_gave_up",
            "Completions given up on, each with an ExitNotificationFailed Event",
            exit_gave_up.clone(),
        );
        registry.register(
            "exit_in_flight",
            "Completions being processed",
            exit_in_flight.clone(),
        );
        registry.register(
            "exit_swept",
            "Pending claims picked up by the periodic sweep",
            exit_swept.clone(),
        );
        registry.register(
            "exit_notification_seconds",
            "From taking a completion to delivering its notification",
            exit_notification_seconds.clone(),
        );
        registry.register(
            "exit_delivery_queued",
            "Exit deliveries waiting for a slot",
            exit_delivery_queued.clone(),
        );
        registry.register(
            "exit_deliveries_in_flight",
            "Exit deliveries being sent",
            exit_deliveries_in_flight.clone(),
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
        let policy_timeouts_retried = Family::<ExportLabel, Counter>::default();
        registry.register(
            "policy_timeouts_retried",
            "Policy calls tried once more after missing their deadline, by export",
            policy_timeouts_retried.clone(),
        );
        let swf_events_held_back = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "swf_events_held_back",
            "Policy-failure Events about an SWF held back, one per SWF per window",
            swf_events_held_back.clone(),
        );
        let scale = scale::ScaleMetrics::register(&mut registry);
        let swfs = fleet::SwfFleet::register(&mut registry, swfs_by_namespace);
        let completions = completions::CompletionFleet::register(&mut registry);
        let report_writes = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "report_writes",
            "Policy report (OpenReports Report) requests by outcome",
            report_writes.clone(),
        );
        let info = info::InfoMetrics::register(&mut registry);
        let watch_last_success = Family::<WatchLabel, Gauge>::default();
        registry.register(
            "watch_last_success_timestamp_seconds",
            "Unix time of each watch's last completed list or delivered change",
            watch_last_success.clone(),
        );
        let watch_errors = Family::<WatchLabel, Counter>::default();
        registry.register(
            "watch_errors",
            "Watch failures, each followed by a pause and a fresh list",
            watch_errors.clone(),
        );
        let watch_failing = Family::<WatchLabel, Gauge>::default();
        registry.register(
            "watch_failing",
            "1 while a watch is failing (from an error until its next complete list)",
            watch_failing.clone(),
        );
        let target_info = Family::<TargetLabels, Gauge>::default();
        registry.register(
            "target_info",
            "The KFP version SWFs are rendered for (1), and whether the policy supports it",
            target_info.clone(),
        );
        Metrics {
            registry,
            swf_decisions,
            swf_writes,
            swf_conflicts_exhausted,
            exit_decisions,
            exit_notifications,
            exit_deliveries,
            exit_attempt_failures,
            exit_gave_up,
            exit_in_flight,
            exit_swept,
            exit_notification_seconds,
            exit_delivery_queued,
            exit_deliveries_in_flight,
            tombstones,
            policy_errors,
            policy_call_seconds,
            policy_loads,
            leader,
            policy_timeouts_retried,
            swf_events_held_back,
            scale,
            watch_last_success,
            watch_errors,
            watch_failing,
            target_info,
            target_shown: Default::default(),
            info,
            swfs,
            completions,
            report_writes,
        }
    }

    /// Shows `labels` as the target in force, alone.
    pub fn set_target(&self, labels: TargetLabels) {
        let mut shown = self.target_shown.lock().unwrap_or_else(|p| p.into_inner());
        self.target_info.clear();
        self.target_info.get_or_create(&labels).set(1);
        *shown = labels;
    }

    /// The target in force, as last shown.
    pub fn target(&self) -> TargetLabels {
        self.target_shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The series alerts and the dashboard query exist at 0 from the start: a counter that
    /// appears only at its first increment hides that increment from `increase()`, and an
    /// empty family is not exported at all.
    fn start_at_zero(&self) {
        let outcomes: [(&Family<OutcomeLabel, Counter>, &[&str]); 5] = [
            (&self.report_writes, &["applied", "deleted", "error"]),
            (&self.policy_loads, &["loaded", "refused"]),
            (&self.swf_writes, &["ok", "error"]),
            (
                &self.swf_decisions,
                &[
                    "rebuild",
                    "up-to-date",
                    "render-failed",
                    "policy-error",
                    "write-failed",
                ],
            ),
            (&self.exit_notifications, &["sent", "gave-up"]),
        ];
        for (family, names) in outcomes {
            for outcome in names {
                drop(family.get_or_create(&OutcomeLabel {
                    outcome: (*outcome).to_string(),
                }));
            }
        }
        for export in crate::engine::Export::ALL {
            let export = export.name().to_string();
            drop(self.policy_call_seconds.get_or_create(&ExportLabel {
                export: export.clone(),
            }));
            for kind in crate::engine::PolicyError::KINDS {
                drop(self.policy_errors.get_or_create(&PolicyErrorLabels {
                    export: export.clone(),
                    kind: kind.to_string(),
                }));
            }
        }
    }

    pub fn count(family: &Family<OutcomeLabel, Counter>, outcome: &str) {
        family
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_string(),
            })
            .inc();
    }

    pub fn step_failed(&self, step: &str) {
        self.exit_attempt_failures
            .get_or_create(&StepLabel {
                step: step.to_string(),
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

    /// Counts each policy call retried after a timeout under its export.
    pub fn retry_observer(&self) -> crate::engine::RetryObserver {
        let retried = self.policy_timeouts_retried.clone();
        crate::engine::RetryObserver::new(move |export| {
            retried
                .get_or_create(&ExportLabel {
                    export: export.name().to_string(),
                })
                .inc();
        })
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
