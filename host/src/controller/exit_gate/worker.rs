//! One shard of the exit loop: decide each event, then hand completions to the action path
//! (`action`), which runs apart from the shard: a shard only decides, so one slow completion
//! never holds up another workflow's events.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::Handled;
use super::action::Origin;
use super::dispatch::Queued;
use super::entry::enter;
use super::gate::{Gate, Work, workflows};
use super::tracker::Final;
use super::watch::read_or_count;
use crate::engine::{Eligibility, EventKind, Export};
use crate::exit::decision::ExitDecision;
use crate::exit::event::WorkflowFacts;
use crate::exit::judge::{self, Verdict, eligibility_parts};
use crate::exit::outcome::Outcome;
use crate::exit::retry::jittered;
use crate::exit::seen::Seen;

/// Re-reads of a requeued (or undecided) workflow before the loop waits for its next event.
const MAX_REQUEUES: u32 = 5;

pub(super) async fn run(gate: Arc<Gate>, mut queue: mpsc::Receiver<Queued>) {
    // Each item's share of the view budget is returned once it was decided.
    while let Some(Queued { work, _budget }) = queue.recv().await {
        match work {
            Work::Event {
                kind,
                seen,
                requeues,
                handled,
            } => {
                on_event(&gate, kind, seen, requeues, handled).await;
            }
            Work::Recheck {
                namespace,
                name,
                uid,
                requeues,
            } => recheck(&gate, &namespace, &name, &uid, requeues).await,
            Work::CatchUp { seen } => catch_up(&gate, seen).await,
        }
    }
}

async fn on_event(
    gate: &Arc<Gate>,
    kind: EventKind,
    mut seen: Seen,
    requeues: u32,
    handled: Option<oneshot::Sender<Handled>>,
) {
    // A marked workflow running again (`argo retry`) has its run counted first.
    if kind != EventKind::Deleted {
        super::rerun::note(gate, &seen);
    }
    // A DELETE hands the final object to its completion if one is under way, whatever the
    // decision below: the action path's read will find the workflow gone.
    if kind == EventKind::Deleted && seen.facts.complete {
        gate.tracker
            .attach_final(&seen.facts.completion_key(), Final::of(&seen));
    }
    // Kept for a re-check should the decision fail: the event itself goes to the policy.
    let identity = (kind != EventKind::Deleted).then(|| seen.facts.clone());
    let tombstones = gate.tombstones.clone();
    let event = seen.take_event(kind);
    let decided = gate
        .ctx
        .policy
        .call(Export::ExitEligibility, move |loaded| {
            judge::judge_event(&loaded.policy, &tombstones, kind, &seen.facts, &event)
                .map(|verdict| (verdict, seen))
        })
        .await;
    let metrics = &gate.ctx.metrics;
    metrics
        .exit
        .tombstones
        .set(i64::try_from(gate.tombstones.approx_len()).unwrap_or(i64::MAX));
    let (verdict, seen) = match decided {
        Ok(decided) => decided,
        Err(error) => {
            tracing::warn!(%error, kind = error.kind().label(), "exit-eligibility failed; not acting");
            // Often transient (a deadline on a starved CPU): decide again on a fresh read.
            if let Some(facts) = identity {
                recheck_later(gate, &facts, requeues);
            }
            metrics.exit.decided(ExitDecision::Error);
            return reply(handled, Handled::decided(ExitDecision::Error), None);
        }
    };
    let Verdict {
        eligibility, act, ..
    } = verdict;
    let (decision, reason) = eligibility_parts(&eligibility);
    metrics.exit.decided(decision);
    let facts = &seen.facts;
    let workflow_key = format!("{}/{}", facts.namespace, facts.name);
    match &eligibility {
        Eligibility::RejectStale(_) => tracing::info!(
            workflow = workflow_key,
            uid = facts.uid,
            rv = facts.resource_version,
            reason,
            "rejecting a stale copy of a completed workflow"
        ),
        Eligibility::Requeue(_) => {
            tracing::debug!(workflow = workflow_key, reason, "requeued");
            recheck_later(gate, facts, requeues);
        }
        _ => tracing::debug!(
            workflow = workflow_key,
            decision = decision.label(),
            reason,
            "decided"
        ),
    }
    if !act {
        return reply(handled, Handled::decided(decision), None);
    }
    let origin = if kind == EventKind::Deleted {
        Origin::Deleted(Box::new(Final::of(&seen)))
    } else {
        Origin::Seen
    };
    let (waiter, outcome) = match handled.is_some() {
        true => {
            let (tell, hear) = oneshot::channel();
            (Some(tell), Some(hear))
        }
        false => (None, None),
    };
    match enter(gate, &seen, origin, waiter).await {
        Some(outcome) => reply(handled, Handled::notified(decision, outcome), None),
        None => reply(handled, Handled::decided(decision), outcome),
    }
}

