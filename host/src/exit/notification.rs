//! Exit notifications, once per completion: the annotation that records them on the Workflow,
//! the decision taken against a fresh read of it, the CloudEvent that is sent and the
//! Kubernetes Events that record it. No I/O.
//!
//! The annotation `pipewarden.io/exit-notification` holds `pending/<key>` from the moment a
//! replica claims a completion until the notification was delivered, then `sent/<key>`;
//! `failed/<key>` once the controller gave up on it, `skipped/<key>` for a completion first
//! seen after the catch-up window. The label of the same name holds the state alone, so that
//! pending claims can be listed cheaply. The key is the completion key (see
//! [`WorkflowFacts::completion_key`]), so a retried workflow that completes again is notified
//! again, and every delivery of one completion carries the same idempotency key.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::claim::{CLAIM_ANNOTATION, Claim, Claimant, FrozenBody, MarkKey};
use super::event::WorkflowFacts;
use super::outcome::Outcome;

pub const NOTIFICATION_ANNOTATION: &str = "pipewarden.io/exit-notification";
/// The label holding the mark's state alone (`pending`, `sent`, `failed`, `skipped`).
pub const NOTIFICATION_LABEL: &str = "pipewarden.io/exit-notification";

/// What the annotation records about one completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Claimed; delivery may or may not have happened. Deliver again with the same key.
    Pending(String),
    /// Delivered.
    Sent(String),
    /// Given up after the attempts ran out (or too old to try again): not retried.
    Failed(String),
    /// First seen after the catch-up window: reported, not notified.
    Skipped(String),
}

impl Mark {
    /// None for text that is not a mark, or longer than any the controller writes.
    pub fn parse(text: &str) -> Option<Mark> {
        if text.len() > super::bounded::MARK_TEXT_MAX {
            return None;
        }
        let (state, key) = text.split_once('/')?;
        if key.is_empty() {
            return None;
        }
        let key = key.to_string();
        match state {
            "pending" => Some(Mark::Pending(key)),
            "sent" => Some(Mark::Sent(key)),
            "failed" => Some(Mark::Failed(key)),
            "skipped" => Some(Mark::Skipped(key)),
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
            Mark::Pending(key) | Mark::Sent(key) | Mark::Failed(key) | Mark::Skipped(key) => key,
        }
    }

    pub fn state(&self) -> &'static str {
        match self {
            Mark::Pending(_) => "pending",
            Mark::Sent(_) => "sent",
            Mark::Failed(_) => "failed",
            Mark::Skipped(_) => "skipped",
        }
    }

    pub fn annotation_value(&self) -> String {
        format!("{}/{}", self.state(), self.key())
    }

    /// A JSON merge patch setting this mark (annotation and label) and `record` beside it: the
    /// claim of a pending mark, the signed record of a settled one (none: the annotation is
    /// removed); the server refuses it (409) unless the object is still at `resource_version`.
    pub fn patch(&self, resource_version: &str, record: Option<&Claim>) -> Value {
        let claim = match record {
            Some(record) => Value::String(record.annotation_value()),
            None => Value::Null,
        };
        json!({
            "metadata": {
                "resourceVersion": resource_version,
                "annotations": {
                    NOTIFICATION_ANNOTATION: self.annotation_value(),
                    CLAIM_ANNOTATION: claim,
                },
                "labels": { NOTIFICATION_LABEL: self.state() },
            }
        })
    }
}

/// Whether `mark` on the completion `completion` is one the controller wrote. Without a mark
/// key, any mark is. With one, a pending mark needs a claim the controller signed for this
/// completion, a settled mark a record it signed for this completion and this state: a mark a
/// namespace editor wrote (Workflows have no status subresource), or moved from one state to
/// another, is not the controller's, and its completion is judged as unmarked.
pub fn signed_mark(mark: &Mark, record: Option<&Claim>, key: &MarkKey, completion: &str) -> bool {
    if !key.is_set() {
        return true;
    }
    let Some(record) = record else {
        return false;
    };
    let state_matches = match mark {
        Mark::Pending(_) => record.is_claim(),
        settled => record.state.as_deref() == Some(settled.state()),
    };
    state_matches && key.verifies(record, completion)
}

/// What to do about a completion, decided against a fresh read of the workflow (or, for a
/// deleted workflow, against the final object its DELETE event carried).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Already delivered: nothing to do.
    AlreadySent,
    /// Given up earlier (`failed/<key>`) or reported as too old (`skipped/<key>`).
    AlreadySettled(Outcome),
    /// Claimed earlier by this replica (an attempt that failed): renew the claim, deliver
    /// again with the same key; receivers deduplicate.
    Resend,
    /// Claimed by another holder whose claim still holds: it delivers, not this replica.
    ClaimedElsewhere { holder: String, until: Timestamp },
    /// Claimed by a holder whose claim expired (its replica stopped), or by an earlier version
    /// that wrote no claim: claim it anew and deliver again with the same key.
    TakeOver,
    /// Not claimed yet: claim, deliver, mark sent.
    Claim,
    /// Unclaimed and finished before the catch-up window: reported (mark, Event, metric), not
    /// notified, so that installing into a cluster full of old workflows does not flood
    /// receivers.
    TooOld,
    /// The live workflow does not show the completion the event showed.
    Unconfirmed(String),
}

