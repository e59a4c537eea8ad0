//! Exit processing for one completion: confirm with a fresh read, claim, deliver, mark sent.
//! Every write carries the resourceVersion it was decided on; a conflict means "read again".

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use serde_json::Value;

use super::watch::workflows;
use super::worker::{Gate, MAX_DELIVERY_PASSES, Work};
use crate::controller::metrics::Metrics;
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::{Mark, Plan, event_note, finished_before, payload, plan};
use crate::exit::retry::jittered;

/// Reads and writes per step before giving up on a workflow that keeps changing.
const CONFLICT_ATTEMPTS: u32 = 5;

/// Runs exit processing for the completion `seen` and counts its outcome. `event` is the
/// object the event carried (none on a redelivery); `pass` counts delivery passes.
pub(super) async fn process(
    gate: &Gate,
    seen: &WorkflowFacts,
    event: Option<&Value>,
    pass: u32,
) -> &'static str {
    let outcome = attempt(gate, seen, event, pass).await;
    Metrics::count(&gate.ctx.metrics.exit_notifications, outcome);
    outcome
}

async fn attempt(
    gate: &Gate,
    seen: &WorkflowFacts,
    event: Option<&Value>,
    pass: u32,
) -> &'static str {
    if !gate.ctx.may_write() {
        return "not-leader";
    }
    let key = seen.completion_key();
    match event.map(|object| (object, Mark::read(object))) {
        Some((_, Some(Mark::Sent(marked)))) if marked == key => return "already-notified",
        // Unclaimed and old: decided without a read, so installing into a cluster full of
        // finished workflows costs no API calls for them.
        Some((_, None)) if finished_before(seen, Timestamp::now(), gate.catch_up) => {
            return "skipped-old";
        }
        _ => {}
    }
    let api = workflows(&gate.ctx, &seen.namespace);
    for _ in 0..CONFLICT_ATTEMPTS {
        // A fresh read, not the watch's copy: the side effect follows the live object.
        let live = match read(&api, &seen.name).await {
            Ok(Some(live)) => live,
            Ok(None) => return unconfirmed(seen, "the workflow is gone"),
            Err(error) => {
                tracing::warn!(workflow = seen.name, %error, "cannot read workflow to confirm");
                return "error";
            }
        };
        let claimed = match plan(seen, &live, Timestamp::now(), gate.catch_up) {
            Plan::AlreadySent => return "already-notified",
            Plan::TooOld => {
                tracing::info!(
                    key,
                    "completion older than the catch-up window; not notified"
                );
                return "skipped-old";
            }
            Plan::Unconfirmed(reason) => return unconfirmed(seen, &reason),
            Plan::Resend => live,
            // Leadership may have moved while we read: a claim is a write.
            Plan::Claim if !gate.ctx.may_write() => return "not-leader",
            Plan::Claim => match write_mark(&api, seen, &Mark::Pending(key.clone()), &live).await {
                Ok(claimed) => claimed,
                Err(kube::Error::Api(status)) if status.is_conflict() => continue,
                Err(error) => {
                    tracing::warn!(key, %error, "cannot claim the exit notification");
                    return "error";
                }
            },
        };
        return deliver_and_mark(gate, &api, seen, &claimed, pass).await;
    }
    tracing::warn!(key, "workflow kept changing; left for its next event");
    "conflict"
}

fn unconfirmed(seen: &WorkflowFacts, reason: &str) -> &'static str {
    tracing::info!(
        workflow = seen.name,
        uid = seen.uid,
        rv = seen.resource_version,
        reason,
        "completion not confirmed by the API server; not notifying"
    );
    "unconfirmed"
}

async fn deliver_and_mark(
    gate: &Gate,
    api: &Api<DynamicObject>,
    seen: &WorkflowFacts,
    claimed: &Value,
    pass: u32,
) -> &'static str {
    let Some(live) = WorkflowFacts::read(claimed) else {
        return "error";
    };
    let key = live.completion_key();
    if let Err(error) = deliver(gate, &live).await {
        tracing::warn!(
            key,
            pass,
            error,
            "exit notification not delivered; the claim stays pending"
        );
        if pass + 1 < MAX_DELIVERY_PASSES {
            gate.schedule(
                jittered(pass, gate.retry_delay, gate.retry_delay * 16),
                Work::Redeliver {
                    seen: seen.clone(),
                    pass: pass + 1,
                },
            );
        }
        return "failed";
    }
    let mut current = claimed.clone();
    for _ in 0..CONFLICT_ATTEMPTS {
        match write_mark(api, &live, &Mark::Sent(key.clone()), &current).await {
            Ok(_) => return "sent",
            Err(kube::Error::Api(status)) if status.is_conflict() => {}
            Err(error) => {
                tracing::warn!(key, %error, "delivered, but cannot mark sent; a restart re-sends");
                return "sent";
            }
        }
        match read(api, &live.name).await {
            Ok(Some(fresh)) if Mark::read(&fresh) == Some(Mark::Pending(key.clone())) => {
                current = fresh;
            }
            Ok(_) => {
                tracing::warn!(
                    key,
                    "the claim changed under us after delivery; not marking"
                );
                return "sent";
            }
            Err(error) => {
                tracing::warn!(key, %error, "delivered, but cannot re-read to mark sent");
                return "sent";
            }
        }
    }
    tracing::warn!(
        key,
        "delivered, but the mark kept conflicting; a restart re-sends"
    );
    "sent"
}

/// The webhook (if configured), then the Kubernetes Event. The Event is the notification
/// when there is no webhook; beside an accepted webhook it is best effort.
async fn deliver(gate: &Gate, live: &WorkflowFacts) -> Result<(), String> {
    if let Some(webhook) = &gate.webhook {
        webhook
            .deliver(&gate.ctx.metrics, &payload(live), &live.completion_key())
            .await?;
    }
    let event = Event {
        type_: if live.phase_text == "Succeeded" {
            EventType::Normal
        } else {
            EventType::Warning
        },
        reason: "ExitNotification".into(),
        note: Some(event_note(live)),
        action: "Notify".into(),
        secondary: None,
    };
    match gate.ctx.recorder.publish(&event, &reference(live)).await {
        Ok(()) => Ok(()),
        Err(error) if gate.webhook.is_some() => {
            tracing::warn!(%error, key = live.completion_key(), "webhook accepted; Event not recorded");
            Ok(())
        }
        Err(error) => Err(format!("cannot record the Event: {error}")),
    }
}

fn reference(live: &WorkflowFacts) -> ObjectReference {
    ObjectReference {
        api_version: Some("argoproj.io/v1alpha1".into()),
        kind: Some("Workflow".into()),
        namespace: Some(live.namespace.clone()),
        name: Some(live.name.clone()),
        uid: Some(live.uid.clone()),
        ..ObjectReference::default()
    }
}

async fn read(api: &Api<DynamicObject>, name: &str) -> kube::Result<Option<Value>> {
    match api.get_opt(name).await? {
        Some(object) => Ok(Some(
            serde_json::to_value(object).map_err(kube::Error::SerdeError)?,
        )),
        None => Ok(None),
    }
}

/// Sets `mark` on the workflow, only if it is still at `current`'s resourceVersion.
async fn write_mark(
    api: &Api<DynamicObject>,
    workflow: &WorkflowFacts,
    mark: &Mark,
    current: &Value,
) -> kube::Result<Value> {
    let resource_version = current
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let patch = mark.patch(resource_version);
    let written = api
        .patch(
            &workflow.name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    serde_json::to_value(written).map_err(kube::Error::SerdeError)
}
