//! What `pipewarden plan` says about each SWF and each completed workflow: pure functions of
//! the controller's own decisions (`swf::plan`, the policy's eligibility, `notification::plan`),
//! so a plan row is what the controller would do, in words.

use serde::Serialize;

use crate::config::duration::show_duration;
use crate::engine::{Eligibility, RebuildPolicy};
use crate::exit::claim::Claim;
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::{Mark, Plan, Rules, plan_facts};
use crate::exit::outcome::Outcome;
use crate::swf::decide::SwfOutcome;
use crate::swf::fleet::SwfState;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SwfRow {
    pub swf: String,
    pub plan: String,
    /// The state `pipewarden_swfs` would count it under (`plan` never writes, so never
    /// `rebuilt`); None for an outcome that leaves no SWF (gone).
    pub state: Option<SwfState>,
    /// The fields a write would change.
    pub changes: Vec<String>,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
}

impl SwfRow {
    /// The SWF differs from what the controller would write.
    pub fn writes(&self) -> bool {
        matches!(self.plan.as_str(), "would rebuild" | "would restore")
    }

    /// It cannot be served as it is (see [`SwfState::is_problem`]).
    pub fn is_problem(&self) -> bool {
        self.state.is_some_and(SwfState::is_problem)
    }

    /// `namespace` of `namespace/name`.
    pub fn namespace(&self) -> &str {
        self.swf
            .split_once('/')
            .map_or("", |(namespace, _)| namespace)
    }
}

/// The row for one SWF the controller's `plan` decided. Under `disable` the render still ran
/// (a dry run), so the row says what an enforcing install would write.
pub fn swf_row(swf: String, outcome: &SwfOutcome) -> SwfRow {
    let plan = match outcome {
        SwfOutcome::Rebuild { .. } | SwfOutcome::WouldRebuild { .. } => "would rebuild",
        SwfOutcome::Restore { .. } | SwfOutcome::WouldRestore { .. } => "would restore",
        SwfOutcome::UpToDate { .. } => "up to date",
        SwfOutcome::Skipped { .. } => "skip",
        SwfOutcome::NotRebuildable { .. } => "not rebuildable",
        SwfOutcome::UnsupportedTarget { .. } => "unsupported target",
        SwfOutcome::UpstreamOwned { .. } => "upstream owned",
        SwfOutcome::NotAdopted { .. } => "not adopted",
        other => other.label(),
    };
    let changes = outcome.changes();
    SwfRow {
        swf,
        plan: plan.to_owned(),
        state: SwfState::planned(outcome),
        changes: changes.iter().map(|c| c.path().to_owned()).collect(),
        reason: outcome.reason(),
        diff: changes.iter().map(ToString::to_string).collect(),
    }
}

/// `15: metadata.annotations, spec.workflow`: how many fields change, under which parts.
pub fn changes_summary(paths: &[String]) -> String {
    if paths.is_empty() {
        return "-".into();
    }
    let mut parts: Vec<String> = paths
        .iter()
        .map(|path| {
            let head = path.split('[').next().unwrap_or(path);
            head.split('.').take(2).collect::<Vec<_>>().join(".")
        })
        .collect();
    parts.sort();
    parts.dedup();
    format!("{}: {}", paths.len(), parts.join(", "))
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WorkflowRow {
    pub workflow: String,
    pub phase: String,
    pub finished_at: String,
    pub plan: String,
    pub reason: String,
}

impl WorkflowRow {
    pub fn writes(&self) -> bool {
        self.plan == "would notify"
    }

    /// Given up, not confirmed, or the policy failed on it.
    pub fn is_problem(&self) -> bool {
        matches!(
            self.plan.as_str(),
            "already failed" | "not confirmed" | "policy error"
        )
    }
}

/// One completed workflow as it is listed now (never a stale copy): what the policy says of
/// it, then what the exit gate would do given its mark and claim.
pub fn workflow_row(
    facts: &WorkflowFacts,
    mark: Option<&Mark>,
    claim: Option<&Claim>,
    eligibility: &Eligibility,
    rules: &Rules,
) -> WorkflowRow {
    let (plan, reason) = match eligibility {
        Eligibility::Process => notification_plan(facts, mark, claim, rules),
        Eligibility::Skip(reason) | Eligibility::RejectStale(reason) => {
            ("not eligible", reason.clone())
        }
        Eligibility::Requeue(reason) => ("not eligible yet", reason.clone()),
    };
    WorkflowRow {
        workflow: format!("{}/{}", facts.namespace, facts.name),
        phase: facts.phase_text.clone(),
        finished_at: facts.finished_at.clone().unwrap_or_else(|| "-".into()),
        plan: plan.to_owned(),
        reason,
    }
}

fn notification_plan(
    facts: &WorkflowFacts,
    mark: Option<&Mark>,
    claim: Option<&Claim>,
    rules: &Rules,
) -> (&'static str, String) {
    match plan_facts(facts, facts, mark, claim, rules) {
        Plan::Claim => ("would notify", "complete, not notified yet".into()),
        Plan::TakeOver | Plan::Resend => (
            "would notify",
            "claimed, and the claim has expired: taken over".into(),
        ),
        Plan::ClaimedElsewhere { holder, until } => (
            "claimed elsewhere",
            format!("{holder} holds the claim until {until}"),
        ),
        Plan::AlreadySent => ("already notified", String::new()),
        Plan::AlreadySettled(Outcome::AlreadyFailed) => (
            "already failed",
            "given up earlier (an ExitNotificationFailed Event)".into(),
        ),
        Plan::AlreadySettled(Outcome::AlreadySkipped) => (
            "already skipped",
            "first seen after the catch-up window (an ExitNotificationSkipped Event)".into(),
        ),
        Plan::AlreadySettled(outcome) => ("already settled", outcome.label().into()),
        Plan::TooOld => (
            "skip",
            format!(
                "finished more than {} before now (--exit-catchup-window): it would be \
                 reported, not notified",
                show_duration(rules.catch_up)
            ),
        ),
        Plan::Unconfirmed(reason) => ("not confirmed", reason),
    }
}

/// What the plan was made under, said before any row.
#[derive(Debug, Serialize)]
pub struct Header {
    pub target_version: Option<String>,
    /// KFP's mode as the install says: `multi-user`, `single-user` or `mode unknown`.
    pub mode: &'static str,
    /// Who writes SWFs on this install: `pipewarden` or `kfp-api`.
    pub swf_owner: &'static str,
    /// What the SWF loop does on this install, in a sentence.
    pub swf_loop: String,
    pub rebuild_policy: &'static str,
    pub exit_mode: &'static str,
    /// `changed` or `problems` when rows are filtered (`--only`).
    pub only: Option<&'static str>,
    pub notes: Vec<String>,
}

impl Header {
    /// What the configured install would do with the rows that write.
    pub fn mode_note(rebuild_policy: RebuildPolicy, observe: bool) -> Option<String> {
        let swfs = rebuild_policy == RebuildPolicy::Disable;
        match (swfs, observe) {
            (false, false) => None,
            (true, true) => Some(
                "report-only as configured (rebuild policy disable, exit mode observe): the \
                 rows say what the enforce install would write"
                    .into(),
            ),
            (true, false) => Some(
                "rebuild policy disable: SWF rows say what a rebuild would write; none is \
                 written as configured"
                    .into(),
            ),
            (false, true) => {
                Some("exit mode observe: completions are recorded, not sent, as configured".into())
            }
        }
    }
}

#[cfg(test)]
#[path = "rows_tests.rs"]
mod tests;
