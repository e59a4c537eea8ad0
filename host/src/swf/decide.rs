//! One SWF decision, the same offline (`eval`) and in the controller: ask the policy whether to
//! rebuild, render, and diff. No I/O: the caller fetches before and writes after.

use serde_json::Value;

use super::diff::{Change, semantic_diff};
pub use super::outcome::SwfOutcome;
use super::owned::{drop_nulls, foreign_change};
use super::{STAMP_ANNOTATIONS, not_rebuildable_reason, read_stamps, unsupported_target_reason};
use crate::engine::{
    Decisions, Export, PolicyError, RebuildDecision, RebuildInput, RebuildPolicy, RenderContext,
    SwfCalls,
};

/// What the render context holds for every SWF in a pass.
#[derive(Clone, Debug)]
pub struct RenderTarget {
    pub rebuild_policy: RebuildPolicy,
    pub target_version: Option<String>,
    pub settings: String,
}

/// Decide for one live SWF. Under `disable` the render still runs as a dry run, so drift is
/// reported even though nothing is written.
pub fn decide(
    policy: &impl Decisions,
    live: &Value,
    target: &RenderTarget,
) -> Result<SwfOutcome, PolicyError> {
    decide_json(policy, live, &live.to_string(), target)
}

/// [`decide`] with `live` also as JSON text (`live_json`), which the policy is given as it is.
pub fn decide_json(
    policy: &impl Decisions,
    live: &Value,
    live_json: &str,
    target: &RenderTarget,
) -> Result<SwfOutcome, PolicyError> {
    let input = RebuildInput {
        policy: target.rebuild_policy,
        swf: live_json.to_owned(),
        target_version: target.target_version.clone(),
        stamps: read_stamps(live),
        settings: target.settings.clone(),
    };
    // Both calls in one instance where the policy can (see `Decisions::swf_calls`).
    let mut calls = policy.swf_calls();
    let calls = calls.as_mut();
    let reason = match calls.should_rebuild(&input)? {
        RebuildDecision::Rebuild(reason) => reason,
        RebuildDecision::Skip(reason) if unsupported_target_reason(&reason).is_some() => {
            let reason = unsupported_target_reason(&reason)
                .unwrap_or_default()
                .to_owned();
            return Ok(SwfOutcome::UnsupportedTarget { reason });
        }
        RebuildDecision::Skip(reason) if not_rebuildable_reason(&reason).is_some() => {
            let reason = not_rebuildable_reason(&reason)
                .unwrap_or_default()
                .to_owned();
            return Ok(SwfOutcome::NotRebuildable { reason });
        }
        RebuildDecision::Skip(reason) if target.rebuild_policy != RebuildPolicy::Disable => {
            return Ok(SwfOutcome::Skipped { reason });
        }
        RebuildDecision::Skip(reason) => {
            let (_, changes) = match render_and_diff(calls, live_json, live, target) {
                Err(error) => return as_unsupported_target(error),
                Ok(rendered) => rendered,
            };
            return Ok(if changes.is_empty() {
                SwfOutcome::Skipped { reason }
            } else {
                SwfOutcome::WouldRebuild { reason, changes }
            });
        }
    };
    let (desired, changes) = match render_and_diff(calls, live_json, live, target) {
        Err(error) => return as_unsupported_target(error),
        Ok(rendered) => rendered,
    };
    Ok(if changes.is_empty() {
        SwfOutcome::UpToDate { reason }
    } else {
        SwfOutcome::Rebuild {
            reason,
            desired,
            changes,
        }
    })
}

/// A render the policy refused for the target is that outcome; any other error stays one.
fn as_unsupported_target(error: PolicyError) -> Result<SwfOutcome, PolicyError> {
    match &error {
        PolicyError::Guest {
            export: Export::RenderSwf,
            message,
        } => match unsupported_target_reason(message) {
            Some(reason) => Ok(SwfOutcome::UnsupportedTarget {
                reason: reason.to_owned(),
            }),
            None => Err(error),
        },
        _ => Err(error),
    }
}

fn render_and_diff(
    calls: &mut dyn SwfCalls,
    live_json: &str,
    live: &Value,
    target: &RenderTarget,
) -> Result<(Value, Vec<Change>), PolicyError> {
    let context = RenderContext {
        target_version: target.target_version.clone(),
        settings: target.settings.clone(),
    };
    let rendered = calls.render_swf(live_json, &context)?;
    let bad_output = |reason: String| PolicyError::BadOutput {
        export: Export::RenderSwf,
        reason,
    };
    let mut desired: Value = serde_json::from_str(&rendered)
        .map_err(|e| bad_output(format!("the render is not JSON: {e}")))?;
    if !desired.is_object() {
        return Err(bad_output("the render is not a JSON object".into()));
    }
    drop_nulls(&mut desired);
    let changes = changes_to_write(live, &desired);
    if let Some(path) = foreign_change(&changes, &desired) {
        return Err(bad_output(format!(
            "the render changes {path}, which pipewarden does not own (it writes \
             spec.workflow, spec.serviceAccount and its own annotations); nothing is written"
        )));
    }
    Ok((desired, changes))
}

/// The changes a write would make, or none when only stamps differ: stamps are never written
/// alone, so an SWF whose spec is already the render (compiled by KFP's own reconcile for the
/// target, say) costs no write under any rebuild policy.
pub fn changes_to_write(live: &Value, desired: &Value) -> Vec<Change> {
    let changes = semantic_diff(live, desired);
    let only_stamps = changes.iter().all(|change| {
        STAMP_ANNOTATIONS
            .iter()
            .any(|key| change.path() == stamp_path(key))
    });
    if only_stamps { Vec::new() } else { changes }
}

/// The diff's path of an annotation.
fn stamp_path(key: &str) -> String {
    format!("metadata.annotations{}", super::diff::key_segment(key))
}
