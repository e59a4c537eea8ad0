//! ScheduledWorkflow logic that needs no cluster: stamps, the rebuild policy, diff and patch,
//! the plan for one SWF and its last good render.

pub mod api_server_env;
pub mod decide;
pub mod diff;
pub mod fleet;
pub mod healthz;
pub mod install;
pub mod last_good;
pub mod outcome;
pub mod owned;
pub mod patch;
pub mod plan;
pub mod serving;
pub mod write_digest;

use serde_json::Value;

use crate::engine::{RebuildPolicy, Stamps};

/// The KFP-side stamp: the version an SWF was last rendered for.
pub const VERSION_ANNOTATION: &str = "pipelines.kubeflow.org/version";
/// Digest of the spec the last render produced; a mismatch means the spec was edited since.
pub const RENDER_HASH_ANNOTATION: &str = "pipewarden.io/render-hash";
/// Digest of the settings the last render used.
pub const SETTINGS_HASH_ANNOTATION: &str = "pipewarden.io/settings-hash";
/// The annotations a render stamps. A write never carries them alone: an SWF whose spec is
/// already what the render makes (e.g. compiled by KFP's own reconcile) is up to date.
pub const STAMP_ANNOTATIONS: [&str; 3] = [
    VERSION_ANNOTATION,
    RENDER_HASH_ANNOTATION,
    SETTINGS_HASH_ANNOTATION,
];
/// How a policy marks an SWF it cannot rebuild (a `should-rebuild` skip reason or a
/// `render-swf` error starting with it): a v1 pipeline, a reference-only SWF, a workflow KFP
/// did not compile. The WIT contract stays as it is; the SDK writes the same prefix.
pub const NOT_REBUILDABLE_PREFIX: &str = "not-rebuildable: ";

/// The reason a policy gave for not being able to rebuild, when `text` is so marked.
pub fn not_rebuildable_reason(text: &str) -> Option<&str> {
    text.strip_prefix(NOT_REBUILDABLE_PREFIX)
}

/// How a policy says it cannot compile for the target version (a release it does not support,
/// or none known): a `should-rebuild` skip reason or a `render-swf` error starting with it.
/// Nothing is written for such a target; the SDK writes the same prefix.
pub const UNSUPPORTED_TARGET_PREFIX: &str = "unsupported-target: ";

/// The reason a policy gave for not compiling for the target, when `text` is so marked.
pub fn unsupported_target_reason(text: &str) -> Option<&str> {
    text.strip_prefix(UNSUPPORTED_TARGET_PREFIX)
}

/// Env var an operator sets to choose the rebuild policy.
pub const REBUILD_POLICY_ENV: &str = "ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY";

/// A live SWF as one decision reads it: the JSON text the policy is given, as it came (not
/// written again from the tree), and the tree the host's own checks read.
pub struct LiveSwf {
    pub json: String,
    pub value: Value,
}

impl LiveSwf {
    pub fn parse(json: String) -> Result<Self, serde_json::Error> {
        let value = serde_json::from_str(&json)?;
        Ok(LiveSwf { json, value })
    }

    pub fn from_value(value: Value) -> Self {
        LiveSwf {
            json: value.to_string(),
            value,
        }
    }
}

/// The stamps the host reads from an SWF's annotations.
pub fn read_stamps(swf: &Value) -> Stamps {
    let annotation = |key: &str| {
        swf.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    Stamps {
        version: annotation(VERSION_ANNOTATION),
        render_hash: annotation(RENDER_HASH_ANNOTATION),
    }
}

/// Parses `disable | always | on-version-change`; the error lists the valid values.
pub fn parse_rebuild_policy(value: &str) -> Result<RebuildPolicy, String> {
    match value.trim() {
        "disable" => Ok(RebuildPolicy::Disable),
        "always" => Ok(RebuildPolicy::Always),
        "on-version-change" => Ok(RebuildPolicy::OnVersionChange),
        other => Err(format!(
            "unknown rebuild policy {other:?}; valid values are: disable, always, on-version-change"
        )),
    }
}

pub fn rebuild_policy_name(policy: RebuildPolicy) -> &'static str {
    match policy {
        RebuildPolicy::Disable => "disable",
        RebuildPolicy::Always => "always",
        RebuildPolicy::OnVersionChange => "on-version-change",
    }
}

/// `namespace/name` of an object, for logs and tables.
pub fn object_key(object: &Value) -> String {
    let field = |key: &str| {
        object
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
            .unwrap_or("?")
    };
    format!("{}/{}", field("namespace"), field("name"))
}

#[cfg(test)]
mod owned_tests;
