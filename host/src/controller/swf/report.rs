//! Making each SWF decision visible: a metric per outcome, one structured log line, and a
//! Kubernetes Event on the SWF for everything but "nothing to do".

use kube::Resource as _;
use kube::api::DynamicObject;
use kube::runtime::events::{Event, EventType};
use kube::{ResourceExt as _, api::ObjectMeta};

use super::SwfLoop;
use crate::cluster::api_error::describe;
use crate::metrics::{ReasonLabel, TargetLabels};
use crate::swf::fleet::SwfState;
use crate::swf::outcome::{Severity, SwfOutcome};
use crate::swf::serving::Serving;
use crate::swf::write_digest::RenderInputs;

/// Events carry at most 1 kB of note.
pub(super) const MAX_NOTE_BYTES: usize = 1024;
/// Changed paths named in an event note; the log and `pipewarden eval` show them all.
const NOTE_PATHS: usize = 3;

/// Which policy decided, for events and logs.
#[derive(Clone, Debug, Default)]
pub struct PolicyId {
    pub label: String,
    pub digest: String,
    pub target: Option<String>,
    /// What a render under this policy depends on, for the stamp of a write it decides.
    pub inputs: Option<RenderInputs>,
}

/// Whether the policy compiles for the target in force, as its decisions showed, for a policy
/// that does not answer the target probe (with one, the loop's standing says it before any
/// decision): kept in `pipewarden_target_info` and said in one log line when it changes, not
/// once per SWF.
#[derive(Default)]
pub struct TargetStatus {
    /// Target and policy digest the verdict is about, and the verdict.
    known: std::sync::Mutex<Option<(Option<String>, String, bool)>>,
}

impl TargetStatus {
    fn observe(&self, lp: &SwfLoop, policy: &PolicyId, outcome: &SwfOutcome) {
        if *lp.serving.borrow() != (Serving::Writes { proof: None }) {
            return;
        }
        let supported = match outcome {
            SwfOutcome::UnsupportedTarget { .. } => false,
            SwfOutcome::UpToDate { .. }
            | SwfOutcome::Rebuild { .. }
            | SwfOutcome::Restore { .. }
            | SwfOutcome::WouldRebuild { .. } => true,
            _ => return,
        };
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let now = (policy.target.clone(), policy.digest.clone(), supported);
        if known.as_ref() == Some(&now) {
            return;
        }
        *known = Some(now);
        drop(known);
        lp.ctx.metrics.set_target(TargetLabels {
            version: policy.target.clone().unwrap_or_else(|| "unknown".into()),
            supported: supported.to_string(),
            proof: "unknown".into(),
            owner: "pipewarden".into(),
            reason: if supported {
                "none"
            } else {
                "target-not-served"
            }
            .into(),
        });
        let target = policy.target.as_deref().unwrap_or("unknown");
        if supported {
            tracing::info!(target, policy = %policy.label, "the policy compiles for the target");
        } else {
            tracing::warn!(
                target,
                policy = %policy.label,
                digest = %policy.digest,
                reason = %outcome.reason(),
                "the policy does not compile for the target; no SWF is written until it changes"
            );
        }
    }
}

