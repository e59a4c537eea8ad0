//! The chart's objects beside kustomize's: each normalisation that makes them comparable is a
//! named step, and what differs after them is reported per object and field.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};
use base64::Engine as _;
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use serde_json::Value;

use super::kind_of;

/// Labels only Helm sets: the release, the tool and the chart version.
pub const HELM_LABELS: [&str; 3] = [
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
];

/// What is done to both sides before they are compared, each step named.
pub const NORMALISATIONS: [&str; 4] = [
    "Helm's own labels (HELM_LABELS) are dropped wherever labels are: metadata, selectors, pod \
     templates, topology spread",
    "binaryData is compared decoded: kustomize wraps the base64 at 70 columns, Helm does not",
    "settings.json is compared as JSON: kustomize ships the file ({} and a newline), the chart \
     writes the `settings.file` value",
    "the Deployment's PIPEWARDEN_SETTINGS_SHA256 is compared as whether it is the sha256 of the \
     settings.json bytes the same render ships (the bytes differ, as above)",
];

/// `(kind, name)` -> the object as JSON, normalised by [`NORMALISATIONS`].
pub fn normalised(objects: &[DynamicObject]) -> Result<BTreeMap<(String, String), Value>> {
    let settings_pin = objects
        .iter()
        .find_map(|o| {
            o.data
                .pointer("/data/settings.json")
                .and_then(Value::as_str)
        })
        .map(|text| format!("sha256:{}", sha(text.as_bytes())));
    let mut out = BTreeMap::new();
    for object in objects {
        let mut value = serde_json::to_value(object)?;
        drop_helm_labels(&mut value);
        if let Some(env) = value
            .pointer_mut("/spec/template/spec/containers/0/env")
            .and_then(Value::as_array_mut)
        {
            for var in env
                .iter_mut()
                .filter(|var| var["name"] == "PIPEWARDEN_SETTINGS_SHA256")
            {
                if var["value"].as_str() == settings_pin.as_deref() {
                    var["value"] = "the sha256 of this render's settings.json".into();
                }
            }
        }
        if let Some(binary) = value.get_mut("binaryData").and_then(Value::as_object_mut) {
            for (key, data) in binary.iter_mut() {
                let text: String = data
                    .as_str()
                    .with_context(|| format!("binaryData {key}"))?
                    .split_whitespace()
                    .collect();
                let bytes = base64::engine::general_purpose::STANDARD.decode(text)?;
                *data = Value::String(format!("{} bytes, sha256 {}", bytes.len(), sha(&bytes)));
            }
        }
        if let Some(settings) = value.pointer_mut("/data/settings.json") {
            let text = settings.as_str().context("settings.json")?;
            *settings = serde_json::from_str(text).context("settings.json")?;
        }
        out.insert((kind_of(object).to_owned(), object.name_any()), value);
    }
    Ok(out)
}

fn sha(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Every map under a `labels` or `matchLabels` key loses [`HELM_LABELS`].
fn drop_helm_labels(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if let ("labels" | "matchLabels", Value::Object(labels)) =
                    (key.as_str(), &mut *child)
                {
                    labels.retain(|label, _| !HELM_LABELS.contains(&label.as_str()));
                }
                drop_helm_labels(child);
            }
            // A Service selects by a map with no key of its own.
            if let Some(Value::Object(selector)) = map.get_mut("selector") {
                selector.retain(|label, _| !HELM_LABELS.contains(&label.as_str()));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_helm_labels),
        _ => {}
    }
}

/// The differences between two normalised sets: objects on one side only, then each field
/// (as a JSON pointer) whose values differ.
pub fn differences(
    kustomize: &BTreeMap<(String, String), Value>,
    chart: &BTreeMap<(String, String), Value>,
) -> Vec<String> {
    let mut found = Vec::new();
    for key in kustomize.keys().filter(|k| !chart.contains_key(*k)) {
        found.push(format!("{} {}: only in kustomize", key.0, key.1));
    }
    for key in chart.keys().filter(|k| !kustomize.contains_key(*k)) {
        found.push(format!("{} {}: only in the chart", key.0, key.1));
    }
    for (key, left) in kustomize {
        if let Some(right) = chart.get(key) {
            let mut fields = Vec::new();
            diff(left, right, String::new(), &mut fields);
            found.extend(
                fields
                    .into_iter()
                    .map(|field| format!("{} {}: {field}", key.0, key.1)),
            );
        }
    }
    found
}

fn diff(left: &Value, right: &Value, at: String, found: &mut Vec<String>) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
            for key in keys {
                let at = format!("{at}/{key}");
                match (l.get(key), r.get(key)) {
                    (Some(a), Some(b)) => diff(a, b, at, found),
                    (a, b) => found.push(format!("{at}: kustomize {a:?}, chart {b:?}")),
                }
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (i, (a, b)) in l.iter().zip(r).enumerate() {
                diff(a, b, format!("{at}/{i}"), found);
            }
        }
        (a, b) if a != b => found.push(format!("{at}: kustomize {a}, chart {b}")),
        _ => {}
    }
}
