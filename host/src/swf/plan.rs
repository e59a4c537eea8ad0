//! What the controller does with one live SWF: [`decide`], and when the policy cannot render it,
//! a restore from the last good render. No I/O: the loop writes what this returns.

use serde_json::Value;

use super::decide::changes_to_write;
use super::decide::{RenderTarget, SwfOutcome, decide};
use super::diff::Change;
use super::last_good::{self, Restore};
use super::not_rebuildable_reason;
use crate::engine::{Export, Policy, PolicyError, RebuildPolicy};

#[derive(Clone, Debug)]
pub enum Plan {
    /// Write `desired` (spec and annotations, the last good render recorded in it).
    Write {
        kind: WriteKind,
        reason: String,
        desired: Value,
        changes: Vec<Change>,
    },
    /// Nothing to write; say so.
    Report(Report),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    Rebuild,
    /// The live workflow could not be rendered; this puts the last good render back.
    Restore,
}

#[derive(Clone, Debug)]
pub enum Report {
    Skipped {
        reason: String,
    },
    /// The policy cannot rebuild this SWF (no pipeline it can recompile) and there is no last
    /// good render to put back: it is left as it is.
    NotRebuildable {
        reason: String,
    },
    UpToDate {
        reason: String,
    },
    /// Rebuild policy `disable`: a write would change something.
    WouldRebuild {
        reason: String,
        changes: Vec<Change>,
    },
    /// Rebuild policy `disable`: the render failed and a last good render would be restored.
    WouldRestore {
        render_error: String,
        changes: Vec<Change>,
    },
    /// The policy gave no decision and nothing could be restored; the SWF is left as it is.
    Failed {
        error: String,
        /// The policy export that failed, e.g. `render-swf`.
        export: Export,
        /// The kind of failure, as in the `policy_errors` metric.
        kind: &'static str,
    },
}

impl Plan {
    /// Label for metrics and logs; a write is labelled by the loop once it lands.
    pub fn label(&self) -> &'static str {
        match self {
            Plan::Write {
                kind: WriteKind::Rebuild,
                ..
            } => "rebuild",
            Plan::Write {
                kind: WriteKind::Restore,
                ..
            } => "restored",
            Plan::Report(Report::Skipped { .. }) => "skip",
            Plan::Report(Report::NotRebuildable { .. }) => "not-rebuildable",
            Plan::Report(Report::UpToDate { .. }) => "up-to-date",
            Plan::Report(Report::WouldRebuild { .. }) => "would-rebuild",
            Plan::Report(Report::WouldRestore { .. }) => "would-restore",
            Plan::Report(Report::Failed {
                export: Export::RenderSwf,
                ..
            }) => "render-failed",
            Plan::Report(Report::Failed { .. }) => "policy-error",
        }
    }
}

/// The plan for `live`. Restores happen only on a guest error from `render-swf` (the policy
/// says it cannot render this object), never on a trap or timeout, which say more about the
/// policy than about the object. A render the policy marks not rebuildable restores a
/// recorded render too (the workflow was overwritten since); without one the SWF is left as
/// it is and reported as not rebuildable.
pub fn plan(policy: &Policy, live: &Value, target: &RenderTarget) -> Plan {
    let (render_error, not_rebuildable) = match decide(policy, live, target) {
        Ok(outcome) => return from_outcome(outcome),
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
            return Plan::Report(Report::NotRebuildable { reason });
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
        Ok(_) => candidate,
        Err(error) => {
            let kind = error.kind();
            let error = format!("{render_error}; the last good render fails too: {error}");
            return failed(error, Export::RenderSwf, kind);
        }
    };
    let changes = changes_to_write(live, &desired);
    if target.rebuild_policy == RebuildPolicy::Disable {
        return Plan::Report(Report::WouldRestore {
            render_error,
            changes,
        });
    }
    let mut desired = desired;
    last_good::record(&mut desired);
    Plan::Write {
        kind: WriteKind::Restore,
        reason: format!("{render_error}; restored from the last good render"),
        desired,
        changes,
    }
}

fn from_outcome(outcome: SwfOutcome) -> Plan {
    match outcome {
        SwfOutcome::Skipped { reason } => Plan::Report(Report::Skipped { reason }),
        SwfOutcome::NotRebuildable { reason } => Plan::Report(Report::NotRebuildable { reason }),
        SwfOutcome::UpToDate { reason } => Plan::Report(Report::UpToDate { reason }),
        SwfOutcome::WouldRebuild { reason, changes } => {
            Plan::Report(Report::WouldRebuild { reason, changes })
        }
        SwfOutcome::Rebuild {
            reason,
            mut desired,
            changes,
        } => {
            last_good::record(&mut desired);
            Plan::Write {
                kind: WriteKind::Rebuild,
                reason,
                desired,
                changes,
            }
        }
    }
}

fn failed(error: String, export: Export, kind: &'static str) -> Plan {
    Plan::Report(Report::Failed {
        error,
        export,
        kind,
    })
}

/// `PolicyError::kind` of a guest error.
const GUEST_ERROR: &str = "guest_error";
