//! Pipeline-level Kubernetes config: the workspace volume claim, TTL and active deadline
//! (from Go's `argo.go`).

use serde_json::{Map, Value, json};

use crate::error::CompileError;
use crate::options::CompileOptions;
use crate::quantity::Quantity;
use crate::release::Feature;

const WORKSPACE_VOLUME: &str = "kfp-workspace";
/// The only keys a pipeline's `pvcSpecPatch` may set.
const PATCHABLE_PVC_FIELDS: [&str; 2] = ["accessModes", "storageClassName"];

/// Workflow spec fields from the platform spec's `pipelineConfig`.
pub fn spec_fields(
    pipeline_config: Option<&Value>,
    options: &CompileOptions,
) -> Result<Map<String, Value>, CompileError> {
    let mut fields = Map::new();
    let Some(config) = pipeline_config else {
        return Ok(fields);
    };
    if let Some(kubernetes) = config.get("workspace").and_then(|w| w.get("kubernetes")) {
        let workspace = &config["workspace"];
        let claim = workspace_claim(workspace, kubernetes, options)?;
        fields.insert("volumeClaimTemplates".into(), Value::Array(vec![claim]));
    }
    if !options.release.has(Feature::PipelineTimeouts) {
        return Ok(fields);
    }
    let positive = |key: &str| {
        config
            .get(key)
            .and_then(Value::as_i64)
            .filter(|seconds| *seconds > 0)
    };
    let mut ttl = Map::new();
    for (key, argo_key) in [
        ("resourceTtlOnCompletion", "secondsAfterCompletion"),
        ("resourceTtlOnSuccess", "secondsAfterSuccess"),
        ("resourceTtlOnFailure", "secondsAfterFailure"),
    ] {
        if let Some(seconds) = positive(key) {
            ttl.insert(argo_key.into(), json!(seconds));
        }
    }
    if !ttl.is_empty() {
        fields.insert("ttlStrategy".into(), Value::Object(ttl));
    }
    if let Some(seconds) = positive("activeDeadlineSeconds") {
        fields.insert("activeDeadlineSeconds".into(), json!(seconds));
    }
    Ok(fields)
}

/// The `kfp-workspace` claim: the install's default spec, the pipeline's patch, the size.
fn workspace_claim(
    workspace: &Value,
    kubernetes: &Value,
    options: &CompileOptions,
) -> Result<Value, CompileError> {
    let invalid = |message: String| CompileError::Invalid(message);
    let size = workspace.get("size").and_then(Value::as_str).unwrap_or("");
    if size.is_empty() {
        return Err(invalid(
            "workspace size is required but not specified".into(),
        ));
    }
    let mut spec = match &options.default_workspace {
        Some(Value::Object(default)) => default.clone(),
        _ => Map::new(),
    };
    if let Some(patch) = kubernetes.get("pvcSpecPatch").and_then(Value::as_object) {
        let unknown: Vec<&str> = patch
            .keys()
            .map(String::as_str)
            .filter(|key| !PATCHABLE_PVC_FIELDS.contains(key))
            .collect();
        if !unknown.is_empty() {
            return Err(invalid(format!(
                "unknown fields in PVC spec patch: [{}]",
                unknown.join(" ")
            )));
        }
        match patch.get("accessModes") {
            None | Some(Value::Null) => {}
            Some(Value::Array(modes)) if modes.iter().all(Value::is_string) => {
                if !modes.is_empty() {
                    spec.insert("accessModes".into(), Value::Array(modes.clone()));
                }
            }
            Some(_) => {
                return Err(invalid(
                    "pvcSpecPatch.accessModes must be a list of strings".into(),
                ));
            }
        }
        match patch.get("storageClassName") {
            None | Some(Value::Null) => {}
            Some(Value::String(class)) => {
                spec.insert("storageClassName".into(), Value::String(class.clone()));
            }
            Some(_) => {
                return Err(invalid(
                    "pvcSpecPatch.storageClassName must be a string".into(),
                ));
            }
        }
    }
    let release = options.release;
    let has_access_modes = spec
        .get("accessModes")
        .and_then(Value::as_array)
        .is_some_and(|modes| !modes.is_empty());
    if release.has(Feature::WorkspaceSpecChecks) && !has_access_modes {
        return Err(invalid(
            "workspace PVC spec must specify accessModes".into(),
        ));
    }
    let storage_class = spec.get("storageClassName").and_then(Value::as_str);
    if release.has(Feature::OptionalStorageClass) {
        if storage_class == Some("") {
            return Err(invalid(
                "workspace PVC spec storageClassName must be omitted or set to a non-empty value"
                    .into(),
            ));
        }
    } else if release.has(Feature::WorkspaceSpecChecks) && storage_class.is_none_or(str::is_empty) {
        return Err(invalid(
            "workspace PVC spec must specify storageClassName".into(),
        ));
    }
    let quantity = Quantity::parse(size)
        .map_err(|e| invalid(format!("invalid size value for workspace PVC: {e}")))?;
    if quantity.is_negative() {
        return Err(invalid(format!(
            "negative size value for workspace PVC: {size}"
        )));
    }
    let resources = crate::argo::object_field(&mut spec, "resources");
    let requests = crate::argo::object_field(resources, "requests");
    requests.insert("storage".into(), Value::String(quantity.canonical()));
    let mut metadata = json!({ "name": WORKSPACE_VOLUME });
    if !release.has(Feature::ArgoV4) {
        metadata["creationTimestamp"] = Value::Null;
    }
    Ok(crate::argo::object([
        ("metadata", metadata),
        ("spec", Value::Object(spec)),
        ("status", json!({})),
    ]))
}
