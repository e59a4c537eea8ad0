//! `COMPILED_PIPELINE_SPEC_PATCH`: a strategic merge patch on the workflow `spec`.
//!
//! Maps merge key by key, `null` deletes, lists are replaced, except the `WorkflowSpec` lists
//! Argo declares with a merge key, whose items merge by that key. `$patch: replace` and
//! `$patch: delete` are honoured on maps. Nested lists inside merged items are replaced.
//!
//! KFP then decodes the patched JSON back into the workflow's existing spec with Go's
//! `json.Unmarshal`, which keeps what the JSON leaves out: fields and map entries the patch
//! deleted stay, and list items are decoded into the old item at the same index. [`overlay`]
//! does the same, so a deletion in the patch changes nothing, as in KFP.

use serde_json::{Map, Value};

use crate::error::CompileError;

/// `WorkflowSpec` lists that merge item by item (JSON pointer below `spec`, merge key).
const MERGE_KEYS: [(&str, &str); 7] = [
    ("/templates", "name"),
    ("/volumes", "name"),
    ("/tolerations", "key"),
    ("/imagePullSecrets", "name"),
    ("/hostAliases", "ip"),
    ("/arguments/parameters", "name"),
    ("/arguments/artifacts", "name"),
];

pub fn apply(workflow: &mut Value, patch_text: &str) -> Result<(), CompileError> {
    let patch: Value = serde_json::from_str(patch_text).map_err(|e| {
        CompileError::Invalid(format!("invalid JSON in COMPILED_PIPELINE_SPEC_PATCH: {e}"))
    })?;
    let Value::Object(patch) = patch else {
        return Err(CompileError::Invalid(
            "invalid JSON in COMPILED_PIPELINE_SPEC_PATCH: not an object".into(),
        ));
    };
    if patch.is_empty() {
        return Ok(());
    }
    let Some(Value::Object(spec)) = workflow.get_mut("spec") else {
        return Ok(());
    };
    let mut patched = spec.clone();
    merge_map(&mut patched, patch, "")
        .map_err(|e| CompileError::Invalid(format!("failed to apply workflow spec patch: {e}")))?;
    for (key, value) in patched {
        match spec.get_mut(&key) {
            Some(old) => overlay(old, value),
            None => {
                spec.insert(key, value);
            }
        }
    }
    Ok(())
}

/// Go's `json.Unmarshal` of `new` into the value `old` holds: objects keep the keys `new`
/// lacks, lists are decoded item by item into the old items and cut to `new`'s length,
/// anything else is replaced.
fn overlay(old: &mut Value, new: Value) {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in new {
                match old.get_mut(&key) {
                    Some(existing) => overlay(existing, value),
                    None => {
                        old.insert(key, value);
                    }
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            old.truncate(new.len());
            for (index, value) in new.into_iter().enumerate() {
                match old.get_mut(index) {
                    Some(existing) => overlay(existing, value),
                    None => old.push(value),
                }
            }
        }
        (old, new) => *old = new,
    }
}

fn merge_map(
    target: &mut Map<String, Value>,
    patch: Map<String, Value>,
    path: &str,
) -> Result<(), String> {
    for (key, value) in patch {
        let child_path = format!("{path}/{key}");
        match value {
            Value::Null => {
                target.remove(&key);
            }
            Value::Object(mut object) => {
                match object.remove("$patch").as_ref().and_then(Value::as_str) {
                    Some("delete") => {
                        target.remove(&key);
                    }
                    Some("replace") => {
                        target.insert(key, Value::Object(object));
                    }
                    Some(other) => {
                        return Err(format!("unknown patch directive {other:?} at {child_path}"));
                    }
                    None => match target.get_mut(&key) {
                        Some(Value::Object(existing)) => merge_map(existing, object, &child_path)?,
                        _ => {
                            let mut fresh = Map::new();
                            merge_map(&mut fresh, object, &child_path)?;
                            target.insert(key, Value::Object(fresh));
                        }
                    },
                }
            }
            Value::Array(items) => {
                let merge_key = MERGE_KEYS
                    .iter()
                    .find(|(list_path, _)| *list_path == child_path)
                    .map(|(_, merge_key)| *merge_key);
                match (merge_key, target.get_mut(&key)) {
                    (Some(merge_key), Some(Value::Array(existing))) => {
                        merge_list(existing, items, merge_key, &child_path)?;
                    }
                    _ => {
                        target.insert(key, Value::Array(items));
                    }
                }
            }
            scalar => {
                target.insert(key, scalar);
            }
        }
    }
    Ok(())
}

