//! The last good render: `spec.workflow` as the controller last wrote it, kept in an annotation on
//! the SWF itself (gzip, then base64), written in the same merge patch as each rebuild.
//!
//! When the policy cannot render a live SWF (its workflow was overwritten, as in the upstream
//! reproduction of KFP #11296), the record is what the controller restores from. Only
//! `spec.workflow` is kept and restored: the rest of `spec` (`enabled`, the trigger) is KFP's to
//! change, and a restore must not undo an enable or disable made since the last rebuild.

use std::io::Read as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use flate2::read::GzDecoder;
use serde_json::Value;

use crate::compress::{Format, compress};

/// Annotation holding the last good render.
pub const LAST_GOOD_ANNOTATION: &str = "pipewarden.io/last-good-render";
/// Larger records are not kept: all annotations of an object share a 256 KiB budget.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// A record never inflates past this, whoever wrote it.
const MAX_DECODED_BYTES: usize = 8 << 20;

/// The gzip level of records, chosen by `cargo bench -p pipewarden --bench last_good` over
/// KFP 2.17.0's 112 own compiles: the lowest level at which every record fits (zlib's levels 1
/// to 3 trade matches for speed, and 5 of those records no longer fit), about half the time of
/// level 9 (docs/benchmarks.md).
pub const RECORD_LEVEL: u32 = 4;

/// The record of `workflow`, or None when it would not fit in [`MAX_RECORD_BYTES`].
pub fn encode(workflow: &Value) -> Option<String> {
    encode_at(workflow, RECORD_LEVEL)
}

/// [`encode`] at gzip level `level` (0-9).
pub fn encode_at(workflow: &Value, level: u32) -> Option<String> {
    let json = serde_json::to_vec(workflow).ok()?;
    let text = STANDARD.encode(compress(Format::Gzip, level, &json).ok()?);
    (text.len() <= MAX_RECORD_BYTES).then_some(text)
}

/// The `spec.workflow` a record holds.
pub fn decode(text: &str) -> Result<Value, String> {
    let compressed = STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    let mut json = Vec::new();
    GzDecoder::new(compressed.as_slice())
        .take(MAX_DECODED_BYTES as u64 + 1)
        .read_to_end(&mut json)
        .map_err(|e| format!("not gzip: {e}"))?;
    if json.len() > MAX_DECODED_BYTES {
        return Err(format!("inflates past {MAX_DECODED_BYTES} bytes"));
    }
    let workflow: Value = serde_json::from_slice(&json).map_err(|e| format!("not JSON: {e}"))?;
    if !workflow.is_object() {
        return Err("does not hold a spec.workflow object".into());
    }
    Ok(workflow)
}

/// Sets the record in `desired` (about to be written) to its `spec.workflow`. A workflow too
/// large to record removes an older record rather than leave one that no longer matches.
pub fn record(desired: &mut Value) {
    let Some(workflow) = desired.pointer("/spec/workflow") else {
        return;
    };
    let value = match encode(workflow) {
        Some(text) => Value::String(text),
        None => Value::Null,
    };
    let had_record = desired
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_GOOD_ANNOTATION))
        .is_some();
    if value.is_null() && !had_record {
        return;
    }
    if let Some(metadata) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(LAST_GOOD_ANNOTATION.to_owned(), value);
        }
    }
}

/// What restoring `live` from its record would give.
#[derive(Debug, PartialEq)]
pub enum Restore {
    /// `live` with `spec.workflow` taken from the record.
    Candidate(Value),
    /// The SWF carries no record.
    NoRecord,
    /// A record is there but cannot be used; the text says why.
    Unusable(String),
}

/// The restore candidate for `live`.
pub fn restore_candidate(live: &Value) -> Restore {
    let Some(text) = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_GOOD_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Restore::NoRecord;
    };
    let workflow = match decode(text) {
        Ok(workflow) => workflow,
        Err(why) => return Restore::Unusable(format!("the last good render is unreadable: {why}")),
    };
    if live.pointer("/spec/workflow") == Some(&workflow) {
        return Restore::Unusable("the live workflow already is the last good render".into());
    }
    let mut candidate = live.clone();
    match candidate.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => {
            spec.insert("workflow".to_owned(), workflow);
            Restore::Candidate(candidate)
        }
        None => Restore::Unusable("the live SWF has no spec object".into()),
    }
}

#[cfg(test)]
mod tests;
