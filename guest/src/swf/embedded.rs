//! The workflow embedded in an SWF's `spec.workflow.spec`.

use serde_json::{Map, Value};

use crate::canonical::canonical_json;

/// How `spec.workflow.spec` was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecForm {
    /// A JSON string, as KFP v2 writes it.
    String,
    /// An inline object, as older SWFs hold it.
    LegacyObject,
}

/// The compiled Argo Workflow embedded in `spec.workflow.spec`, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedWorkflow {
    pub value: Value,
    pub form: SpecForm,
}

impl EmbeddedWorkflow {
    /// The Argo `WorkflowSpec`: `spec` of a whole Workflow, or the value itself when a legacy
    /// SWF stored a bare WorkflowSpec. `None` when neither holds a `templates` list.
    pub fn workflow_spec(&self) -> Option<&Map<String, Value>> {
        let nested = self.value.get("spec").and_then(Value::as_object);
        match nested {
            Some(spec) if spec.contains_key("templates") => Some(spec),
            _ => self
                .value
                .as_object()
                .filter(|spec| spec.contains_key("templates")),
        }
    }

    /// Mutable access to [`workflow_spec`](Self::workflow_spec).
    pub fn workflow_spec_mut(&mut self) -> Option<&mut Map<String, Value>> {
        let nested = self
            .value
            .get("spec")
            .and_then(Value::as_object)
            .is_some_and(|spec| spec.contains_key("templates"));
        let target = if nested {
            self.value.get_mut("spec")
        } else {
            Some(&mut self.value)
        };
        target
            .and_then(Value::as_object_mut)
            .filter(|spec| spec.contains_key("templates"))
    }

    /// The workflow's templates, if it has a `templates` list.
    pub fn templates_mut(&mut self) -> Option<&mut Vec<Value>> {
        self.workflow_spec_mut()?
            .get_mut("templates")
            .and_then(Value::as_array_mut)
    }

    /// Compact canonical JSON text, the form written back into the SWF.
    pub fn to_json(&self) -> String {
        canonical_json(&self.value)
    }
}
