//! The Kubernetes platform spec: executor configs from the stored arguments, pipeline-level
//! settings from the workflow spec fields they were compiled into.

use serde_json::{Map, Value, json};

use crate::argo::object;

/// `{"platforms": {"kubernetes": ...}}`, or nothing when there is nothing to carry.
pub fn platform_spec(workflow: &Value, executors: Map<String, Value>) -> Option<Value> {
    let mut kubernetes = Map::new();
    if !executors.is_empty() {
        kubernetes.insert(
            "deploymentSpec".into(),
            object([("executors", Value::Object(executors))]),
        );
    }
    let config = pipeline_config(workflow.get("spec")?);
    if !config.is_empty() {
        kubernetes.insert("pipelineConfig".into(), Value::Object(config));
    }
    (!kubernetes.is_empty()).then(|| {
        object([(
            "platforms",
            object([("kubernetes", Value::Object(kubernetes))]),
        )])
    })
}

/// The `PipelineConfig` behind the workspace claim, TTL strategy and active deadline.
fn pipeline_config(spec: &Value) -> Map<String, Value> {
    let mut config = Map::new();
    let claim = spec
        .get("volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|claim| claim.pointer("/metadata/name") == Some(&json!("kfp-workspace")));
    if let Some(claim_spec) = claim.and_then(|c| c.get("spec")) {
        let mut patch = Map::new();
        for key in ["accessModes", "storageClassName"] {
            if let Some(value) = claim_spec.get(key) {
                patch.insert(key.into(), value.clone());
            }
        }
        let size = claim_spec
            .pointer("/resources/requests/storage")
            .cloned()
            .unwrap_or(Value::Null);
        config.insert(
            "workspace".into(),
            object([
                ("size", size),
                (
                    "kubernetes",
                    object([("pvcSpecPatch", Value::Object(patch))]),
                ),
            ]),
        );
    }
    for (argo_key, key) in [
        ("secondsAfterCompletion", "resourceTtlOnCompletion"),
        ("secondsAfterSuccess", "resourceTtlOnSuccess"),
        ("secondsAfterFailure", "resourceTtlOnFailure"),
    ] {
        if let Some(seconds) = spec.get("ttlStrategy").and_then(|t| t.get(argo_key)) {
            config.insert(key.into(), seconds.clone());
        }
    }
    if let Some(seconds) = spec.get("activeDeadlineSeconds") {
        config.insert("activeDeadlineSeconds".into(), seconds.clone());
    }
    config
}
