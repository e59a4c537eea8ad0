//! The workflow KFP's ScheduledWorkflow controller creates for one run of an SWF, built the way
//! KFP 2.17.0 builds it (`backend/src/crd/controller/scheduledworkflow/util/scheduled_workflow.go`,
//! `NewWorkflow`, and `backend/src/common/util`): `spec.workflow.spec` decoded into Argo's
//! Workflow type (a JSON string holding a whole Workflow, or a bare spec; an object is a bare spec),
//! named `<swf>-<index>-<fnv32a("<swf>-<index>")>`, `spec.workflow.parameters` (formatted:
//! `[[RunUUID]]`, `[[Index]]`, ...) overriding the arguments of the same name, the canonical
//! labels and the run id (also on `spec.podMetadata`), `{{workflow.uid}}` replaced by the run id,
//! and a controller ownerReference to the SWF.
//!
//! KFP decodes into Argo's Go types and encodes again: fields Argo's types do not define are
//! dropped. [`Decoder`] does the same with the Workflow schema of Argo's full CRD, and says what it
//! dropped.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result, bail};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use serde_json::{Map, Value, json};

/// The Workflow schema Argo's full CRD carries (the fields of its Go types).
pub struct Decoder {
    spec_schema: Value,
}

impl Decoder {
    /// Reads the full Workflow CRD `tests/control-plane/build.sh` copies beside the binaries.
    pub fn load() -> Result<Self> {
        let path = pipewarden_tests::argo::built(pipewarden_tests::argo::CRDS_DIR)?
            .join("full/argoproj.io_workflows.yaml");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let crd: Value = serde_yaml::from_str(&text)?;
        let spec_schema =
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone();
        if !spec_schema.is_object() {
            bail!("no spec schema in {}", path.display());
        }
        Ok(Decoder { spec_schema })
    }

    /// `spec` as Argo's WorkflowSpec type keeps it, and the paths of the fields it dropped.
    pub fn decode_spec(&self, spec: &Value) -> (Value, Vec<String>) {
        let mut dropped = Vec::new();
        let kept = prune(spec, &self.spec_schema, "spec", &mut dropped);
        (kept, dropped)
    }
}

fn prune(value: &Value, schema: &Value, path: &str, dropped: &mut Vec<String>) -> Value {
    if schema["x-kubernetes-preserve-unknown-fields"] == json!(true) {
        return value.clone();
    }
    match value {
        Value::Object(fields) => {
            if let Some(properties) = schema["properties"].as_object() {
                let mut kept = Map::new();
                for (key, field) in fields {
                    match properties.get(key) {
                        Some(field_schema) => {
                            let child = format!("{path}.{key}");
                            kept.insert(key.clone(), prune(field, field_schema, &child, dropped));
                        }
                        None => dropped.push(format!("{path}.{key}")),
                    }
                }
                Value::Object(kept)
            } else if schema["additionalProperties"].is_object() {
                let inner = &schema["additionalProperties"];
                Value::Object(
                    fields
                        .iter()
                        .map(|(k, v)| (k.clone(), prune(v, inner, &format!("{path}.{k}"), dropped)))
                        .collect(),
                )
            } else {
                value.clone()
            }
        }
        Value::Array(items) if schema["items"].is_object() => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| prune(item, &schema["items"], &format!("{path}[{i}]"), dropped))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// One run of an SWF, as KFP's controller would submit it.
pub struct Run {
    pub workflow: DynamicObject,
    pub run_id: String,
    /// Fields of `spec.workflow.spec` Argo's types do not define (KFP drops them).
    pub dropped: Vec<String>,
}

/// FNV-1a, 32 bits (Go's `hash/fnv` `New32a`).
pub fn fnv32a(text: &str) -> u32 {
    text.bytes().fold(2_166_136_261_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(16_777_619)
    })
}

/// A random version-4 UUID, as KFP's run ids are.
pub fn run_uuid() -> Result<String> {
    let hex = pipewarden_tests::credentials::random_token()?;
    let variant = ["8", "9", "a", "b"][usize::from(hex.as_bytes()[16] % 4)];
    Ok(format!(
        "{}-{}-4{}-{}{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        variant,
        &hex[17..20],
        &hex[20..32]
    ))
}

/// KFP's SWF parameter formatter for the placeholders a recurring run's parameters may hold.
fn format_parameter(value: &str, run_id: &str, scheduled: i64, now: i64, index: i64) -> String {
    let time = |epoch: i64| {
        k8s_openapi::jiff::Timestamp::from_second(epoch)
            .map(|t| t.strftime("%Y%m%d%H%M%S").to_string())
            .unwrap_or_default()
    };
    value
        .replace("[[RunUUID]]", run_id)
        .replace("[[ScheduledTime]]", &time(scheduled))
        .replace("[[CurrentTime]]", &time(now))
        .replace("[[Index]]", &index.to_string())
}

