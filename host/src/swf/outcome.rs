//! How one pass over one SWF ended: the one outcome type, from the policy's decision to the
//! metric label, the log line and the Event. The policy's part is decided by `decide` and
//! `plan`; the last four variants are the loop's, once a write was tried.

use std::time::Duration;

use serde_json::Value;

use super::diff::Change;
use crate::engine::{Export, PolicyErrorKind};

#[derive(Clone, Debug)]
pub enum SwfOutcome {
    /// The policy chose not to rebuild.
    Skipped { reason: String },
    /// The policy cannot rebuild this SWF (no pipeline to recompile) and there is no last good
    /// render to put back: it is left as it is.
    NotRebuildable { reason: String },
    /// The policy cannot compile for the target version (or the settings or install cannot
    /// be served): nothing is written for any SWF until that changes (no render, no restore).
    /// Said once for the loop, not per SWF.
    UnsupportedTarget { reason: String },
    /// KFP's API server owns every recurring run on this install and this SWF embeds no
    /// compiled workflow: it is the API's, nothing to do.
    UpstreamOwned { reason: String },
    /// KFP's API server owns every recurring run on this install, and this SWF still embeds a
    /// compiled workflow: KFP has not adopted it, so it does not fire. Reported, never written.
    NotAdopted { reason: String },
    /// Rebuilt, and the render equals the live object: nothing to write.
    UpToDate { reason: String },
    /// Rebuilt, and the render differs: write `desired` (spec and annotations, the last good
    /// render recorded in it).
    Rebuild {
        reason: String,
        desired: Value,
        changes: Vec<Change>,
    },
    /// The live workflow could not be rendered: write `desired`, the last good render put back.
    Restore {
        reason: String,
        desired: Value,
        changes: Vec<Change>,
    },
    /// Rebuild policy `disable`: the render differs, but nothing is written.
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
        kind: PolicyErrorKind,
    },
    /// Every write attempt met a newer version of the object.
    ConflictsExhausted { attempts: u32, resync: Duration },
    /// Written `writes` times in the last `window` already: another writer keeps changing it
    /// back, so it is left alone until the window passes.
    WriteLoop { writes: usize, window: Duration },
    /// Deleted meanwhile; never recreated.
    Gone,
    /// The API server refused the write; `why` is its own sentence.
    WriteFailed { why: String },
}

/// How an SWF decision counts: the `outcome` label of `pipewarden_swf_decisions`.
#[derive(Clone, Copy, Debug, Default, Hash, PartialEq, Eq)]
pub enum SwfDecision {
    #[default]
    Skip,
    NotRebuildable,
    UnsupportedTarget,
    UpstreamOwned,
    NotAdopted,
    UpToDate,
    Rebuild,
    Restored,
    WouldRebuild,
    WouldRestore,
    RenderFailed,
    PolicyError,
    ConflictsExhausted,
    WriteLoop,
    Gone,
    WriteFailed,
}

impl SwfDecision {
    pub const ALL: [SwfDecision; 16] = [
        SwfDecision::Skip,
        SwfDecision::NotRebuildable,
        SwfDecision::UnsupportedTarget,
        SwfDecision::UpstreamOwned,
        SwfDecision::NotAdopted,
        SwfDecision::UpToDate,
        SwfDecision::Rebuild,
        SwfDecision::Restored,
        SwfDecision::WouldRebuild,
        SwfDecision::WouldRestore,
        SwfDecision::RenderFailed,
        SwfDecision::PolicyError,
        SwfDecision::ConflictsExhausted,
        SwfDecision::WriteLoop,
        SwfDecision::Gone,
        SwfDecision::WriteFailed,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SwfDecision::Skip => "skip",
            SwfDecision::NotRebuildable => "not-rebuildable",
            SwfDecision::UnsupportedTarget => "unsupported-target",
            SwfDecision::UpstreamOwned => "upstream-owned",
            SwfDecision::NotAdopted => "not-adopted",
            SwfDecision::UpToDate => "up-to-date",
            SwfDecision::Rebuild => "rebuild",
            SwfDecision::Restored => "restored",
            SwfDecision::WouldRebuild => "would-rebuild",
            SwfDecision::WouldRestore => "would-restore",
            SwfDecision::RenderFailed => "render-failed",
            SwfDecision::PolicyError => "policy-error",
            SwfDecision::ConflictsExhausted => "conflicts-exhausted",
            SwfDecision::WriteLoop => "write-loop",
            SwfDecision::Gone => "gone",
            SwfDecision::WriteFailed => "write-failed",
        }
    }
}