impl Plan {
    /// Metric label.
    pub fn label(&self) -> &'static str {
        match self {
            Plan::AlreadySent => "already-notified",
            Plan::AlreadySettled(outcome) => outcome.label(),
            Plan::Resend => "resend",
            Plan::ClaimedElsewhere { .. } => "claimed-elsewhere",
            Plan::TakeOver => "take-over",
            Plan::Claim => "claim",
            Plan::TooOld => "skipped-old",
            Plan::Unconfirmed(_) => "unconfirmed",
        }
    }
}

/// What a plan is decided against besides the objects: this replica, the mark key, the time
/// and the catch-up window.
#[derive(Clone, Debug)]
pub struct Rules<'a> {
    pub claimant: &'a Claimant,
    pub key: &'a MarkKey,
    pub now: Timestamp,
    pub catch_up: Duration,
}

/// Decides what to do about the completion `seen` (from an event) given what was read from the
/// live object: its facts and its mark. For a deleted
/// workflow, the final object its DELETE event carried stands for the live one. Another
/// holder's claim is judged by the time it names ([`Claim::holds_at`]): for a one-shot report.
pub fn plan_facts(
    seen: &WorkflowFacts,
    current: &WorkflowFacts,
    mark: Option<&Mark>,
    claim: Option<&Claim>,
    rules: &Rules,
) -> Plan {
    plan_judging(
        seen,
        current,
        mark,
        claim,
        |claim| claim.holds_at(rules.now),
        rules,
    )
}

/// [`plan_facts`], with whether another holder's (verified) claim still holds decided by
/// `holds`: the controller judges by how long it has seen the claim unchanged.
pub fn plan_judging(
    seen: &WorkflowFacts,
    current: &WorkflowFacts,
    mark: Option<&Mark>,
    claim: Option<&Claim>,
    holds: impl Fn(&Claim) -> bool,
    rules: &Rules,
) -> Plan {
    if current.uid != seen.uid {
        return Plan::Unconfirmed(format!(
            "the workflow was re-created: uid {} is now {}",
            seen.uid, current.uid
        ));
    }
    if !current.complete {
        return Plan::Unconfirmed(format!(
            "the live workflow is not complete (phase {:?}, finishedAt {})",
            current.phase_text,
            current.finished_at.as_deref().unwrap_or("unset")
        ));
    }
    let key = seen.completion_key();
    if current.completion_key() != key {
        return Plan::Unconfirmed(format!(
            "the live workflow shows another completion: {}, not {key}",
            current.completion_key(),
        ));
    }
    let record = claim;
    let claim = claim.filter(|claim| claim.is_claim() && rules.key.verifies(claim, &key));
    match mark {
        Some(mark) if current.is_completion_key(mark.key()) => match mark {
            // With a mark key, a mark the controller did not sign (a pending one without its
            // claim, a settled one without its record) is not one of its marks: the completion
            // is judged as unclaimed.
            _ if !signed_mark(mark, record, rules.key, &key) => unclaimed(current, rules),
            Mark::Sent(_) => Plan::AlreadySent,
            Mark::Pending(_) => match claim {
                Some(claim) if claim.is_by(rules.claimant) => Plan::Resend,
                Some(claim) if holds(claim) => Plan::ClaimedElsewhere {
                    holder: claim.holder.clone(),
                    until: claim.until,
                },
                // Unsigned, it could be anyone's: past the catch-up window it is judged as
                // unclaimed, so a forged mark cannot make an old completion notified.
                _ if !rules.key.is_set() => match unclaimed(current, rules) {
                    Plan::Claim => Plan::TakeOver,
                    too_old => too_old,
                },
                _ => Plan::TakeOver,
            },
            Mark::Failed(_) => Plan::AlreadySettled(Outcome::AlreadyFailed),
            Mark::Skipped(_) => Plan::AlreadySettled(Outcome::AlreadySkipped),
        },
        _ => unclaimed(current, rules),
    }
}

