//! What a render may change: the embedded workflow (`spec.workflow`), the service account the
//! API server writes beside it (`spec.serviceAccount`) and the project's own annotations (the
//! `pipewarden.io/` ones and `pipelines.kubeflow.org/version`). A render that changes anything
//! else (a trigger, `enabled`, someone else's annotation) is refused, whatever the policy.

use serde_json::Value;

use super::VERSION_ANNOTATION;
use super::diff::Change;

/// Top-level `spec` fields a render owns.
const OWNED_SPEC_FIELDS: [&str; 2] = ["workflow", "serviceAccount"];

/// Whether pipewarden owns the annotation `key`.
pub fn owned_annotation(key: &str) -> bool {
    key.starts_with("pipewarden.io/") || key == VERSION_ANNOTATION
}

/// The first change of `changes` outside what pipewarden owns, by its path.
pub fn foreign_change<'a>(changes: &'a [Change], desired: &Value) -> Option<&'a str> {
    changes.iter().map(Change::path).find(|path| {
        if let Some(rest) = path.strip_prefix("metadata.annotations") {
            return !annotation_owned(rest, desired);
        }
        let Some(field) = path.strip_prefix("spec.") else {
            return true;
        };
        let name = field.split(['.', '[']).next().unwrap_or(field);
        !OWNED_SPEC_FIELDS.contains(&name)
    })
}

/// Whether the annotation named by a diff path's tail (`.key` or `["key"]`) is owned.
fn annotation_owned(tail: &str, desired: &Value) -> bool {
    let annotations = desired
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let key = match tail.strip_prefix('.') {
        Some(key) => key.to_owned(),
        None => tail
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|quoted| serde_json::from_str::<String>(quoted).ok())
            .unwrap_or_default(),
    };
    annotations.is_some_and(|a| a.contains_key(&key)) && owned_annotation(&key)
}

/// A render with its `null`s dropped from `spec` (objects, not strings) and from the
/// annotations: a merge patch deletes what it sets to null, so the API server keeps none, and
/// a null left in the render would be written again on every pass.
pub fn drop_nulls(desired: &mut Value) {
    if let Some(spec) = desired.get_mut("spec") {
        drop_null_members(spec);
    }
    if let Some(annotations) = desired
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.retain(|_, value| !value.is_null());
    }
}

fn drop_null_members(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, member| !member.is_null());
            map.values_mut().for_each(drop_null_members);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_members),
        _ => {}
    }
}