fn merge_list(
    existing: &mut Vec<Value>,
    items: Vec<Value>,
    merge_key: &str,
    path: &str,
) -> Result<(), String> {
    for item in items {
        let Value::Object(item) = item else {
            return Err(format!("{path}: items must be objects"));
        };
        let Some(key) = item.get(merge_key).cloned() else {
            return Err(format!(
                "{path}: item does not contain declared merge key {merge_key:?}"
            ));
        };
        let position = existing
            .iter()
            .position(|current| current.get(merge_key) == Some(&key));
        match position {
            Some(index) => {
                if let Value::Object(current) = &mut existing[index] {
                    let mut item = item;
                    match item.remove("$patch").as_ref().and_then(Value::as_str) {
                        Some("delete") => {
                            existing.remove(index);
                        }
                        Some("replace") => existing[index] = Value::Object(item),
                        _ => merge_map(current, item, path)?,
                    }
                }
            }
            None => existing.push(Value::Object(item)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_like_a_strategic_patch() {
        let mut workflow = json!({"spec": {
            "serviceAccountName": "pipeline-runner",
            "podMetadata": {"labels": {"a": "1"}},
            "templates": [{"name": "x", "inputs": {}}, {"name": "y"}],
            "nodeSelector": {"old": "v"}
        }});
        let patch = r#"{
            "serviceAccountName": "custom",
            "podMetadata": {"labels": {"b": "2"}},
            "templates": [{"name": "x", "activeDeadlineSeconds": 5}, {"name": "z"}],
            "nodeSelector": null,
            "tolerations": [{"key": "gpu", "operator": "Exists"}]
        }"#;
        apply(&mut workflow, patch).unwrap();
        assert_eq!(
            workflow,
            json!({"spec": {
                "serviceAccountName": "custom",
                "podMetadata": {"labels": {"a": "1", "b": "2"}},
                "templates": [{"name": "x", "inputs": {}, "activeDeadlineSeconds": 5}, {"name": "y"}, {"name": "z"}],
                // Deleted by the patch, kept by Go's decoding into the existing spec.
                "nodeSelector": {"old": "v"},
                "tolerations": [{"key": "gpu", "operator": "Exists"}]
            }})
        );
    }

    #[test]
    fn decoding_back_keeps_what_the_patch_deleted_and_merges_list_items_by_index() {
        let mut workflow = json!({"spec": {
            "templates": [{"name": "a", "x": 1}, {"name": "b", "y": 2}],
            "podMetadata": {"labels": {"a": "1"}}
        }});
        let patch = r#"{"templates": [{"name": "a", "$patch": "delete"}],
                        "podMetadata": {"labels": {"a": null}}}"#;
        apply(&mut workflow, patch).unwrap();
        // Item 0 of the patched list (b) decoded into old item 0 (a): b with a's `x`.
        assert_eq!(
            workflow,
            json!({"spec": {
                "templates": [{"name": "b", "x": 1, "y": 2}],
                "podMetadata": {"labels": {"a": "1"}}
            }})
        );
    }

    #[test]
    fn empty_patch_is_a_no_op_and_bad_json_an_error() {
        let mut workflow = json!({"spec": {"a": 1}});
        apply(&mut workflow, "{}").unwrap();
        assert_eq!(workflow, json!({"spec": {"a": 1}}));
        assert!(apply(&mut workflow, "{incomplete").is_err());
    }
}
