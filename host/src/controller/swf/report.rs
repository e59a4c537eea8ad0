//! Making each SWF decision visible: a metric per outcome, one structured log line, and a
//! Kubernetes Event on the SWF for everything but "nothing to do".

use kube::Resource as _;
use kube::api::DynamicObject;
use kube::runtime::events::{Event, EventType};
use kube::{ResourceExt as _, api::ObjectMeta};

use super::SwfLoop;
use super::reconcile::PolicyId;
use crate::controller::api_error::describe;
use crate::controller::metrics::{Metrics, PolicyErrorLabels, ReasonLabel};
use crate::engine::Export;
use crate::swf::diff::Change;
use crate::swf::plan::{Report, WriteKind};

/// Outcome of an SWF the policy cannot rebuild: said once per SWF and reason.
const NOT_REBUILDABLE: &str = "not-rebuildable";
/// Events carry at most 1 kB of note.
const MAX_NOTE_BYTES: usize = 1024;
/// Changed paths named in an event note; the log and `pipewarden eval` show them all.
const NOTE_PATHS: usize = 3;

/// How one pass over one SWF ended.
pub struct Decision {
    /// Metric label, e.g. `rebuild`, `restored`, `render-failed`.
    pub outcome: &'static str,
    pub reason: String,
    pub changed_paths: Vec<String>,
    pub event: Option<(EventType, &'static str)>,
    pub policy_error: Option<(Export, &'static str)>,
}

impl Decision {
    fn new(outcome: &'static str, reason: String) -> Self {
        Decision {
            outcome,
            reason,
            changed_paths: Vec::new(),
            event: None,
            policy_error: None,
        }
    }

    fn with_event(mut self, type_: EventType, reason: &'static str) -> Self {
        self.event = Some((type_, reason));
        self
    }

    fn with_changes(mut self, changes: &[Change]) -> Self {
        self.changed_paths = changes.iter().map(|c| c.path().to_owned()).collect();
        self
    }

    pub fn from_report(report: Report) -> Self {
        match report {
            Report::Skipped { reason } => Decision::new("skip", reason),
            Report::NotRebuildable { reason } => {
                let reason = reason.trim_end_matches('.');
                Decision::new(NOT_REBUILDABLE, format!("{reason}; left as it is."))
                    .with_event(EventType::Normal, "NotRebuildable")
            }
            Report::UpToDate { reason } => Decision::new("up-to-date", reason),
            Report::WouldRebuild { reason, changes } => Decision::new("would-rebuild", reason)
                .with_changes(&changes)
                .with_event(EventType::Normal, "WouldRebuild"),
            Report::WouldRestore {
                render_error,
                changes,
            } => Decision::new(
                "would-restore",
                format!("{render_error}; rebuild policy is disable, so the last good render is not restored"),
            )
            .with_changes(&changes)
            .with_event(EventType::Warning, "WouldRestoreFromLastGoodRender"),
            Report::Failed {
                error,
                export,
                kind,
            } => {
                let (outcome, reason) = match export {
                    Export::RenderSwf => ("render-failed", "RenderFailed"),
                    _ => ("policy-error", "PolicyFailed"),
                };
                let mut decision = Decision::new(outcome, format!("{error}; left as it is"))
                    .with_event(EventType::Warning, reason);
                decision.policy_error = Some((export, kind));
                decision
            }
        }
    }

    pub fn written(kind: WriteKind, reason: String, changes: &[Change]) -> Self {
        match kind {
            WriteKind::Rebuild => Decision::new("rebuild", reason)
                .with_changes(changes)
                .with_event(EventType::Normal, "Rebuilt"),
            WriteKind::Restore => Decision::new("restored", reason)
                .with_changes(changes)
                .with_event(EventType::Warning, "RestoredFromLastGoodRender"),
        }
    }

    pub fn conflicts_exhausted(attempts: u32, resync: std::time::Duration) -> Self {
        let reason = format!(
            "{attempts} writes in a row met a newer version of the object; \
             trying again at the next resync (in {resync:?})"
        );
        Decision::new("conflicts-exhausted", reason)
            .with_event(EventType::Warning, "ConflictsExhausted")
    }

    pub fn gone() -> Self {
        Decision::new("gone", "deleted meanwhile; never recreated".into())
    }

    /// `server` is the API server's URL, named when it did not answer.
    pub fn write_failed(error: &kube::Error, server: &str) -> Self {
        // The API server's own sentence (e.g. who is forbidden which verb), not a debug dump.
        let why = describe(error, server);
        Decision::new("write-failed", format!("write refused: {why}"))
            .with_event(EventType::Warning, "WriteFailed")
    }
}

/// Counts, logs and (if it has one) publishes the Event of `decision` about `swf`.
pub async fn report(lp: &SwfLoop, swf: &DynamicObject, policy: &PolicyId, decision: Decision) {
    let metrics = &lp.ctx.metrics;
    Metrics::count(&metrics.swf_decisions, decision.outcome);
    if let Some((export, kind)) = decision.policy_error {
        metrics
            .policy_errors
            .get_or_create(&PolicyErrorLabels {
                export: export.name().to_owned(),
                kind: kind.to_owned(),
            })
            .inc();
    }
    // Not rebuildable stays so until the SWF changes: its Event and log line come once per
    // SWF and reason, later passes log at debug level.
    let first_time =
        decision.outcome != NOT_REBUILDABLE || not_rebuildable_first(lp, swf, &decision);
    log(&swf.metadata, policy, &decision, first_time);
    let Some((type_, reason)) = decision.event.filter(|_| first_time) else {
        return;
    };
    if decision.policy_error.is_some() && !failure_event_allowed(lp, swf, reason) {
        let label = ReasonLabel {
            reason: reason.to_owned(),
        };
        metrics.swf_events_held_back.get_or_create(&label).inc();
        return;
    }
    let event = Event {
        type_,
        reason: reason.to_owned(),
        note: Some(note(policy, &decision)),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    let regarding = swf.object_ref(&lp.resource);
    // Routine outcomes go through the queue, off the write path (see `event_queue`).
    if event.type_ == EventType::Normal {
        lp.events.offer(event, regarding);
        return;
    }
    if let Err(error) = lp.ctx.recorder.publish(&event, &regarding).await {
        tracing::warn!(
            namespace = swf.namespace().unwrap_or_default(),
            name = swf.name_any(),
            error = describe(&error, &lp.ctx.api_server),
            "cannot publish an Event"
        );
    }
}

/// Whether `swf` is reported not rebuildable for this reason for the first time.
fn not_rebuildable_first(lp: &SwfLoop, swf: &DynamicObject, decision: &Decision) -> bool {
    let key = format!(
        "{}/{} {}",
        swf.namespace().unwrap_or_default(),
        swf.name_any(),
        decision.reason
    );
    let mut said = lp.not_rebuildable_said.lock().expect("event limiter lock");
    said.allow(&key, std::time::Instant::now())
}

/// Whether this policy-failure Event about `swf` may go out (one per SWF and reason per window).
fn failure_event_allowed(lp: &SwfLoop, swf: &DynamicObject, reason: &str) -> bool {
    let key = format!(
        "{}/{} {reason}",
        swf.namespace().unwrap_or_default(),
        swf.name_any()
    );
    let mut limiter = lp.failure_events.lock().expect("event limiter lock");
    limiter.allow(&key, std::time::Instant::now())
}

fn log(metadata: &ObjectMeta, policy: &PolicyId, decision: &Decision, first_time: bool) {
    let namespace = metadata.namespace.as_deref().unwrap_or_default();
    let name = metadata.name.as_deref().unwrap_or_default();
    let target = policy.target.as_deref().unwrap_or("unknown");
    macro_rules! decision_line {
        ($level:ident) => {
            tracing::$level!(
                namespace,
                name,
                outcome = decision.outcome,
                reason = %decision.reason,
                changes = decision.changed_paths.len(),
                target,
                policy = %policy.label,
                digest = %policy.digest,
                "swf decision"
            )
        };
    }
    // Nothing-to-do lines would repeat for every SWF on every resync.
    match decision.outcome {
        "skip" | "up-to-date" => decision_line!(debug),
        NOT_REBUILDABLE if !first_time => decision_line!(debug),
        _ if decision.event.is_some_and(|(t, _)| t == EventType::Warning) => {
            decision_line!(warn)
        }
        _ => decision_line!(info),
    }
}

fn note(policy: &PolicyId, decision: &Decision) -> String {
    let mut note = decision.reason.clone();
    let paths = &decision.changed_paths;
    if !paths.is_empty() {
        let shown = paths[..paths.len().min(NOTE_PATHS)].join(", ");
        let more = paths.len().saturating_sub(NOTE_PATHS);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        note.push_str(&format!(" {} change(s): {shown}{more}.", paths.len()));
    }
    let target = policy.target.as_deref().unwrap_or("unknown");
    let trailer = format!(
        " Target {target}; policy {} {}.",
        policy.label, policy.digest
    );
    truncate(&mut note, MAX_NOTE_BYTES.saturating_sub(trailer.len()));
    note + &trailer
}

fn truncate(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str("...");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_names_policy_digest_and_first_changes_within_a_kilobyte() {
        let policy = PolicyId {
            label: "kfp_default.wasm".into(),
            digest: "sha256:abc".into(),
            target: Some("2.17.0".into()),
        };
        let mut decision = Decision::new("rebuild", "x".repeat(2000));
        decision.changed_paths = (0..5).map(|i| format!("spec.p{i}")).collect();
        let note = note(&policy, &decision);
        assert!(note.len() <= MAX_NOTE_BYTES, "{}", note.len());
        assert!(note.ends_with(" Target 2.17.0; policy kfp_default.wasm sha256:abc."));

        decision.reason = "Rebuild policy is always.".into();
        let note = super::note(&policy, &decision);
        assert!(
            note.contains("5 change(s): spec.p0, spec.p1, spec.p2 and 2 more."),
            "{note}"
        );
    }
}
