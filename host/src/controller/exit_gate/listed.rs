//! Workflows as the exit gate reads them from the API server (its watch, its listings, its
//! single reads): parsed straight from the response with Argo's node bookkeeping
//! (`status.nodes`, `status.storedTemplates`) skipped as it is read, never held. A workflow
//! with a few hundred nodes is 100-500 KB of JSON and several times that as parsed values;
//! nothing the gate decides on is in those fields (the policy never sees them).

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ApiResource;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::exit::event::STATUS_FIELDS_WITHHELD;

/// A Workflow without `status.nodes` and `status.storedTemplates`.
#[derive(Clone, Debug, Default)]
pub struct ListedWorkflow {
    pub metadata: ObjectMeta,
    /// Every other top-level field (`apiVersion`, `kind`, `spec`, `status` without the
    /// withheld fields).
    rest: Map<String, Value>,
}

impl ListedWorkflow {
    /// The workflow as JSON, its metadata included.
    pub fn into_value(self) -> Value {
        let mut object = self.rest;
        if let Ok(metadata) = serde_json::to_value(&self.metadata) {
            object.insert("metadata".to_owned(), metadata);
        }
        Value::Object(object)
    }
}

impl<'de> serde::Deserialize<'de> for ListedWorkflow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(WorkflowVisitor)
    }
}

struct WorkflowVisitor;

impl<'de> Visitor<'de> for WorkflowVisitor {
    type Value = ListedWorkflow;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Workflow object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ListedWorkflow, A::Error> {
        let mut workflow = ListedWorkflow::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "metadata" => workflow.metadata = map.next_value()?,
                "status" => {
                    let status: Option<Status> = map.next_value()?;
                    let status = status.map_or(Value::Null, |s| Value::Object(s.0));
                    workflow.rest.insert(key, status);
                }
                _ => {
                    let value: Value = map.next_value()?;
                    workflow.rest.insert(key, value);
                }
            }
        }
        Ok(workflow)
    }
}

/// A workflow's status without the withheld fields.
struct Status(Map<String, Value>);

impl<'de> serde::Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StatusVisitor;
        impl<'de> Visitor<'de> for StatusVisitor {
            type Value = Status;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Workflow status")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Status, A::Error> {
                let mut status = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    if STATUS_FIELDS_WITHHELD.contains(&key.as_str()) {
                        map.next_value::<IgnoredAny>()?;
                    } else {
                        status.insert(key, map.next_value()?);
                    }
                }
                Ok(Status(status))
            }
        }
        deserializer.deserialize_map(StatusVisitor)
    }
}

impl kube::Resource for ListedWorkflow {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nodes_are_skipped_as_read_and_the_rest_is_kept() {
        let text = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "metadata": {"name": "w", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
            "spec": {"onExit": "notify"},
            "status": {"phase": "Failed", "finishedAt": "b", "message": "m",
                       "nodes": {"n1": {"id": "n1"}}, "storedTemplates": {"t": {}}}
        })
        .to_string();
        let listed: ListedWorkflow = serde_json::from_str(&text).unwrap();
        let value = listed.into_value();
        assert_eq!(value["metadata"]["uid"], "u");
        assert_eq!(value["spec"]["onExit"], "notify");
        assert_eq!(value["status"]["message"], "m");
        assert!(value["status"].get("nodes").is_none());
        assert!(value["status"].get("storedTemplates").is_none());
        let no_status: ListedWorkflow =
            serde_json::from_str(r#"{"metadata": {"name": "w"}, "status": null}"#).unwrap();
        assert!(no_status.into_value()["status"].is_null());
    }
}
