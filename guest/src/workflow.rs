//! Argo Workflows (`argoproj.io/v1alpha1`) as policies read them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::WorkflowEvent;
use crate::swf::SwfError;

/// `workflows.argoproj.io/completed`: "true" once Argo has finished the workflow.
pub const COMPLETED_LABEL: &str = "workflows.argoproj.io/completed";
/// `workflows.argoproj.io/phase`: the phase, mirrored into a label.
pub const PHASE_LABEL: &str = "workflows.argoproj.io/phase";

/// `status.phase` of a workflow (from `argo-rules`, the same the host reads).
pub use argo_rules::Phase;

/// True when the event shows a finished workflow: phase Succeeded, Failed or Error. The
/// `workflows.argoproj.io/completed` label follows the phase in Argo; alone it is not
/// completion (a workflow labelled completed with phase Running is running).
pub fn event_is_completed(event: &WorkflowEvent) -> bool {
    Phase::parse(&event.phase).is_complete()
}

/// Where a workflow's exit handler was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitHandler {
    /// `spec.onExit` or `spec.hooks.exit`.
    pub field: &'static str,
    /// The template it runs: its name, or `templateRef` as `name/template`.
    pub template: String,
    /// True when it comes from `status.storedWorkflowTemplateSpec`, the spec Argo merged from
    /// the workflow's `workflowTemplateRef` (and the controller's workflow defaults).
    pub from_stored_spec: bool,
}

/// The exit handler of a workflow given as JSON text: `spec.onExit` or `spec.hooks.exit`, on the
/// workflow itself or in `status.storedWorkflowTemplateSpec` (where Argo keeps the spec it
/// merged from a `workflowTemplateRef`). `Ok(None)`: the workflow has none, so Argo runs no
/// exit handler for it. `Err`: the text is not a workflow this could read.
///
/// Only the exit-handler fields are read; the rest of the text is scanned, not built, and a
/// workflow whose text names neither `onExit` nor `hooks` is answered without parsing.
pub fn exit_handler_of(workflow_json: &str) -> Result<Option<ExitHandler>, String> {
    if !workflow_json.contains("\"onExit\"") && !workflow_json.contains("\"hooks\"") {
        return Ok(None);
    }
    let shape: ExitShape =
        serde_json::from_str(workflow_json).map_err(|e| format!("not a readable workflow: {e}"))?;
    let own = shape.spec.and_then(|spec| spec.handler(false));
    Ok(own.or_else(|| {
        shape
            .status
            .and_then(|status| status.stored_workflow_template_spec)
            .and_then(|spec| spec.handler(true))
    }))
}

