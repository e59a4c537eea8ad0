//! What the controller does with one live SWF: [`decide`], and when the policy cannot render it,
//! a restore from the last good render. No I/O: the loop writes what this returns (a
//! [`SwfOutcome::Rebuild`] or [`SwfOutcome::Restore`]).

use serde_json::Value;

use super::LiveSwf;
use super::decide::changes_to_write;
use super::decide::{RenderTarget, SwfOutcome, decide, decide_json};
use super::last_good::{self, Restore};
use super::not_rebuildable_reason;
use super::owned::{drop_nulls, foreign_change};
use crate::engine::{Decisions, Export, PolicyError, PolicyErrorKind, RebuildPolicy};

/// The plan for `live`. Restores happen only on a guest error from `render-swf` (the policy
/// says it cannot render this object), never on a trap or timeout, which say more about the
/// policy than about the object. A render the policy marks not rebuildable restores a
/// recorded render too (the workflow was overwritten since); without one the SWF is left as
/// it is and reported as not rebuildable.
pub fn plan(policy: &impl Decisions, live: &Value, target: &RenderTarget) -> SwfOutcome {
    plan_json(policy, live, &live.to_string(), target)
}

/// [`plan`] for an SWF whose JSON text is at hand (the controller's watch store).
pub fn plan_live(policy: &impl Decisions, live: &LiveSwf, target: &RenderTarget) -> SwfOutcome {
    plan_json(policy, &live.value, &live.json, target)
}

fn plan_json(
    policy: &impl Decisions,
    live: &Value,
    live_json: &str,
    target: &RenderTarget,
) -> SwfOutcome {
    let (render_error, not_rebuildable) = match decide_json(policy, live, live_json, target) {
        Ok(outcome) => return recorded(outcome),
        Err(
            error @ PolicyError::Guest {
                export: Export::RenderSwf,
                ..
            },
        ) => {
            let reason = match &error {
                PolicyError::Guest { message, .. } => {
                    not_rebuildable_reason(message).map(str::to_owned)
                }
                _ => None,
            };
            let text = match &reason {
                Some(reason) => format!("policy render-swf cannot rebuild it: {reason}"),
                None => error.to_string(),
            };
            (text, reason)
        }
        Err(error) => return failed(error.to_string(), error.export(), error.kind()),
    };
    let candidate = match last_good::restore_candidate(live) {
        Restore::Candidate(candidate) => candidate,
        Restore::NoRecord if not_rebuildable.is_some() => {
            let reason = not_rebuildable.unwrap_or_default();
            return SwfOutcome::NotRebuildable { reason };
        }
        Restore::NoRecord => {
            let error = format!("{render_error}; no last good render to restore");
            return failed(error, Export::RenderSwf, GUEST_ERROR);
        }
        Restore::Unusable(why) => {
            return failed(
                format!("{render_error}; {why}"),
                Export::RenderSwf,
                GUEST_ERROR,
            );
        }
    };
    // The restored workflow goes through the policy like any other, so it is rendered for
    // today's target and settings.
    let desired = match decide(policy, &candidate, target) {
        Ok(SwfOutcome::Rebuild { desired, .. }) => desired,
        Ok(unsupported @ SwfOutcome::UnsupportedTarget { .. }) => return unsupported,
        Ok(_) => candidate,
        Err(error) => {
            let kind = error.kind();
            let error = format!("{render_error}; the last good render fails too: {error}");
            return failed(error, Export::RenderSwf, kind);
        }
    };
    let mut desired = desired;
    drop_nulls(&mut desired);
    let changes = changes_to_write(live, &desired);
    // A restore is held to what a render may change too.
    if let Some(path) = foreign_change(&changes, &desired) {
        let error = format!(
            "{render_error}; the last good render would change {path}, which pipewarden does \
             not own; nothing is written"
        );
        return failed(error, Export::RenderSwf, BAD_OUTPUT);
    }
    if target.rebuild_policy == RebuildPolicy::Disable {
        return SwfOutcome::WouldRestore {
            render_error,
            changes,
        };
    }
    last_good::record(&mut desired);
    SwfOutcome::Restore {
        reason: format!("{render_error}; restored from the last good render"),
        desired,
        changes,
    }
}

/// A rebuild records the render it writes as the last good one.
fn recorded(outcome: SwfOutcome) -> SwfOutcome {
    match outcome {
        SwfOutcome::Rebuild {
            reason,
            mut desired,
            changes,
        } => {
            last_good::record(&mut desired);
            SwfOutcome::Rebuild {
                reason,
                desired,
                changes,
            }
        }
        other => other,
    }
}

fn failed(error: String, export: Export, kind: PolicyErrorKind) -> SwfOutcome {
    SwfOutcome::Failed {
        error,
        export,
        kind,
    }
}

/// `PolicyError::kind` of a guest error.
const GUEST_ERROR: PolicyErrorKind = PolicyErrorKind::Guest;
/// `PolicyError::kind` of an answer the host refuses.
const BAD_OUTPUT: PolicyErrorKind = PolicyErrorKind::BadOutput;
