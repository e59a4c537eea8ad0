//! Observe mode (`--exit-mode=observe`, the default install's): each completion is confirmed
//! and planned as in notify mode, and what would happen is recorded, an Event per completion,
//! without a claim, a mark or a POST. A read that fails leaves it to the next event or sweep.

use std::sync::Arc;

use super::action::{Origin, read, record_too_old};
use super::gate::{Gate, workflows};
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::{Plan, plan_facts, reasons};
use crate::exit::outcome::Outcome;
use crate::exit::seen::SeenWorkflow;

pub(super) async fn observe(gate: &Arc<Gate>, seen: &WorkflowFacts, origin: Origin) -> Outcome {
    let key = seen.completion_key();
    if let Some(outcome) = gate.tracker.settled(&key) {
        return outcome.seen_again();
    }
    let (current, plan) = match plan_now(gate, seen, origin).await {
        Ok(planned) => planned,
        Err(reason) => {
            tracing::info!(key, reason, "observe: not confirmed; nothing recorded");
            return Outcome::Unconfirmed;
        }
    };
    let outcome = match plan {
        Plan::AlreadySent => Outcome::AlreadyNotified,
        Plan::AlreadySettled(outcome) => outcome,
        Plan::ClaimedElsewhere { .. } => Outcome::ClaimedElsewhere,
        Plan::Unconfirmed(reason) => {
            tracing::info!(key, reason, "observe: not confirmed; nothing recorded");
            return Outcome::Unconfirmed;
        }
        Plan::TooOld => match record_too_old(gate, &current).await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(key, %error, "cannot record the skipped notification");
                return Outcome::Unconfirmed;
            }
        },
        Plan::Claim | Plan::TakeOver | Plan::Resend => {
            let note = format!(
                "Observe mode (--exit-mode=observe): Workflow {} at {} would be notified \
                 ({key}); nothing was sent",
                current.phase_text,
                current.finished_at.as_deref().unwrap_or("-"),
            );
            if let Err(error) = gate
                .events
                .record(&current, reasons::OBSERVED, false, note)
                .await
            {
                tracing::warn!(key, %error, "cannot record the observed notification");
                return Outcome::Unconfirmed;
            }
            tracing::info!(key, "observe: would notify; nothing sent");
            Outcome::Observed
        }
    };
    gate.tracker.settle(&key, outcome);
    outcome
}

/// The plan for `seen` against the live workflow (or, once deleted, its final object).
async fn plan_now(
    gate: &Gate,
    seen: &WorkflowFacts,
    origin: Origin,
) -> Result<(WorkflowFacts, Plan), String> {
    let (current, mark, claim) = match origin {
        Origin::Deleted(final_object) => {
            (final_object.facts, final_object.mark, final_object.claim)
        }
        Origin::Seen => {
            let api = workflows(&gate.ctx, &seen.namespace);
            let live = {
                let _permit = gate.api_permit().await;
                read(&api, &seen.name).await
            };
            let live = match live {
                Ok(Some(live)) => live,
                Ok(None) => return Err("the workflow is gone".into()),
                Err(error) => return Err(format!("read: {error}")),
            };
            let live = SeenWorkflow::read(live).ok_or("the live workflow has no name or uid")?;
            (live.facts, live.mark, live.claim)
        }
    };
    let plan = plan_facts(seen, &current, mark.as_ref(), claim.as_ref(), &gate.rules());
    Ok((current, plan))
}