#[derive(Deserialize)]
struct ExitShape {
    spec: Option<SpecShape>,
    status: Option<StatusShape>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusShape {
    stored_workflow_template_spec: Option<SpecShape>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecShape {
    on_exit: Option<String>,
    hooks: Option<HooksShape>,
}

#[derive(Deserialize)]
struct HooksShape {
    exit: Option<HookShape>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HookShape {
    template: Option<String>,
    template_ref: Option<TemplateRefShape>,
}

#[derive(Deserialize)]
struct TemplateRefShape {
    name: Option<String>,
    template: Option<String>,
}

impl SpecShape {
    fn handler(self, from_stored_spec: bool) -> Option<ExitHandler> {
        if let Some(template) = self.on_exit.filter(|name| !name.is_empty()) {
            return Some(ExitHandler {
                field: "spec.onExit",
                template,
                from_stored_spec,
            });
        }
        let hook = self.hooks?.exit?;
        let template = match (hook.template.filter(|t| !t.is_empty()), hook.template_ref) {
            (Some(template), _) => template,
            (None, Some(reference)) => format!(
                "{}/{}",
                reference.name.unwrap_or_default(),
                reference.template.unwrap_or_default()
            ),
            (None, None) => return None,
        };
        Some(ExitHandler {
            field: "spec.hooks.exit",
            template,
            from_stored_spec,
        })
    }
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

    /// Finished as Argo means it: phase Succeeded, Failed or Error (the completed label alone
    /// is not enough).
    pub fn is_completed(&self) -> bool {
        self.phase().is_complete()
    }

    /// `status.finishedAt`, set by Argo when the workflow completes.
    pub fn finished_at(&self) -> Option<&str> {
        self.str_at("/status/finishedAt")
    }

    /// The exit handler's template: `spec.onExit`, or `spec.hooks.exit.template`, on the
    /// workflow or in the spec Argo stored from its `workflowTemplateRef` (see
    /// [`exit_handler_of`], which reads the JSON text without building it).
    pub fn exit_handler(&self) -> Option<&str> {
        ["/spec", "/status/storedWorkflowTemplateSpec"]
            .iter()
            .find_map(|spec| {
                self.str_at(&format!("{spec}/onExit"))
                    .or_else(|| self.str_at(&format!("{spec}/hooks/exit/template")))
                    .filter(|name| !name.is_empty())
            })
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
        assert!(!Phase::parse("Running").is_complete());
        for done in ["Succeeded", "Failed", "Error"] {
            assert!(Phase::parse(done).is_complete());
        }
        assert!(!Phase::parse("Exploded").is_complete());
    }

    #[test]
    fn completion_is_the_phase_not_the_label() {
        assert!(event_is_completed(&event("Succeeded", &[])));
        assert!(event_is_completed(&event("Error", &[])));
        // Labelled completed while running, or with no status at all: not complete.
        assert!(!event_is_completed(&event(
            "Running",
            &[(COMPLETED_LABEL, "true")]
        )));
        assert!(!event_is_completed(&event(
            "",
            &[(COMPLETED_LABEL, "true")]
        )));
    }

    #[test]
    fn exit_handlers_on_the_workflow_in_hooks_and_from_a_template() {
        let found = |text: &str| exit_handler_of(text).unwrap();
        let on_exit = found(r#"{"spec":{"onExit":"notify"}}"#).unwrap();
        assert_eq!(
            (on_exit.field, on_exit.template.as_str()),
            ("spec.onExit", "notify")
        );
        assert!(!on_exit.from_stored_spec);
        let hook = found(r#"{"spec":{"hooks":{"exit":{"template":"bye"}}}}"#).unwrap();
        assert_eq!(
            (hook.field, hook.template.as_str()),
            ("spec.hooks.exit", "bye")
        );
        let referenced =
            found(r#"{"spec":{"hooks":{"exit":{"templateRef":{"name":"lib","template":"bye"}}}}}"#)
                .unwrap();
        assert_eq!(referenced.template, "lib/bye");
        let stored = found(
            r#"{"spec":{"workflowTemplateRef":{"name":"nightly"}},
                "status":{"storedWorkflowTemplateSpec":{"onExit":"notify"}}}"#,
        )
        .unwrap();
        assert!(stored.from_stored_spec);
        // Task-level hooks are not the workflow's exit handler; an empty onExit is none.
        assert_eq!(
            found(
                r#"{"spec":{"templates":[{"dag":{"tasks":[{"hooks":{"exit":{"template":"x"}}}]}}]}}"#
            ),
            None
        );
        assert_eq!(found(r#"{"spec":{"onExit":""}}"#), None);
        assert_eq!(found(r#"{"spec":{"entrypoint":"main"}}"#), None);
        // A template reference Argo has not resolved yet shows no handler.
        assert_eq!(
            found(r#"{"spec":{"workflowTemplateRef":{"name":"nightly"}}}"#),
            None
        );
        assert!(exit_handler_of(r#"{"spec":{"onExit":3}}"#).is_err());
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
        assert_eq!(workflow.finished_at(), None);
        assert_eq!(workflow.exit_handler(), Some("notify"));
    }

    #[test]
    fn exit_handler_from_hooks_and_absent() {
        let hooked =
            Workflow::from_json(r#"{"spec":{"hooks":{"exit":{"template":"notify"}}}}"#).unwrap();
        assert_eq!(hooked.exit_handler(), Some("notify"));
        let plain = Workflow::from_json(r#"{"spec":{}}"#).unwrap();
        assert_eq!(plain.exit_handler(), None);
        let stored = Workflow::from_json(
            r#"{"spec":{},"status":{"storedWorkflowTemplateSpec":{"onExit":"bye"}}}"#,
        )
        .unwrap();
        assert_eq!(stored.exit_handler(), Some("bye"));
        assert_eq!(plain.phase(), Phase::New);
        assert!(Workflow::from_json("3").is_err());
    }
}
