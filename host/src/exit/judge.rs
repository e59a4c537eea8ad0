//! One exit-gate decision, the same offline (`eval`) and in the controller: read the tombstone,
//! ask the policy, record what was seen. No I/O; a side effect is the caller's, and only when
//! `act` is true.

use serde_json::Value;

use super::TombstoneCache;
use super::event::WorkflowFacts;
use super::tombstone::{Entry, to_policy_tombstone};
use crate::engine::{Eligibility, EventKind, Policy, PolicyError, Tombstone, WorkflowEvent};

#[derive(Debug)]
pub struct Assessment {
    pub facts: WorkflowFacts,
    /// The tombstone the policy was shown.
    pub tombstone: Option<Entry>,
    pub eligibility: Eligibility,
    /// Exit processing may run: the policy said process and the workflow is complete (phase
    /// Succeeded, Failed or Error with a finishedAt), deleted or not: a DELETE event carries
    /// the final object, and a completion nobody notified yet is notified from it.
    pub act: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("workflow has no metadata.name or metadata.uid")]
    Malformed,
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

impl GateError {
    pub fn kind(&self) -> &'static str {
        match self {
            GateError::Malformed => "malformed",
            GateError::Policy(e) => e.kind(),
        }
    }
}

pub fn assess(
    policy: &Policy,
    tombstones: &TombstoneCache,
    kind: EventKind,
    workflow: &Value,
) -> Result<Assessment, GateError> {
    assess_with(
        |event, tombstone| policy.exit_eligibility(event, tombstone),
        tombstones,
        kind,
        workflow,
    )
}

/// [`assess`] with the decision supplied by the caller: a kept instance (benchmarks) or the
/// policy's logic compiled natively (tests comparing it with the component).
pub fn assess_with(
    decide: impl FnOnce(&WorkflowEvent, Option<&Tombstone>) -> Result<Eligibility, PolicyError>,
    tombstones: &TombstoneCache,
    kind: EventKind,
    workflow: &Value,
) -> Result<Assessment, GateError> {
    let facts = WorkflowFacts::read(workflow).ok_or(GateError::Malformed)?;
    let verdict = judge(decide, tombstones, kind, &facts, workflow)?;
    Ok(Assessment {
        facts,
        tombstone: verdict.tombstone,
        eligibility: verdict.eligibility,
        act: verdict.act,
    })
}

/// What [`judge`] decided about one sighting of a workflow already read.
#[derive(Debug)]
pub struct Verdict {
    /// The tombstone the policy was shown.
    pub tombstone: Option<Entry>,
    pub eligibility: Eligibility,
    /// As [`Assessment::act`].
    pub act: bool,
}

/// The decision on a workflow whose facts were read where it entered: the tombstone shown to
/// the policy, then raised by what the policy let through.
pub fn judge(
    decide: impl FnOnce(&WorkflowEvent, Option<&Tombstone>) -> Result<Eligibility, PolicyError>,
    tombstones: &TombstoneCache,
    kind: EventKind,
    facts: &WorkflowFacts,
    workflow: &Value,
) -> Result<Verdict, PolicyError> {
    judge_event(
        decide,
        tombstones,
        kind,
        facts,
        &facts.event(kind, workflow),
    )
}

/// [`judge`] on the event already built for the policy (what the controller keeps of a
/// workflow is the event, not the object).
pub fn judge_event(
    decide: impl FnOnce(&WorkflowEvent, Option<&Tombstone>) -> Result<Eligibility, PolicyError>,
    tombstones: &TombstoneCache,
    kind: EventKind,
    facts: &WorkflowFacts,
    event: &WorkflowEvent,
) -> Result<Verdict, PolicyError> {
    let tombstone = tombstones.get(&facts.uid);
    let now = tombstones.now();
    let shown = tombstone
        .as_ref()
        .map(|entry| to_policy_tombstone(entry, now));
    let eligibility = decide(event, shown.as_ref())?;
    // A rejected or requeued copy is older than what we know: it must not move the tombstone.
    if matches!(eligibility, Eligibility::Process | Eligibility::Skip(_)) {
        tombstones.observe(&facts.uid, &facts.sighting(kind));
    }
    let act = matches!(eligibility, Eligibility::Process) && facts.complete;
    Ok(Verdict {
        tombstone,
        eligibility,
        act,
    })
}

/// The policy's decision on a listed workflow (the live state, never a stale copy), without the
/// tombstones: neither consulted (one at the same resourceVersion would reject it) nor raised.
/// For a replica catching up on completions it saw while it could not act.
pub fn assess_listed(
    policy: &impl crate::engine::Decisions,
    facts: &WorkflowFacts,
    workflow: &Value,
) -> Result<Eligibility, PolicyError> {
    policy.exit_eligibility(&facts.event(EventKind::Relisted, workflow), None)
}

/// Label and reason of an eligibility, for tables, logs and metrics.
pub fn eligibility_parts(eligibility: &Eligibility) -> (&'static str, &str) {
    match eligibility {
        Eligibility::Process => ("process", ""),
        Eligibility::Skip(reason) => ("skip", reason),
        Eligibility::RejectStale(reason) => ("reject-stale", reason),
        Eligibility::Requeue(reason) => ("requeue", reason),
    }
}