/// Counts, logs and (if it has one) publishes the Event of `outcome` about `swf`.
pub async fn report(lp: &SwfLoop, swf: &DynamicObject, policy: &PolicyId, outcome: &SwfOutcome) {
    let metrics = &lp.ctx.metrics;
    metrics.swf.decided(outcome.decision());
    metrics.swfs.record(
        &swf.namespace().unwrap_or_default(),
        &swf.name_any(),
        swf.metadata.uid.as_deref().unwrap_or_default(),
        SwfState::after(outcome),
        &fleet_detail(outcome),
    );
    if let Some((export, kind)) = outcome.policy_error() {
        metrics.policy.failed(export, kind);
    }
    let reason = outcome.reason();
    lp.target_status.observe(lp, policy, outcome);
    // Not rebuildable and an unsupported target stay so until the SWF (or target) changes:
    // their Event and log line come once per SWF and reason, later passes log at debug level.
    let first_time = !outcome.said_once() || said_first(lp, swf, &reason);
    log(&swf.metadata, policy, outcome, &reason, first_time);
    let Some((severity, event_reason)) = outcome.event().filter(|_| first_time) else {
        return;
    };
    if outcome.held_back() && !failure_event_allowed(lp, swf, event_reason) {
        let label = ReasonLabel {
            reason: event_reason.to_owned(),
        };
        metrics.swf.events_held_back.get_or_create(&label).inc();
        return;
    }
    let event = Event {
        type_: match severity {
            Severity::Normal => EventType::Normal,
            Severity::Warning => EventType::Warning,
        },
        reason: event_reason.to_owned(),
        note: Some(note(policy, reason, &changed_paths(outcome))),
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

/// What the gauge's facts keep of a finding: how many fields a write would change and under
/// which parts of the object (`16 field(s) differ from the render, under
/// metadata.annotations, spec.workflow`), or why.
pub fn fleet_detail(outcome: &SwfOutcome) -> String {
    let paths = changed_paths(outcome);
    if paths.is_empty() {
        return outcome.reason();
    }
    let mut parts: Vec<String> = paths
        .iter()
        .map(|path| {
            let head = path.split('[').next().unwrap_or(path);
            head.split('.').take(2).collect::<Vec<_>>().join(".")
        })
        .collect();
    parts.sort();
    parts.dedup();
    format!(
        "{} field(s) differ from the render, under {}",
        paths.len(),
        parts.join(", ")
    )
}

fn changed_paths(outcome: &SwfOutcome) -> Vec<&str> {
    outcome
        .changes()
        .iter()
        .map(|change| change.path())
        .collect()
}

/// Whether `swf` is reported with this reason for the first time.
fn said_first(lp: &SwfLoop, swf: &DynamicObject, reason: &str) -> bool {
    let key = format!(
        "{}/{} {reason}",
        swf.namespace().unwrap_or_default(),
        swf.name_any(),
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

fn log(
    metadata: &ObjectMeta,
    policy: &PolicyId,
    outcome: &SwfOutcome,
    reason: &str,
    first_time: bool,
) {
    let namespace = metadata.namespace.as_deref().unwrap_or_default();
    let name = metadata.name.as_deref().unwrap_or_default();
    let target = policy.target.as_deref().unwrap_or("unknown");
    macro_rules! decision_line {
        ($level:ident) => {
            tracing::$level!(
                namespace,
                name,
                outcome = outcome.label(),
                reason,
                changes = outcome.changes().len(),
                target,
                policy = %policy.label,
                digest = %policy.digest,
                "swf decision"
            )
        };
    }
    // Nothing-to-do lines would repeat for every SWF on every resync.
    let warning = outcome
        .event()
        .is_some_and(|(severity, _)| severity == Severity::Warning);
    // An unsupported target is said in one line for all SWFs (`TargetStatus`).
    let per_target = matches!(outcome, SwfOutcome::UnsupportedTarget { .. });
    if outcome.is_quiet() || !first_time || per_target {
        decision_line!(debug)
    } else if warning {
        decision_line!(warn)
    } else {
        decision_line!(info)
    }
}

fn note(policy: &PolicyId, reason: String, paths: &[&str]) -> String {
    let mut note = reason;
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
            inputs: None,
        };
        let paths: Vec<String> = (0..5).map(|i| format!("spec.p{i}")).collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let note = note(&policy, "x".repeat(2000), &paths);
        assert!(note.len() <= MAX_NOTE_BYTES, "{}", note.len());
        assert!(note.ends_with(" Target 2.17.0; policy kfp_default.wasm sha256:abc."));

        let note = super::note(&policy, "Rebuild policy is always.".into(), &paths);
        assert!(
            note.contains("5 change(s): spec.p0, spec.p1, spec.p2 and 2 more."),
            "{note}"
        );
    }
}
