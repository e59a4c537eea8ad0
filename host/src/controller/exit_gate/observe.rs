//! Observe mode (`--exit-mode=observe`, the default install's): each completion is confirmed
//! and planned as in notify mode, and what would happen is recorded, an Event per completion,
//! without a claim, a mark or a send. A completion left pending by a controller that notified
//! (a rollback from notify mode) is reported too: nothing here will deliver it. A read that
//! fails leaves it to the next event or sweep.

use std::sync::Arc;

use super::action::{Origin, read, record_too_old};
use super::gate::{Gate, workflows};
use super::tracker::Begin;
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::{Plan, reasons};
use crate::exit::outcome::Outcome;

pub(super) async fn observe(gate: &Arc<Gate>, seen: &WorkflowFacts, origin: Origin) -> Outcome {
    let key = seen.completion_key();
    // One report per completion: the sweep runs beside the shards and may meet the same one.
    let _slot = match gate.tracker.begin(&key, None).await {
        Begin::Settled(outcome) => return outcome.seen_again(),
        Begin::InFlight => return Outcome::InFlight,
        Begin::New(slot) => slot,
    };
    let outcome = decide(gate, seen, origin, &key).await;
    // A completion not confirmed (a read failed, a stale copy) is left to the next sighting.
    gate.tracker.finish(&key, outcome);
    outcome
}

async fn decide(gate: &Gate, seen: &WorkflowFacts, origin: Origin, key: &str) -> Outcome {
    let (current, plan) = match plan_now(gate, seen, origin).await {
        Ok(planned) => planned,
        Err(reason) => {
            tracing::info!(key, reason, "observe: not confirmed; nothing recorded");
            return Outcome::Unconfirmed;
        }
    };
    match plan {
        Plan::AlreadySent => Outcome::AlreadyNotified,
        Plan::AlreadySettled(outcome) => outcome,
        Plan::ClaimedElsewhere { holder, until } => {
            let note = format!(
                "Observe mode (--exit-mode=observe): Workflow {} at {} is claimed by {holder} \
                 (until {until}) but not marked sent ({key}); this controller sends nothing, \
                 so unless a controller in notify mode still runs it is not delivered",
                current.phase_text,
                current.finished_at.as_deref().unwrap_or("-"),
            );
            report(gate, &current, key, note).await
        }
        Plan::Unconfirmed(reason) => {
            tracing::info!(key, reason, "observe: not confirmed; nothing recorded");
            Outcome::Unconfirmed
        }
        Plan::TooOld => match record_too_old(gate, &current).await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::warn!(key, %error, "cannot record the skipped notification");
                Outcome::Unconfirmed
            }
        },
        Plan::Claim | Plan::TakeOver | Plan::Resend => {
            let pending = if plan == Plan::Claim {
                ""
            } else {
                " (a pending claim left by a controller in notify mode)"
            };
            let note = format!(
                "Observe mode (--exit-mode=observe): Workflow {} at {} would be notified \
                 ({key}){pending}; nothing was sent",
                current.phase_text,
                current.finished_at.as_deref().unwrap_or("-"),
            );
            report(gate, &current, key, note).await
        }
    }
}

/// The `ExitNotificationObserved` Event: named after the completion, so recorded once.
async fn report(gate: &Gate, current: &WorkflowFacts, key: &str, note: String) -> Outcome {
    if let Err(error) = gate
        .events
        .record(current, reasons::OBSERVED, false, note)
        .await
    {
        tracing::warn!(key, %error, "cannot record the observed notification");
        return Outcome::Unconfirmed;
    }
    tracing::info!(key, "observe: would notify; nothing sent");
    Outcome::Observed
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
            (live.facts, live.mark, live.claim)
        }
    };
    let plan = gate.plan(seen, &current, mark.as_ref(), claim.as_ref());
    Ok((current, plan))
}