fn unclaimed(current: &WorkflowFacts, rules: &Rules) -> Plan {
    if finished_before(current, rules.now, rules.catch_up) {
        Plan::TooOld
    } else {
        Plan::Claim
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

/// The CloudEvents `type` of an exit notification.
pub const CLOUDEVENT_TYPE: &str = "io.pipewarden.workflow.completed.v1";

/// One exit notification as it is POSTed: a CloudEvent 1.0 in HTTP binary mode (the context
/// attributes as `ce-*` headers, the data as the JSON body), plus `Idempotency-Key` and the
/// Standard Webhooks `webhook-id`. The body is serialized once: what is signed is what is sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    pub key: String,
    /// The CloudEvent's context attributes by their own names, values as they are (what a
    /// structured-mode event carries).
    pub attributes: Vec<(&'static str, String)>,
    /// Header names in lower case, values already encoded for HTTP.
    pub headers: Vec<(&'static str, String)>,
    pub body: bytes::Bytes,
}

/// The notification for the completion `live`, from the CloudEvents `source`, with the body's
/// changeable parts as `frozen` says (the claim's), or as `live` shows them.
pub fn frozen_notification(
    live: &WorkflowFacts,
    frozen: Option<&FrozenBody>,
    source: &str,
) -> Notification {
    match frozen {
        Some(frozen) => {
            let mut facts = live.clone();
            facts.resource_version = frozen.resource_version.clone();
            facts.message = frozen.message.clone();
            notification(&facts, source)
        }
        None => notification(live, source),
    }
}

/// What a first claim freezes of the body: the completion's resourceVersion and message now.
pub fn freeze(live: &WorkflowFacts) -> FrozenBody {
    FrozenBody {
        resource_version: live.resource_version.clone(),
        message: live.message.clone(),
    }
}

/// The notification for the completion `live`, from the CloudEvents `source`.
pub fn notification(live: &WorkflowFacts, source: &str) -> Notification {
    let key = live.completion_key();
    // Each attribute, its header in HTTP binary mode, and its value (`time` only once finished).
    let context = [
        ("specversion", "ce-specversion", Some("1.0".to_owned())),
        ("id", "ce-id", Some(key.clone())),
        ("type", "ce-type", Some(CLOUDEVENT_TYPE.to_owned())),
        ("source", "ce-source", Some(source.to_owned())),
        (
            "subject",
            "ce-subject",
            Some(format!("{}/{}", live.namespace, live.name)),
        ),
        ("time", "ce-time", live.finished_at.clone()),
        (
            "datacontenttype",
            "content-type",
            Some("application/json".to_owned()),
        ),
    ];
    let (mut attributes, mut headers) = (Vec::new(), Vec::new());
    for (attribute, header, value) in context {
        let Some(value) = value else { continue };
        headers.push((header, header_value(&value)));
        attributes.push((attribute, value));
    }
    headers.push(("idempotency-key", header_value(&key)));
    headers.push(("webhook-id", header_value(&key)));
    Notification {
        body: payload(live).to_string().into(),
        key,
        attributes,
        headers,
    }
}

/// The CloudEvent's data. `idempotencyKey` is the same for every delivery of one completion.
pub fn payload(live: &WorkflowFacts) -> Value {
    json!({
        "namespace": live.namespace,
        "name": live.name,
        "uid": live.uid,
        "phase": live.phase_text,
        "startedAt": live.started_at,
        "finishedAt": live.finished_at,
        "message": live.message,
        "resourceVersion": live.resource_version,
        "idempotencyKey": live.completion_key(),
    })
}

/// A header value as the CloudEvents HTTP binding writes one: printable ASCII as it is,
/// space, `"`, `%` and everything else percent-encoded as UTF-8.
pub fn header_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if (0x21..=0x7e).contains(&byte) && byte != b'"' && byte != b'%' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Kubernetes Event reasons the exit gate records on a Workflow.
pub mod reasons {
    /// One per completion, recorded before the webhook is called (the notification itself
    /// when there is no webhook).
    pub const NOTIFIED: &str = "ExitNotification";
    /// The attempts ran out, or the claim was superseded: the completion was not notified.
    pub const GAVE_UP: &str = "ExitNotificationFailed";
    /// First seen after the catch-up window: not notified.
    pub const SKIPPED: &str = "ExitNotificationSkipped";
    /// Observe mode: it would have been notified.
    pub const OBSERVED: &str = "ExitNotificationObserved";
}

/// The name of the Event recording `reason` for one completion: the same on every attempt,
/// replica and restart, so that it is created once (a second create answers 409) and each
/// completion has an Event of its own.
pub fn event_name(workflow_name: &str, reason: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("{reason}\n{key}").as_bytes());
    let mut prefix: String = workflow_name.chars().take(200).collect();
    while prefix.ends_with(['.', '-']) {
        prefix.pop();
    }
    format!("{prefix}.exit-{}", &hex::encode(digest)[..16])
}

/// The note of the Event recorded for a completion.
pub fn event_note(live: &WorkflowFacts) -> String {
    let mut note = format!(
        "Workflow {} at {} (started {}); exit notification {}",
        live.phase_text,
        live.finished_at.as_deref().unwrap_or("-"),
        live.started_at.as_deref().unwrap_or("-"),
        live.completion_key()
    );
    if let Some(message) = &live.message {
        note.push_str(": ");
        note.push_str(message);
    }
    truncate_note(note)
}

/// An Event note fits in 1 KiB.
pub fn truncate_note(mut note: String) -> String {
    const MAX: usize = 1000;
    if note.len() > MAX {
        let mut cut = MAX - 3;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
        note.push_str("...");
    }
    note
}
