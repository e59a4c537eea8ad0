//! A workflow running again after a completion the gate marked (`argo retry`): its run is
//! counted on the workflow ([`RUN_ANNOTATION`]), so the next completion has a key of its own even
//! if it ends within the same second, with the same times and phase, as the one before (Argo
//! writes times to the second and counts no retries). Written by the replica that may write, in
//! notify mode; a copy older than the marked one (a stale copy) carries no mark, and the write
//! is made only on the version seen, so a stale copy never counts a run.

use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::gate::{Gate, workflows};
use crate::exit::decision::ExitDecision;
use crate::exit::event::{RUN_ANNOTATION, RUN_MAX, WorkflowFacts};
use crate::exit::seen::Seen;

/// The run to count for `seen`, if it is a marked workflow running again: not complete, with a
/// mark of this workflow's current run.
pub(super) fn next_run(seen: &Seen) -> Option<u32> {
    let facts = &seen.facts;
    if facts.complete || facts.run >= RUN_MAX {
        return None;
    }
    let marked = facts.marks_run(seen.mark.as_ref()?.key())?;
    (marked == facts.run).then_some(facts.run + 1)
}

/// Counts the run of `seen` if it is a marked workflow running again; one try (a conflict
/// means a newer version, whose event comes next).
pub(super) fn note(gate: &Arc<Gate>, seen: &Seen) {
    let Some(run) = next_run(seen) else {
        return;
    };
    if !gate.may_act() {
        return;
    }
    let (facts, task_gate) = (seen.facts.clone(), gate.clone());
    gate.spawn(async move { count(&task_gate, &facts, run).await });
}

async fn count(gate: &Gate, facts: &WorkflowFacts, run: u32) {
    let patch = json!({
        "metadata": {
            "resourceVersion": facts.resource_version,
            "annotations": { RUN_ANNOTATION: run.to_string() },
        }
    });
    let api = workflows(&gate.ctx, &facts.namespace);
    let _permit = gate.api_permit().await;
    match api
        .patch(&facts.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            tracing::info!(
                workflow = format!("{}/{}", facts.namespace, facts.name),
                uid = facts.uid,
                run,
                "a marked workflow runs again; its next completion is run {run}"
            );
            gate.ctx.metrics.exit.decided(ExitDecision::RunCounted);
        }
        Err(kube::Error::Api(status)) if status.is_conflict() => {}
        Err(error) => tracing::warn!(uid = facts.uid, %error, "cannot count the workflow's run"),
    }
}
