//! Argo Workflows (`argoproj.io/v1alpha1`) as policies read them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::WorkflowEvent;
use crate::swf::SwfError;

/// `workflows.argoproj.io/completed`: "true" once Argo has finished the workflow.
pub const COMPLETED_LABEL: &str = "workflows.argoproj.io/completed";
/// `workflows.argoproj.io/phase`: the phase, mirrored into a label.
pub const PHASE_LABEL: &str = "workflows.argoproj.io/phase";

/// `status.phase` of a workflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// `""`: the Argo controller has not touched the workflow yet.
    New,
    Pending,
    Running,
    Succeeded,
    Failed,
    Error,
    /// A value this SDK does not know; never treated as completed.
    Other(String),
}

impl Phase {
    pub fn parse(text: &str) -> Self {
        match text {
            "" => Self::New,
            "Pending" => Self::Pending,
            "Running" => Self::Running,
            "Succeeded" => Self::Succeeded,
            "Failed" => Self::Failed,
            "Error" => Self::Error,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Succeeded, Failed or Error: Argo will not run the workflow further.
    pub fn is_completed(&self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Error)
    }
}

/// True when the event shows a finished workflow, by its phase or its completed label.
pub fn event_is_completed(event: &WorkflowEvent) -> bool {
    Phase::parse(&event.phase).is_completed()
        || event
            .labels
            .iter()
            .any(|(key, value)| key == COMPLETED_LABEL && value == "true")
}

/// A Workflow, kept whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Workflow(Value);

impl Workflow {
    pub fn from_json(text: &str) -> Result<Self, SwfError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| SwfError::NotJson(e.to_string()))?;
        if value.is_object() {
            Ok(Self(value))
        } else {
            Err(SwfError::NotAnObject)
        }
    }

    pub fn as_value(&self) -> &Value {
        &self.0
    }

    fn str_at(&self, pointer: &str) -> Option<&str> {
        self.0.pointer(pointer).and_then(Value::as_str)
    }

    pub fn name(&self) -> Option<&str> {
        self.str_at("/metadata/name")
    }

    pub fn namespace(&self) -> Option<&str> {
        self.str_at("/metadata/namespace")
    }

    pub fn uid(&self) -> Option<&str> {
        self.str_at("/metadata/uid")
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.str_at("/metadata/resourceVersion")
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.0.pointer("/metadata/labels")?.get(key)?.as_str()
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.0.pointer("/metadata/annotations")?.get(key)?.as_str()
    }

    /// `status.phase`; [`Phase::New`] when absent.
    pub fn phase(&self) -> Phase {
        Phase::parse(self.str_at("/status/phase").unwrap_or(""))
    }

    /// Finished, by phase or by the completed label.
    pub fn is_completed(&self) -> bool {
        self.phase().is_completed() || self.label(COMPLETED_LABEL) == Some("true")
    }

    /// The exit handler's template: `spec.onExit`, or `spec.hooks.exit.template`.
    pub fn exit_handler(&self) -> Option<&str> {
        self.str_at("/spec/onExit")
            .or_else(|| self.str_at("/spec/hooks/exit/template"))
            .filter(|name| !name.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventKind;

    fn event(phase: &str, labels: &[(&str, &str)]) -> WorkflowEvent {
        WorkflowEvent {
            kind: EventKind::Modified,
            namespace: "ns".into(),
            name: "wf".into(),
            uid: "u1".into(),
            resource_version: "1".into(),
            phase: phase.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            workflow: "{}".into(),
        }
    }

    #[test]
    fn phases() {
        assert_eq!(Phase::parse(""), Phase::New);
        assert!(!Phase::parse("Running").is_completed());
        for done in ["Succeeded", "Failed", "Error"] {
            assert!(Phase::parse(done).is_completed());
        }
        assert!(!Phase::parse("Exploded").is_completed());
    }

    #[test]
    fn completion_by_phase_or_label() {
        assert!(event_is_completed(&event("Succeeded", &[])));
        assert!(event_is_completed(&event(
            "Running",
            &[(COMPLETED_LABEL, "true")]
        )));
        assert!(!event_is_completed(&event(
            "Running",
            &[(COMPLETED_LABEL, "false")]
        )));
    }

    #[test]
    fn reads_workflow_fields() {
        let workflow = Workflow::from_json(
            r#"{"metadata":{"name":"wf","namespace":"ns","uid":"u1","resourceVersion":"110",
                "labels":{"workflows.argoproj.io/completed":"true"},"annotations":{"a":"b"}},
                "spec":{"onExit":"notify"},"status":{"phase":"Succeeded"}}"#,
        )
        .unwrap();
        assert_eq!(workflow.name(), Some("wf"));
        assert_eq!(workflow.namespace(), Some("ns"));
        assert_eq!(workflow.uid(), Some("u1"));
        assert_eq!(workflow.resource_version(), Some("110"));
        assert_eq!(workflow.annotation("a"), Some("b"));
        assert_eq!(workflow.phase(), Phase::Succeeded);
        assert!(workflow.is_completed());
        assert_eq!(workflow.exit_handler(), Some("notify"));
    }

    #[test]
    fn exit_handler_from_hooks_and_absent() {
        let hooked =
            Workflow::from_json(r#"{"spec":{"hooks":{"exit":{"template":"notify"}}}}"#).unwrap();
        assert_eq!(hooked.exit_handler(), Some("notify"));
        let plain = Workflow::from_json(r#"{"spec":{}}"#).unwrap();
        assert_eq!(plain.exit_handler(), None);
        assert_eq!(plain.phase(), Phase::New);
        assert!(Workflow::from_json("3").is_err());
    }
}
