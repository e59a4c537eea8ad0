//! Where a compiled workflow keeps its IR, and which stored spec each task uses.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::RecoverError;
use crate::argo::{ARG_COMPONENTS, ARG_IMPLEMENTATIONS, ARG_KUBERNETES};

/// Annotation prefix of the 2.0 to 2.2 layout.
const ANNOTATION_PREFIX: &str = "pipelines.kubeflow.org/";

/// How a workflow stores its IR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// KFP 2.3 and later: `spec.arguments.parameters`, container components keyed by hash.
    Arguments,
    /// KFP 2.0 to 2.2: `metadata.annotations`, keyed by component name.
    Annotations,
}

/// The stored JSON texts by name (`components-<key>`, `implementations-<key>`,
/// `kubernetes-<component>`).
pub struct Stores {
    texts: BTreeMap<String, String>,
    layout: Layout,
}

impl Stores {
    pub fn collect(workflow: &Value) -> Stores {
        let is_ir = |name: &str| {
            [ARG_COMPONENTS, ARG_IMPLEMENTATIONS, ARG_KUBERNETES]
                .iter()
                .any(|prefix| name.starts_with(prefix))
        };
        let mut texts = BTreeMap::new();
        for parameter in workflow
            .pointer("/spec/arguments/parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(name), Some(value)) = (
                parameter.get("name").and_then(Value::as_str),
                parameter.get("value").and_then(Value::as_str),
            ) && is_ir(name)
            {
                texts.insert(name.to_owned(), value.to_owned());
            }
        }
        let mut layout = Layout::Arguments;
        if texts.is_empty() {
            for (key, value) in workflow
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if let (Some(name), Some(value)) =
                    (key.strip_prefix(ANNOTATION_PREFIX), value.as_str())
                    && is_ir(name)
                {
                    texts.insert(name.to_owned(), value.to_owned());
                    layout = Layout::Annotations;
                }
            }
        }
        Stores { texts, layout }
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn has(&self, name: &str) -> bool {
        self.texts.contains_key(name)
    }

    /// The stored JSON `name`, parsed.
    pub fn json(&self, name: &str) -> Result<Value, RecoverError> {
        let text = self
            .texts
            .get(name)
            .ok_or_else(|| RecoverError::Damaged(format!("{name} is not stored")))?;
        serde_json::from_str(text)
            .map_err(|e| RecoverError::Damaged(format!("{name} is not JSON: {e}")))
    }
}

/// What the driver tasks say about each component: the stored spec and executor it uses.
#[derive(Default)]
pub struct References {
    components: BTreeMap<String, String>,
    implementations: BTreeMap<String, (String, bool)>,
}

impl References {
    pub fn component_key(&self, component: &str) -> Option<String> {
        self.components.get(component).cloned()
    }

    pub fn implementation_key(&self, component: &str) -> Option<String> {
        self.implementations
            .get(component)
            .map(|(key, _)| key.clone())
    }

    /// Whether the component's executor is an importer, when a task says so.
    pub fn is_importer(&self, component: &str) -> Option<bool> {
        self.implementations
            .get(component)
            .map(|(_, importer)| *importer)
    }
}

/// Every task of every DAG template in a compiled workflow.
pub fn dag_tasks(workflow: &Value) -> impl Iterator<Item = &Value> {
    workflow
        .pointer("/spec/templates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer("/dag/tasks").and_then(Value::as_array))
        .flatten()
}

/// Reads every DAG task that passes a task spec (`task`) with a stored component spec
/// (`component`) and possibly an executor (`container` or `importer`).
pub fn references(workflow: &Value, stores: &Stores) -> References {
    let mut references = References::default();
    for task in dag_tasks(workflow) {
        let parameters: BTreeMap<&str, &str> = task
            .pointer("/arguments/parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p.get("name")?.as_str()?, p.get("value")?.as_str()?)))
            .collect();
        let Some(component) = parameters
            .get("task")
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .and_then(|task| {
                task.pointer("/componentRef/name")?
                    .as_str()
                    .map(str::to_owned)
            })
        else {
            continue;
        };
        if let Some(key) = parameters
            .get("component")
            .and_then(|p| stored_name(p))
            .filter(|key| stores.has(key))
        {
            references.components.insert(component.clone(), key);
        }
        for (parameter, importer) in [("container", false), ("importer", true)] {
            if let Some(key) = parameters
                .get(parameter)
                .and_then(|p| stored_name(p))
                .filter(|key| stores.has(key))
            {
                references
                    .implementations
                    .insert(component.clone(), (key, importer));
            }
        }
    }
    references
}

/// The one thing read from a stored task spec; the rest is skipped unparsed.
#[allow(dead_code, reason = "built by the derived Deserialize only")]
#[derive(Deserialize)]
struct TaskRef {
    #[serde(rename = "componentRef")]
    component_ref: Option<ComponentRef>,
}

#[allow(dead_code, reason = "built by the derived Deserialize only")]
#[derive(Deserialize)]
struct ComponentRef {
    name: Option<String>,
}

/// The store a placeholder refers to: `{{workflow.parameters.NAME}}` or
/// `{{workflow.annotations.pipelines.kubeflow.org/NAME}}`.
fn stored_name(placeholder: &str) -> Option<String> {
    let inner = placeholder.strip_prefix("{{")?.strip_suffix("}}")?;
    let name = inner.strip_prefix("workflow.parameters.").or_else(|| {
        inner
            .strip_prefix("workflow.annotations.")?
            .strip_prefix(ANNOTATION_PREFIX)
    })?;
    Some(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_name_their_store() {
        assert_eq!(
            stored_name("{{workflow.parameters.components-abc}}").as_deref(),
            Some("components-abc")
        );
        assert_eq!(
            stored_name("{{workflow.annotations.pipelines.kubeflow.org/implementations-comp-a}}")
                .as_deref(),
            Some("implementations-comp-a")
        );
        assert_eq!(stored_name("{\"componentRef\":{}}"), None);
    }
}
