//! Exit notifications, once per completion: the annotation that records them on the Workflow,
//! the decision taken against a fresh read of it, and what is sent. No I/O.
//!
//! The annotation `pipewarden.io/exit-notification` holds `pending/<key>` from the moment a
//! replica claims a completion until the notification was delivered, then `sent/<key>`. The
//! key is the completion key (uid and finishedAt), so a retried workflow that completes again
//! is notified again, and every delivery of one completion carries the same idempotency key.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::event::WorkflowFacts;

pub const NOTIFICATION_ANNOTATION: &str = "pipewarden.io/exit-notification";

/// What the annotation records about one completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Claimed; delivery may or may not have happened. Deliver again with the same key.
    Pending(String),
    /// Delivered.
    Sent(String),
}

impl Mark {
    pub fn parse(text: &str) -> Option<Mark> {
        let (state, key) = text.split_once('/')?;
        if key.is_empty() {
            return None;
        }
        match state {
            "pending" => Some(Mark::Pending(key.to_string())),
            "sent" => Some(Mark::Sent(key.to_string())),
            _ => None,
        }
    }

    /// The mark on a Workflow object, if it carries a readable one.
    pub fn read(workflow: &Value) -> Option<Mark> {
        workflow
            .pointer("/metadata/annotations")?
            .get(NOTIFICATION_ANNOTATION)?
            .as_str()
            .and_then(Mark::parse)
    }

    pub fn key(&self) -> &str {
        match self {
            Mark::Pending(key) | Mark::Sent(key) => key,
        }
    }

    pub fn annotation_value(&self) -> String {
        match self {
            Mark::Pending(key) => format!("pending/{key}"),
            Mark::Sent(key) => format!("sent/{key}"),
        }
    }

    /// A JSON merge patch setting this mark; the server refuses it (409) unless the object is
    /// still at `resource_version`.
    pub fn patch(&self, resource_version: &str) -> Value {
        json!({
            "metadata": {
                "resourceVersion": resource_version,
                "annotations": { NOTIFICATION_ANNOTATION: self.annotation_value() },
            }
        })
    }
}

/// What to do about a completion, decided against a fresh read of the workflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Already delivered: nothing to do.
    AlreadySent,
    /// Claimed earlier (by a replica that stopped, or a delivery that failed): deliver again
    /// with the same key; receivers deduplicate.
    Resend,
    /// Not claimed yet: claim, deliver, mark sent.
    Claim,
    /// Unclaimed and finished before the catch-up window: left alone, so that installing into
    /// a cluster full of old workflows does not flood receivers.
    TooOld,
    /// The live workflow does not show the completion the event showed.
    Unconfirmed(String),
}

impl Plan {
    /// Metric label.
    pub fn label(&self) -> &'static str {
        match self {
            Plan::AlreadySent => "already-notified",
            Plan::Resend => "resend",
            Plan::Claim => "claim",
            Plan::TooOld => "skipped-old",
            Plan::Unconfirmed(_) => "unconfirmed",
        }
    }
}

/// Decides what to do about the completion `seen` (from an event) given `live`, the workflow
/// as the API server returned it just now.
pub fn plan(seen: &WorkflowFacts, live: &Value, now: Timestamp, catch_up: Duration) -> Plan {
    let Some(current) = WorkflowFacts::read(live) else {
        return Plan::Unconfirmed("the live workflow has no name or uid".into());
    };
    if current.uid != seen.uid {
        return Plan::Unconfirmed(format!(
            "the workflow was re-created: uid {} is now {}",
            seen.uid, current.uid
        ));
    }
    if !current.complete {
        return Plan::Unconfirmed(format!(
            "the live workflow is not complete (phase {:?})",
            current.phase_text
        ));
    }
    let key = seen.completion_key();
    if current.phase != seen.phase || current.completion_key() != key {
        return Plan::Unconfirmed(format!(
            "the live workflow shows another completion: {} ({}), not {key} ({})",
            current.completion_key(),
            current.phase_text,
            seen.phase_text
        ));
    }
    match Mark::read(live) {
        Some(Mark::Sent(marked)) if marked == key => Plan::AlreadySent,
        Some(Mark::Pending(marked)) if marked == key => Plan::Resend,
        _ if finished_before(&current, now, catch_up) => Plan::TooOld,
        _ => Plan::Claim,
    }
}

/// True when the workflow's finishedAt is more than `window` before `now`. A missing or
/// unreadable finishedAt counts as recent: better one late notification than a lost one.
pub fn finished_before(facts: &WorkflowFacts, now: Timestamp, window: Duration) -> bool {
    let Some(finished) = facts
        .finished_at
        .as_deref()
        .and_then(|text| text.parse::<Timestamp>().ok())
    else {
        return false;
    };
    let age = now.as_second().saturating_sub(finished.as_second());
    age > i64::try_from(window.as_secs()).unwrap_or(i64::MAX)
}

/// The webhook body. `idempotencyKey` is the same for every delivery of one completion.
pub fn payload(live: &WorkflowFacts) -> Value {
    json!({
        "namespace": live.namespace,
        "name": live.name,
        "uid": live.uid,
        "phase": live.phase_text,
        "finishedAt": live.finished_at,
        "resourceVersion": live.resource_version,
        "idempotencyKey": live.completion_key(),
    })
}

/// The note of the Kubernetes Event recorded on the Workflow.
pub fn event_note(live: &WorkflowFacts) -> String {
    format!(
        "Workflow {} {}; exit notification {}",
        live.phase_text,
        live.finished_at
            .as_deref()
            .map(|at| format!("at {at}"))
            .unwrap_or_else(|| "(no finishedAt)".into()),
        live.completion_key()
    )
}
