//! The one write the controller makes to a ScheduledWorkflow: a JSON merge patch of `spec` and
//! the annotations the render set, carrying the resourceVersion it was computed from.

use serde_json::{Map, Value, json};

/// A merge patch (RFC 7386) that turns `live` into `desired` for `spec` and the desired
/// annotations, with `metadata.resourceVersion` as an optimistic-concurrency precondition.
/// Status, labels and other metadata are never part of it.
pub fn swf_write_patch(live: &Value, desired: &Value, resource_version: &str) -> Value {
    let mut metadata = Map::new();
    metadata.insert("resourceVersion".into(), resource_version.into());
    let annotations = changed_annotations(live, desired);
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let mut patch = json!({ "metadata": metadata });
    let null = Value::Null;
    let live_spec = live.get("spec").unwrap_or(&null);
    if let Some(desired_spec) = desired.get("spec")
        && let Some(spec_patch) = merge_diff(live_spec, desired_spec)
    {
        patch["spec"] = spec_patch;
    }
    patch
}

fn changed_annotations(live: &Value, desired: &Value) -> Map<String, Value> {
    let Some(wanted) = desired
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    else {
        return Map::new();
    };
    wanted
        .iter()
        .filter(|(key, value)| {
            live.pointer("/metadata/annotations")
                .and_then(|a| a.get(key.as_str()))
                != Some(*value)
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// The merge patch from `from` to `to`, or None when they are equal. Keys missing from `to`
/// become null (deleted); arrays and scalars are replaced whole.
pub fn merge_diff(from: &Value, to: &Value) -> Option<Value> {
    if from == to {
        return None;
    }
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let mut patch = Map::new();
            for key in a.keys().filter(|key| !b.contains_key(*key)) {
                patch.insert(key.clone(), Value::Null);
            }
            for (key, value) in b {
                match a.get(key) {
                    Some(old) => {
                        if let Some(child) = merge_diff(old, value) {
                            patch.insert(key.clone(), child);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(to.clone()),
    }
}

/// Apply a merge patch (RFC 7386), as the API server does; used to check patches in tests and
/// to show offline what a write would leave behind.
pub fn apply_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let object = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if value.is_null() {
            object.remove(key);
        } else {
            apply_merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}
