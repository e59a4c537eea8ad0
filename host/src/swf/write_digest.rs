//! The host's stamp on each SWF it rebuilds, `pipewarden.io/write-digest`: a digest of the
//! object as the write leaves it (name, namespace, labels, annotations, spec) and of what
//! rendered it (host version, policy digest, target version, settings).
//!
//! A live SWF whose stamp still matches is exactly what this policy rendered under the inputs
//! in force, and a render of a policy's own output changes nothing (the WIT contract), so under
//! `always` its render is spared: a restarted controller decides the SWFs it rebuilt without
//! rendering them again. Anything edited since (spec, labels, any annotation) misses the
//! stamp and is rendered as before. Status and bookkeeping metadata (resourceVersion,
//! managedFields, uid) are left out: a render must not read them.

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::patch::apply_merge_patch;

pub const WRITE_DIGEST_ANNOTATION: &str = "pipewarden.io/write-digest";

/// Digest of what rendered a write: the same for every SWF of a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderInputs(String);

impl RenderInputs {
    pub fn of(policy_digest: &str, target_version: Option<&str>, settings: &str) -> Self {
        let inputs = json!({
            "host": env!("CARGO_PKG_VERSION"),
            "policy": policy_digest,
            "target": target_version,
            "settings": settings,
        });
        RenderInputs(sha256_of(&inputs))
    }
}

/// Adds the stamp to `patch`, the write that turns `live` into the policy's render.
pub fn stamp(live: &Value, patch: &mut Value, inputs: &RenderInputs) {
    let mut after = live.clone();
    apply_merge_patch(&mut after, patch);
    let digest = write_digest(&after, inputs);
    if let Some(metadata) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(WRITE_DIGEST_ANNOTATION.into(), digest.into());
        }
    }
}

/// Whether `live` is still what a write stamped under `inputs` left.
pub fn unchanged_since_written(live: &Value, inputs: &RenderInputs) -> bool {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(WRITE_DIGEST_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|stamped| stamped == write_digest(live, inputs))
}

/// The parts of an SWF a render reads, borrowed: a digest of a large spec copies nothing.
#[derive(serde::Serialize)]
struct View<'a> {
    inputs: &'a str,
    name: Option<&'a Value>,
    namespace: Option<&'a Value>,
    labels: Option<&'a Value>,
    annotations: Map<String, Value>,
    spec: Option<&'a Value>,
}

/// The stamp's value for `swf` (the stamp itself left out) rendered under `inputs`.
fn write_digest(swf: &Value, inputs: &RenderInputs) -> String {
    let metadata = |key: &str| swf.get("metadata").and_then(|m| m.get(key));
    let mut annotations = metadata("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.remove(WRITE_DIGEST_ANNOTATION);
    sha256_of(&View {
        inputs: &inputs.0,
        name: metadata("name"),
        namespace: metadata("namespace"),
        labels: metadata("labels"),
        annotations,
        spec: swf.get("spec"),
    })
}

/// `sha256:<hex>` of the RFC 8785 canonical JSON of `value`: the same whatever order the API
/// server or the policy wrote keys in, and however it wrote numbers.
fn sha256_of(value: &impl serde::Serialize) -> String {
    let mut hasher = Sha256::new();
    serde_json_canonicalizer::to_writer(value, &mut hasher)
        .expect("JSON values always canonicalize");
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests;
