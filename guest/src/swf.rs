//! ScheduledWorkflows (`kubeflow.org/v1beta1`) as policies read and edit them.
//!
//! [`Swf`] keeps the whole object as a `serde_json::Value`, so fields no accessor names (and
//! `status`) come back out exactly as they went in.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::canonical::{canonical_json, digest};
use crate::{RENDER_HASH_ANNOTATION, Stamps, VERSION_ANNOTATION};

mod embedded;
pub use embedded::{EmbeddedWorkflow, SpecForm};

/// Why an SWF, or the workflow embedded in it, could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SwfError {
    /// The SWF text is not JSON.
    NotJson(String),
    /// The SWF is JSON but not an object.
    NotAnObject,
    /// `spec.workflow.spec` is an empty string.
    EmptySpec,
    /// `spec.workflow.spec` is a string that is not JSON.
    UnparseableSpec(String),
    /// `spec.workflow.spec` is neither a string nor an object.
    SpecWrongType(&'static str),
}

impl fmt::Display for SwfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson(error) => write!(f, "the ScheduledWorkflow is not valid JSON: {error}"),
            Self::NotAnObject => f.write_str("the ScheduledWorkflow is not a JSON object"),
            Self::EmptySpec => f.write_str("spec.workflow.spec is an empty string"),
            Self::UnparseableSpec(error) => {
                write!(f, "spec.workflow.spec is not valid JSON: {error}")
            }
            Self::SpecWrongType(found) => write!(
                f,
                "spec.workflow.spec must be a JSON string or an object, found {found}"
            ),
        }
    }
}

impl std::error::Error for SwfError {}

/// A ScheduledWorkflow, kept whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Swf(Value);

impl Swf {
    pub fn from_json(text: &str) -> Result<Self, SwfError> {
        let value = serde_json::from_str(text).map_err(|e| SwfError::NotJson(e.to_string()))?;
        Self::from_value(value)
    }

    pub fn from_value(value: Value) -> Result<Self, SwfError> {
        if value.is_object() {
            Ok(Self(value))
        } else {
            Err(SwfError::NotAnObject)
        }
    }

    pub fn as_value(&self) -> &Value {
        &self.0
    }

    pub fn as_value_mut(&mut self) -> &mut Value {
        &mut self.0
    }

    pub fn into_value(self) -> Value {
        self.0
    }

    /// The whole object as canonical JSON: the same object always gives the same text.
    pub fn to_json(&self) -> String {
        canonical_json(&self.0)
    }

    pub fn name(&self) -> Option<&str> {
        self.0.pointer("/metadata/name").and_then(Value::as_str)
    }

    pub fn namespace(&self) -> Option<&str> {
        self.0
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.0
            .pointer("/metadata/annotations")
            .and_then(|annotations| annotations.get(key))
            .and_then(Value::as_str)
    }

    /// Sets one annotation, creating `metadata.annotations` if needed.
    pub fn set_annotation(&mut self, key: &str, value: &str) {
        let root = self.0.as_object_mut().expect("an Swf is always an object");
        let metadata = object_entry(root, "metadata");
        let annotations = object_entry(metadata, "annotations");
        annotations.insert(key.to_owned(), Value::String(value.to_owned()));
    }

    /// The stamps as found in the annotations.
    pub fn stamps(&self) -> Stamps {
        Stamps {
            version: self.annotation(VERSION_ANNOTATION).map(str::to_owned),
            render_hash: self.annotation(RENDER_HASH_ANNOTATION).map(str::to_owned),
        }
    }

    /// `spec`, if present.
    pub fn spec(&self) -> Option<&Value> {
        self.0.get("spec")
    }

    /// True when the SWF only references a pipeline version (no `spec.workflow.spec`):
    /// KFP compiles those at run time, so there is nothing to render.
    pub fn is_reference_only(&self) -> bool {
        self.0
            .pointer("/spec/workflow/spec")
            .is_none_or(Value::is_null)
    }

    /// The embedded workflow, read from either storage form; `Ok(None)` for a reference-only
    /// SWF.
    pub fn embedded_workflow(&self) -> Result<Option<EmbeddedWorkflow>, SwfError> {
        let Some(spec) = self.0.pointer("/spec/workflow/spec") else {
            return Ok(None);
        };
        match spec {
            Value::Null => Ok(None),
            Value::String(text) if text.trim().is_empty() => Err(SwfError::EmptySpec),
            Value::String(text) => serde_json::from_str(text)
                .map(|value| {
                    Some(EmbeddedWorkflow {
                        value,
                        form: SpecForm::String,
                    })
                })
                .map_err(|e| SwfError::UnparseableSpec(e.to_string())),
            Value::Object(_) => Ok(Some(EmbeddedWorkflow {
                value: spec.clone(),
                form: SpecForm::LegacyObject,
            })),
            other => Err(SwfError::SpecWrongType(json_type(other))),
        }
    }