/// Tells an injected event's sender how it was handled: at once, or once its completion's
/// outcome is known.
fn reply(
    handled: Option<oneshot::Sender<Handled>>,
    now: Handled,
    later: Option<oneshot::Receiver<Outcome>>,
) {
    let Some(tell) = handled else {
        return;
    };
    match later {
        None => {
            let _ = tell.send(now);
        }
        Some(outcome) => {
            tokio::spawn(async move {
                let notification = outcome.await.unwrap_or(Outcome::Stopped);
                let _ = tell.send(Handled::notified(now.decision, notification));
            });
        }
    }
}

/// A listed workflow: the policy decides without the tombstones (a listing is the live state,
/// never a stale copy, and a tombstone at the same resourceVersion would reject it).
async fn catch_up(gate: &Arc<Gate>, mut seen: Seen) {
    if !seen.facts.complete {
        return;
    }
    let event = seen.take_event(EventKind::Relisted);
    let decided = gate
        .ctx
        .policy
        .call(Export::ExitEligibility, move |loaded| {
            loaded
                .policy
                .exit_eligibility(&event, None)
                .map(|eligibility| (eligibility, seen))
        })
        .await;
    match decided {
        Ok((Eligibility::Process, seen)) => {
            enter(gate, &seen, Origin::Seen, None).await;
        }
        Ok((eligibility, seen)) => {
            let (decision, reason) = eligibility_parts(&eligibility);
            tracing::debug!(
                workflow = seen.facts.name,
                decision = decision.label(),
                reason,
                "catch-up: not notified"
            );
        }
        Err(error) => {
            tracing::warn!(%error, "exit-eligibility failed on catch-up");
        }
    }
}

/// Schedules a fresh read of the workflow, unless it was re-read often enough already.
fn recheck_later(gate: &Gate, facts: &WorkflowFacts, requeues: u32) {
    if requeues >= MAX_REQUEUES {
        tracing::info!(
            uid = facts.uid,
            "re-check limit reached; waiting for the next event"
        );
        return;
    }
    gate.schedule(
        jittered(requeues, Duration::from_secs(1), Duration::from_secs(30)),
        Work::Recheck {
            namespace: facts.namespace.clone(),
            name: facts.name.clone(),
            uid: facts.uid.clone(),
            requeues: requeues + 1,
        },
    );
}

/// A requeued workflow, read again from the API server; gone or re-created means nothing to do
/// (its own events follow).
async fn recheck(gate: &Arc<Gate>, namespace: &str, name: &str, uid: &str, requeues: u32) {
    match workflows(&gate.ctx, namespace).get_opt(name).await {
        Ok(Some(live)) if live.metadata.uid.as_deref() == Some(uid) => {
            if let Some(seen) = read_or_count(live.into_value(), &gate.ctx.metrics) {
                on_event(gate, EventKind::Relisted, seen, requeues, None).await;
            }
        }
        Ok(_) => tracing::debug!(namespace, name, "requeued workflow gone or re-created"),
        Err(error) => tracing::warn!(namespace, name, %error, "re-check failed"),
    }
}
