//! Where each SWF stands now, in the words the gauge (`pipewarden_swfs{state}`), `plan`'s
//! summary and the policy reports share: one state per SWF, from the outcome of its last
//! decision. Pure.

use serde::{Deserialize, Serialize};

use super::outcome::SwfOutcome;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwfState {
    /// What the target's API server would write, or the policy chose not to rebuild it.
    UpToDate,
    /// It differs from its render and nothing writes it (rebuild policy `disable`, or `plan`).
    WouldRebuild,
    /// pipewarden wrote it in its last decision (a rebuild or a restore).
    Rebuilt,
    /// The policy cannot rebuild it (reference-only, v1, not compiled by KFP): left as it is.
    NotRebuildable,
    /// The loop writes nothing: the target, the settings or the install cannot be served.
    UnsupportedTarget,
    /// KFP's API server owns it (no embedded workflow on an API-owned install).
    UpstreamOwned,
    /// KFP's API server owns every schedule and this one still embeds a workflow: not fired.
    NotAdopted,
    /// The policy, the write or its retries failed; left as it is.
    Failed,
}

impl SwfState {
    pub const ALL: [SwfState; 8] = [
        SwfState::UpToDate,
        SwfState::WouldRebuild,
        SwfState::Rebuilt,
        SwfState::NotRebuildable,
        SwfState::UnsupportedTarget,
        SwfState::UpstreamOwned,
        SwfState::NotAdopted,
        SwfState::Failed,
    ];

    /// The `state` label.
    pub fn label(self) -> &'static str {
        match self {
            SwfState::UpToDate => "up-to-date",
            SwfState::WouldRebuild => "would-rebuild",
            SwfState::Rebuilt => "rebuilt",
            SwfState::NotRebuildable => "not-rebuildable",
            SwfState::UnsupportedTarget => "unsupported-target",
            SwfState::UpstreamOwned => "upstream-owned",
            SwfState::NotAdopted => "not-adopted",
            SwfState::Failed => "failed",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// The state an outcome of the loop leaves the SWF in; None when it is gone. A rebuild or
    /// a restore is reported once written, so it is `rebuilt`.
    pub fn after(outcome: &SwfOutcome) -> Option<SwfState> {
        Some(match outcome {
            SwfOutcome::Skipped { .. } | SwfOutcome::UpToDate { .. } => SwfState::UpToDate,
            SwfOutcome::WouldRebuild { .. } | SwfOutcome::WouldRestore { .. } => {
                SwfState::WouldRebuild
            }
            SwfOutcome::Rebuild { .. } | SwfOutcome::Restore { .. } => SwfState::Rebuilt,
            SwfOutcome::NotRebuildable { .. } => SwfState::NotRebuildable,
            SwfOutcome::UnsupportedTarget { .. } => SwfState::UnsupportedTarget,
            SwfOutcome::UpstreamOwned { .. } => SwfState::UpstreamOwned,
            SwfOutcome::NotAdopted { .. } => SwfState::NotAdopted,
            SwfOutcome::Failed { .. }
            | SwfOutcome::ConflictsExhausted { .. }
            | SwfOutcome::WriteLoop { .. }
            | SwfOutcome::WriteFailed { .. } => SwfState::Failed,
            SwfOutcome::Gone => return None,
        })
    }

    /// The state `plan` gives a decision: it writes nothing, so a rebuild or restore is one
    /// that would happen.
    pub fn planned(outcome: &SwfOutcome) -> Option<SwfState> {
        match SwfState::after(outcome)? {
            SwfState::Rebuilt => Some(SwfState::WouldRebuild),
            state => Some(state),
        }
    }

    /// Whether the SWF differs from what the target would write, or cannot be served: what a
    /// policy report lists, and `plan --only problems` (with `would-rebuild`, `--only changed`).
    pub fn is_finding(self) -> bool {
        !matches!(
            self,
            SwfState::UpToDate | SwfState::Rebuilt | SwfState::UpstreamOwned
        )
    }

    /// Cannot be served as it is: every finding but one a rebuild would fix.
    pub fn is_problem(self) -> bool {
        self.is_finding() && self != SwfState::WouldRebuild
    }
}

/// SWFs by state: the counts the gauge, `plan`'s summary and a report's summary show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally([u64; SwfState::ALL.len()]);

impl Tally {
    pub fn add(&mut self, state: SwfState) {
        self.0[state.index()] += 1;
    }

    pub fn get(&self, state: SwfState) -> u64 {
        self.0[state.index()]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    pub fn merge(&mut self, other: &Tally) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }

    /// `(label, count)` of every state, in [`SwfState::ALL`]'s order.
    pub fn counts(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        SwfState::ALL.iter().map(|s| (s.label(), self.get(*s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Export;

    #[test]
    fn every_outcome_has_one_state_and_plan_never_says_rebuilt() {
        let reason = || "r".to_owned();
        let rebuild = SwfOutcome::Rebuild {
            reason: reason(),
            desired: serde_json::json!({}),
            changes: Vec::new(),
        };
        assert_eq!(SwfState::after(&rebuild), Some(SwfState::Rebuilt));
        assert_eq!(SwfState::planned(&rebuild), Some(SwfState::WouldRebuild));
        let failed = SwfOutcome::Failed {
            error: "e".into(),
            export: Export::RenderSwf,
            kind: crate::engine::PolicyErrorKind::Trap,
        };
        assert_eq!(SwfState::after(&failed), Some(SwfState::Failed));
        let not_adopted = SwfOutcome::NotAdopted { reason: reason() };
        assert_eq!(SwfState::after(&not_adopted), Some(SwfState::NotAdopted));
        assert_eq!(SwfState::after(&SwfOutcome::Gone), None);
        let skipped = SwfOutcome::Skipped { reason: reason() };
        assert_eq!(SwfState::after(&skipped), Some(SwfState::UpToDate));
        let labels: Vec<&str> = SwfState::ALL.iter().map(|s| s.label()).collect();
        assert_eq!(
            labels,
            [
                "up-to-date",
                "would-rebuild",
                "rebuilt",
                "not-rebuildable",
                "unsupported-target",
                "upstream-owned",
                "not-adopted",
                "failed"
            ]
        );
    }

    #[test]
    fn findings_are_what_differs_or_cannot_be_served() {
        let findings: Vec<&str> = SwfState::ALL
            .iter()
            .filter(|s| s.is_finding())
            .map(|s| s.label())
            .collect();
        assert_eq!(
            findings,
            [
                "would-rebuild",
                "not-rebuildable",
                "unsupported-target",
                "not-adopted",
                "failed"
            ]
        );
        assert!(!SwfState::WouldRebuild.is_problem() && SwfState::Failed.is_problem());
        let mut tally = Tally::default();
        tally.add(SwfState::Failed);
        tally.add(SwfState::Failed);
        tally.add(SwfState::UpToDate);
        let mut all = Tally::default();
        all.merge(&tally);
        all.merge(&tally);
        assert_eq!((all.get(SwfState::Failed), all.total()), (4, 6));
    }
}