    /// Writes `workflow` into `spec.workflow.spec` as a compact canonical JSON string, whatever
    /// form it was read from.
    pub fn set_embedded_workflow(&mut self, workflow: &EmbeddedWorkflow) {
        let root = self.0.as_object_mut().expect("an Swf is always an object");
        let spec = object_entry(root, "spec");
        let workflow_field = object_entry(spec, "workflow");
        workflow_field.insert("spec".to_owned(), Value::String(workflow.to_json()));
    }

    /// `spec.workflow.parameters` as (name, value) pairs, in stored order.
    pub fn parameters(&self) -> Vec<(String, Value)> {
        self.0
            .pointer("/spec/workflow/parameters")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| {
                        let name = item.get("name")?.as_str()?;
                        Some((
                            name.to_owned(),
                            item.get("value").cloned().unwrap_or_default(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// [`render_digest`] of this SWF's `spec` (of `null` when it has none).
    pub fn render_digest(&self) -> String {
        render_digest(self.spec().unwrap_or(&Value::Null))
    }

    /// [`render_digest`] of this SWF's `spec` with `workflow` as its embedded workflow: the
    /// same value as setting it and calling [`Swf::render_digest`], without parsing it back.
    pub fn render_digest_with(&self, workflow: &EmbeddedWorkflow) -> String {
        let mut spec = self
            .spec()
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        if let Some(spec) = spec.as_object_mut() {
            object_entry(spec, "workflow").insert("spec".to_owned(), workflow.value.clone());
        }
        render_digest(&spec)
    }
}

/// The digest stamped as `pipewarden.io/render-hash`: `sha256:` over the canonical JSON of
/// [`normalized_spec`]. Equal for two specs that differ only in key order, in the storage form
/// of the embedded workflow, or in the order of runtime parameters.
/// Whether SWF JSON text is reference-only (no `spec.workflow.spec`), without building the
/// object: the text is scanned and checked as JSON but nothing is copied, so a decision that
/// needs no more than this stays cheap. Errors if the text is not a JSON object.
pub fn is_reference_only_json(swf: &str) -> Result<bool, SwfError> {
    use serde::de::IgnoredAny;

    #[derive(Deserialize)]
    struct Top {
        spec: Option<SpecPeek>,
    }
    #[derive(Deserialize)]
    struct SpecPeek {
        workflow: Option<WorkflowPeek>,
    }
    #[derive(Deserialize)]
    struct WorkflowPeek {
        spec: Option<IgnoredAny>,
    }
    let top: Top = serde_json::from_str(swf).map_err(|e| SwfError::NotJson(e.to_string()))?;
    Ok(top
        .spec
        .and_then(|spec| spec.workflow)
        .and_then(|workflow| workflow.spec)
        .is_none())
}

pub fn render_digest(spec: &Value) -> String {
    digest(&normalized_spec(spec))
}

/// A copy of an SWF `spec` made comparable: the embedded workflow parsed (a string that is not
/// JSON stays a string), and `workflow.parameters` as a name -> value object (kept as a list if
/// an entry has no string name or a name repeats).
pub fn normalized_spec(spec: &Value) -> Value {
    let mut spec = spec.clone();
    let Some(workflow) = spec.get_mut("workflow").and_then(Value::as_object_mut) else {
        return spec;
    };
    if let Some(Value::String(text)) = workflow.get("spec")
        && let Ok(parsed) = serde_json::from_str::<Value>(text)
    {
        workflow.insert("spec".to_owned(), parsed);
    }
    if let Some(Value::Array(items)) = workflow.get("parameters")
        && let Some(by_name) = parameters_by_name(items)
    {
        workflow.insert("parameters".to_owned(), Value::Object(by_name));
    }
    spec
}

fn parameters_by_name(items: &[Value]) -> Option<Map<String, Value>> {
    let mut by_name = Map::new();
    for item in items {
        let name = item.get("name")?.as_str()?;
        let value = item.get("value").cloned().unwrap_or_default();
        if by_name.insert(name.to_owned(), value).is_some() {
            return None;
        }
    }
    Some(by_name)
}

/// The object at `key`, replacing a missing or non-object value with `{}`.
fn object_entry<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = map
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("just made an object")
}

/// The JSON type name of `value`, for error messages.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
