//! Turning a Workflow object and how it was seen into the event a policy decides on.

use serde_json::Value;

use super::tombstone::{Phase, Sighting};
use crate::engine::{EventKind, WorkflowEvent};

pub const COMPLETED_LABEL: &str = "workflows.argoproj.io/completed";

/// The fields of a Workflow the host itself reads.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkflowFacts {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub phase: Phase,
    pub phase_text: String,
    pub complete: bool,
    pub finished_at: Option<String>,
}

impl WorkflowFacts {
    /// None if the object lacks a name or uid: such an object cannot be reasoned about.
    pub fn read(workflow: &Value) -> Option<WorkflowFacts> {
        let text = |pointer: &str| workflow.pointer(pointer).and_then(Value::as_str);
        let phase_text = text("/status/phase").unwrap_or("").to_string();
        let phase = Phase::parse(&phase_text);
        let labelled_complete = workflow
            .pointer("/metadata/labels")
            .and_then(|labels| labels.get(COMPLETED_LABEL))
            .and_then(Value::as_str)
            == Some("true");
        Some(WorkflowFacts {
            namespace: text("/metadata/namespace").unwrap_or("").to_string(),
            name: text("/metadata/name")?.to_string(),
            uid: text("/metadata/uid")?.to_string(),
            resource_version: text("/metadata/resourceVersion").unwrap_or("").to_string(),
            phase,
            complete: phase.is_complete() || labelled_complete,
            phase_text,
            finished_at: text("/status/finishedAt").map(str::to_string),
        })
    }

    /// Identifies one completion: a retried workflow completes again with a new finishedAt.
    pub fn completion_key(&self) -> String {
        let when = self.finished_at.as_deref().unwrap_or(&self.phase_text);
        format!("{}/{when}", self.uid)
    }

    pub fn sighting(&self, kind: EventKind) -> Sighting<'_> {
        Sighting {
            resource_version: &self.resource_version,
            phase: self.phase,
            complete: self.complete,
            deleted: kind == EventKind::Deleted,
        }
    }

    /// The event record for the policy; `workflow` is the object as JSON text.
    pub fn event(&self, kind: EventKind, workflow: &Value) -> WorkflowEvent {
        let labels = workflow
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        WorkflowEvent {
            kind,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
            phase: self.phase_text.clone(),
            labels,
            workflow: policy_view(workflow),
        }
    }
}

/// Status fields left out of what the policy sees: Argo's per-node bookkeeping, which grows
/// with the workflow and would dominate the cost of every decision.
pub const STATUS_FIELDS_WITHHELD: [&str; 3] =
    ["nodes", "storedTemplates", "storedWorkflowTemplateSpec"];

/// The Workflow as JSON for the policy, without [`STATUS_FIELDS_WITHHELD`]; written straight
/// from the object, without copying it.
pub fn policy_view(workflow: &Value) -> String {
    serde_json::to_string(&Withholding {
        value: workflow,
        status_level: false,
    })
    .unwrap_or_default()
}

struct Withholding<'a> {
    value: &'a Value,
    /// True for the `status` object itself, where the withheld fields live.
    status_level: bool,
}

impl serde::Serialize for Withholding<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(object) = self.value else {
            return self.value.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in object {
            if self.status_level && STATUS_FIELDS_WITHHELD.contains(&key.as_str()) {
                continue;
            }
            if !self.status_level && key == "status" {
                map.serialize_entry(
                    key,
                    &Withholding {
                        value,
                        status_level: true,
                    },
                )?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

pub fn event_kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Added => "ADDED",
        EventKind::Modified => "MODIFIED",
        EventKind::Deleted => "DELETED",
        EventKind::Relisted => "RELISTED",
    }
}

/// Parses a watch event type (`ADDED`, `MODIFIED`, `DELETED`, or `RELISTED` for a list item).
pub fn parse_event_kind(kind: &str) -> Option<EventKind> {
    match kind.to_ascii_uppercase().as_str() {
        "ADDED" => Some(EventKind::Added),
        "MODIFIED" => Some(EventKind::Modified),
        "DELETED" => Some(EventKind::Deleted),
        "RELISTED" | "LISTED" => Some(EventKind::Relisted),
        _ => None,
    }
}