/// The type of an outcome's Event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Normal,
    Warning,
}

impl SwfOutcome {
    /// The metric label (`pipewarden_swf_decisions{outcome}`), also in logs and tables.
    pub fn label(&self) -> &'static str {
        self.decision().label()
    }

    /// The decision this outcome counts as.
    pub fn decision(&self) -> SwfDecision {
        match self {
            SwfOutcome::Skipped { .. } => SwfDecision::Skip,
            SwfOutcome::NotRebuildable { .. } => SwfDecision::NotRebuildable,
            SwfOutcome::UnsupportedTarget { .. } => SwfDecision::UnsupportedTarget,
            SwfOutcome::UpstreamOwned { .. } => SwfDecision::UpstreamOwned,
            SwfOutcome::NotAdopted { .. } => SwfDecision::NotAdopted,
            SwfOutcome::UpToDate { .. } => SwfDecision::UpToDate,
            SwfOutcome::Rebuild { .. } => SwfDecision::Rebuild,
            SwfOutcome::Restore { .. } => SwfDecision::Restored,
            SwfOutcome::WouldRebuild { .. } => SwfDecision::WouldRebuild,
            SwfOutcome::WouldRestore { .. } => SwfDecision::WouldRestore,
            SwfOutcome::Failed {
                export: Export::RenderSwf,
                ..
            } => SwfDecision::RenderFailed,
            SwfOutcome::Failed { .. } => SwfDecision::PolicyError,
            SwfOutcome::ConflictsExhausted { .. } => SwfDecision::ConflictsExhausted,
            SwfOutcome::WriteLoop { .. } => SwfDecision::WriteLoop,
            SwfOutcome::Gone => SwfDecision::Gone,
            SwfOutcome::WriteFailed { .. } => SwfDecision::WriteFailed,
        }
    }

    /// Why, as the log line and the Event say it.
    pub fn reason(&self) -> String {
        match self {
            SwfOutcome::Skipped { reason }
            | SwfOutcome::UpstreamOwned { reason }
            | SwfOutcome::NotAdopted { reason }
            | SwfOutcome::UpToDate { reason }
            | SwfOutcome::Rebuild { reason, .. }
            | SwfOutcome::Restore { reason, .. }
            | SwfOutcome::WouldRebuild { reason, .. } => reason.clone(),
            SwfOutcome::NotRebuildable { reason } => {
                format!("{}; left as it is.", reason.trim_end_matches('.'))
            }
            SwfOutcome::UnsupportedTarget { reason } => {
                format!("{}; nothing is written.", reason.trim_end_matches('.'))
            }
            SwfOutcome::WouldRestore { render_error, .. } => format!(
                "{render_error}; rebuild policy is disable, so the last good render is not \
                 restored"
            ),
            SwfOutcome::Failed { error, .. } => format!("{error}; left as it is"),
            SwfOutcome::ConflictsExhausted { attempts, resync } => format!(
                "{attempts} writes in a row met a newer version of the object; trying again at \
                 the next resync (in {resync:?})"
            ),
            SwfOutcome::WriteLoop { writes, window } => format!(
                "written {writes} times in the last {window:?}: something else keeps changing \
                 it back; not written again until the window passes"
            ),
            SwfOutcome::Gone => "deleted meanwhile; never recreated".into(),
            SwfOutcome::WriteFailed { why } => format!("write refused: {why}"),
        }
    }

    /// What a write would change (or changed).
    pub fn changes(&self) -> &[Change] {
        match self {
            SwfOutcome::Rebuild { changes, .. }
            | SwfOutcome::Restore { changes, .. }
            | SwfOutcome::WouldRebuild { changes, .. }
            | SwfOutcome::WouldRestore { changes, .. } => changes,
            _ => &[],
        }
    }

    /// The object to write, when the outcome is a write.
    pub fn desired(&self) -> Option<&Value> {
        match self {
            SwfOutcome::Rebuild { desired, .. } | SwfOutcome::Restore { desired, .. } => {
                Some(desired)
            }
            _ => None,
        }
    }

    /// The Event published about it, if any: its type and reason.
    pub fn event(&self) -> Option<(Severity, &'static str)> {
        Some(match self {
            // An unsupported target is one report for the loop (`controller::swf::serving`).
            SwfOutcome::Skipped { .. }
            | SwfOutcome::UpToDate { .. }
            | SwfOutcome::Gone
            | SwfOutcome::UnsupportedTarget { .. }
            | SwfOutcome::UpstreamOwned { .. } => {
                return None;
            }
            SwfOutcome::NotRebuildable { .. } => (Severity::Normal, "NotRebuildable"),
            SwfOutcome::NotAdopted { .. } => (Severity::Warning, "NotAdopted"),
            SwfOutcome::Rebuild { .. } => (Severity::Normal, "Rebuilt"),
            SwfOutcome::Restore { .. } => (Severity::Warning, "RestoredFromLastGoodRender"),
            SwfOutcome::WouldRebuild { .. } => (Severity::Normal, "WouldRebuild"),
            SwfOutcome::WouldRestore { .. } => {
                (Severity::Warning, "WouldRestoreFromLastGoodRender")
            }
            SwfOutcome::Failed {
                export: Export::RenderSwf,
                ..
            } => (Severity::Warning, "RenderFailed"),
            SwfOutcome::Failed { .. } => (Severity::Warning, "PolicyFailed"),
            SwfOutcome::ConflictsExhausted { .. } => (Severity::Warning, "ConflictsExhausted"),
            SwfOutcome::WriteLoop { .. } => (Severity::Warning, "WriteLoop"),
            SwfOutcome::WriteFailed { .. } => (Severity::Warning, "WriteFailed"),
        })
    }

    /// The policy export and error kind, when the policy failed.
    pub fn policy_error(&self) -> Option<(Export, PolicyErrorKind)> {
        match self {
            SwfOutcome::Failed { export, kind, .. } => Some((*export, *kind)),
            _ => None,
        }
    }

    /// Said once per SWF and reason (its Event and log line); it stays so until the SWF or the
    /// target changes.
    pub fn said_once(&self) -> bool {
        matches!(
            self,
            SwfOutcome::NotRebuildable { .. }
                | SwfOutcome::UnsupportedTarget { .. }
                | SwfOutcome::NotAdopted { .. }
        )
    }

    /// Its Event comes at most once per SWF in a window, however often it recurs.
    pub fn held_back(&self) -> bool {
        self.policy_error().is_some() || matches!(self, SwfOutcome::WriteLoop { .. })
    }

    /// Nothing to do: logged at debug level, on every resync.
    pub fn is_quiet(&self) -> bool {
        matches!(
            self,
            SwfOutcome::Skipped { .. }
                | SwfOutcome::UpToDate { .. }
                | SwfOutcome::UpstreamOwned { .. }
                | SwfOutcome::UnsupportedTarget { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_render_failure_and_another_policy_failure_are_told_apart() {
        let failed = |export| SwfOutcome::Failed {
            error: "boom".into(),
            export,
            kind: PolicyErrorKind::Trap,
        };
        assert_eq!(failed(Export::RenderSwf).label(), "render-failed");
        assert_eq!(
            failed(Export::RenderSwf).event(),
            Some((Severity::Warning, "RenderFailed"))
        );
        assert_eq!(failed(Export::ShouldRebuild).label(), "policy-error");
        assert_eq!(
            failed(Export::ShouldRebuild).reason(),
            "boom; left as it is"
        );
        assert_eq!(
            failed(Export::ShouldRebuild).policy_error(),
            Some((Export::ShouldRebuild, PolicyErrorKind::Trap))
        );
    }

    #[test]
    fn nothing_to_do_has_no_event_and_says_why() {
        let skipped = SwfOutcome::Skipped {
            reason: "Rebuild policy is disable.".into(),
        };
        assert!(skipped.event().is_none() && skipped.is_quiet());
        let not = SwfOutcome::NotRebuildable {
            reason: "reference-only SWF.".into(),
        };
        assert_eq!(not.reason(), "reference-only SWF; left as it is.");
    }
}