/// The workflow of run `index` of `swf`, scheduled at `scheduled` (epoch seconds), submitted `now`.
pub fn instantiate(
    decoder: &Decoder,
    swf: &DynamicObject,
    index: i64,
    scheduled: i64,
    now: i64,
) -> Result<Run> {
    let swf_name = swf.name_any();
    let namespace = swf.namespace().context("an SWF is namespaced")?;
    let embedded = &swf.data["spec"]["workflow"]["spec"];
    // ScheduleSpecToExecutionSpec / NewWorkflowFromScheduleWorkflowSpecBytesJSON.
    let mut workflow = match embedded {
        Value::Null => bail!("{swf_name}: reference-only; KFP's API server compiles it per run"),
        Value::String(text) => {
            let parsed: Value = serde_json::from_str(text)
                .with_context(|| format!("{swf_name}: spec.workflow.spec is not JSON"))?;
            let whole = parsed["spec"]["entrypoint"]
                .as_str()
                .is_some_and(|e| !e.is_empty());
            if whole {
                parsed
            } else {
                json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "spec": parsed})
            }
        }
        object => json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "spec": object}),
    };
    let (spec, dropped) = decoder.decode_spec(&workflow["spec"]);
    workflow["spec"] = spec;
    if let Some(fields) = workflow.as_object_mut() {
        fields.remove("status");
    }
    let run_id = run_uuid()?;
    // SetExecutionName.
    let resource_id = format!("{swf_name}-{index}");
    let name = format!("{resource_id}-{}", fnv32a(&resource_id));
    let metadata = workflow["metadata"].as_object_mut().map(std::mem::take);
    let mut metadata = metadata.unwrap_or_default();
    metadata.remove("generateName");
    metadata.insert("name".into(), json!(name));
    // The API server embeds the SWF's own namespace; the fixtures were moved to test namespaces.
    metadata.insert("namespace".into(), json!(namespace));
    workflow["metadata"] = Value::Object(metadata);
    // OverrideParameters with the formatted SWF parameters.
    let overrides: BTreeMap<String, String> = swf.data["spec"]["workflow"]["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let value = p["value"].as_str().unwrap_or_default();
            Some((
                p["name"].as_str()?.to_owned(),
                format_parameter(value, &run_id, scheduled, now, index),
            ))
        })
        .collect();
    let parameters: Vec<Value> = workflow["spec"]["arguments"]["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let name = p["name"].as_str().unwrap_or_default();
            match overrides.get(name).cloned().or_else(|| {
                p.get("value")
                    .filter(|v| !v.is_null())
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            }) {
                Some(value) => json!({"name": name, "value": value}),
                None => json!({"name": name}),
            }
        })
        .collect();
    if parameters.is_empty() {
        if let Some(arguments) = workflow["spec"]["arguments"].as_object_mut() {
            arguments.remove("parameters");
        }
    } else {
        workflow["spec"]["arguments"]["parameters"] = json!(parameters);
    }
    // SetCannonicalLabels, the run id label on the workflow and its pods.
    let labels = [
        (
            "scheduledworkflows.kubeflow.org/scheduledWorkflowName",
            swf_name.clone(),
        ),
        (
            "scheduledworkflows.kubeflow.org/workflowEpoch",
            scheduled.to_string(),
        ),
        (
            "scheduledworkflows.kubeflow.org/workflowIndex",
            index.to_string(),
        ),
        (
            "scheduledworkflows.kubeflow.org/isOwnedByScheduledWorkflow",
            "true".into(),
        ),
        ("pipeline/runid", run_id.clone()),
    ];
    for (key, value) in labels {
        workflow["metadata"]["labels"][key] = json!(value);
    }
    workflow["spec"]["podMetadata"]["labels"]["pipeline/runid"] = json!(run_id);
    // ReplaceUID.
    let text = serde_json::to_string(&workflow)?.replace("{{workflow.uid}}", &run_id);
    let mut workflow: Value = serde_json::from_str(&text)?;
    // SetOwnerReferences: the SWF as controller.
    workflow["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "ScheduledWorkflow",
        "name": swf_name,
        "uid": swf.uid().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    Ok(Run {
        workflow: serde_json::from_value(workflow)?,
        run_id,
        dropped,
    })
}
