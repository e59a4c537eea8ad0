//! Workflows written as Argo's controller writes them, stale copies as a lagging cache holds
//! them, and the traces the exit gate leaves (annotation, Events).

use std::collections::BTreeMap;

use crate::resources::{WORKFLOW_NOTIFY_RUNNING, parse_object, workflow_resource};
use anyhow::{Context as _, Result};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt as _};
use pipewarden::exit::event::WorkflowFacts;
use pipewarden::exit::notification::NOTIFICATION_ANNOTATION;
use serde_json::{Value, json};

pub fn workflows(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &workflow_resource())
}

/// A workflow as a user submits it (the sample with an exit handler): no status, phase "".
pub async fn submit(api: &Api<DynamicObject>, name: &str) -> Result<DynamicObject> {
    let mut workflow = parse_object(WORKFLOW_NOTIFY_RUNNING)?;
    workflow.metadata.name = Some(name.to_owned());
    workflow.metadata.namespace = None;
    workflow.metadata.labels = None;
    if let Some(fields) = workflow.data.as_object_mut() {
        fields.remove("status");
    }
    Ok(api.create(&PostParams::default(), &workflow).await?)
}

/// Argo's controller moving `current` to `phase` in one write on the version it read: status
/// and the phase and completed labels. A complete phase carries `finished_at`.
pub async fn set_phase(
    api: &Api<DynamicObject>,
    current: &DynamicObject,
    phase: &str,
    finished_at: Option<&str>,
) -> Result<DynamicObject> {
    let complete = matches!(phase, "Succeeded" | "Failed" | "Error");
    let patch = json!({
        "metadata": {
            "resourceVersion": current.resource_version(),
            "labels": {
                "workflows.argoproj.io/completed": complete.to_string(),
                "workflows.argoproj.io/phase": phase,
            },
        },
        "status": {
            "phase": phase,
            "startedAt": "2026-08-04T01:00:03Z",
            "finishedAt": finished_at,
            "progress": if complete { "1/1" } else { "0/1" },
        },
    });
    let name = current.name_any();
    Ok(api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// Now, or `seconds_ago` before, as Argo writes timestamps.
pub fn timestamp(seconds_ago: i64) -> String {
    let at = Timestamp::now() - SignedDuration::from_secs(seconds_ago);
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn as_json(object: &DynamicObject) -> Value {
    serde_json::to_value(object).expect("a workflow is JSON")
}

/// What a lagging cache turns an old copy into when its pods are gone (Argo #12198): the old
/// resourceVersion, but failed, with a finishedAt of its own.
pub fn stale_failure(old: &DynamicObject) -> Value {
    let mut copy = as_json(old);
    copy["status"]["phase"] = json!("Error");
    copy["status"]["finishedAt"] = json!(timestamp(0));
    copy["status"]["message"] = json!("pod deleted");
    copy["metadata"]["labels"]["workflows.argoproj.io/completed"] = json!("true");
    copy
}

/// The idempotency key of a completed workflow, as the controller derives it.
pub fn completion_key(workflow: &DynamicObject) -> Result<String> {
    let facts = WorkflowFacts::read(&as_json(workflow)).context("no name or uid")?;
    anyhow::ensure!(facts.complete, "not complete: {:?}", facts.phase_text);
    Ok(facts.completion_key())
}

/// The exit gate's annotation on the live workflow.
pub async fn mark(api: &Api<DynamicObject>, name: &str) -> Result<Option<String>> {
    let live = api.get(name).await?;
    Ok(live.annotations().get(NOTIFICATION_ANNOTATION).cloned())
}

/// Waits until the live workflow is marked `sent/<key>`.
pub async fn wait_for_sent(api: &Api<DynamicObject>, name: &str, key: &str) -> Result<()> {
    let expected = format!("sent/{key}");
    crate::wait::until(
        &format!("{name} marked {expected}"),
        super::WAIT,
        || async {
            Ok((mark(api, name).await?.as_deref() == Some(expected.as_str())).then_some(()))
        },
    )
    .await
}

/// ExitNotification Events in `namespace`, occurrences per workflow uid.
pub async fn notification_events(
    client: &Client,
    namespace: &str,
) -> Result<BTreeMap<String, usize>> {
    events_with_reason(client, namespace, "ExitNotification").await
}

/// The ExitNotification Event objects in `namespace`.
pub async fn list_notification_events(client: &Client, namespace: &str) -> Result<Vec<Event>> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("ExitNotification"))
        .collect())
}

/// Events with `reason` in `namespace`, occurrences per workflow uid.
pub async fn events_with_reason(
    client: &Client,
    namespace: &str,
    reason: &str,
) -> Result<BTreeMap<String, usize>> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut per_uid = BTreeMap::new();
    for event in events.list(&ListParams::default()).await? {
        if event.reason.as_deref() != Some(reason) {
            continue;
        }
        // A repeated Event is recorded as a series on one object: count every occurrence.
        let occurrences = event
            .series
            .as_ref()
            .map_or(1, |series| series.count as usize);
        let uid = event.regarding.and_then(|r| r.uid).unwrap_or_default();
        *per_uid.entry(uid).or_default() += occurrences;
    }
    Ok(per_uid)
}
