//! One shard of the exit loop: decide each event, then hand completions to the action path
//! (`action`), which runs apart from the shard: a shard only decides, so one slow completion
//! never holds up another workflow's events.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::action::{self, Limits, Origin};
use super::delivery::Delivery;
use super::events::EventWriter;
use super::tracker::{Final, Tracker};
use super::{Handled, watch};
use crate::controller::context::Context;
use crate::controller::metrics::Metrics;
use crate::engine::{Eligibility, EventKind, Export};
use crate::exit::event::WorkflowFacts;
use crate::exit::gate::{self, Assessment, GateError, eligibility_parts};
use crate::exit::notification::Mark;
use crate::exit::retry::jittered;
use crate::exit::tombstone::TombstoneCache;

/// Re-reads of a requeued (or undecided) workflow before the loop waits for its next event.
const MAX_REQUEUES: u32 = 5;

pub(super) enum Work {
    Event {
        kind: EventKind,
        workflow: Value,
        /// How many times this workflow was requeued to get here.
        requeues: u32,
        handled: Option<oneshot::Sender<Handled>>,
    },
    /// Read the workflow afresh and decide on that (after a `requeue`).
    Recheck {
        namespace: String,
        name: String,
        uid: String,
        requeues: u32,
    },
    /// A workflow listed when this replica became the writer: notify its completion if no
    /// replica did and the policy wants it notified. Listed just now, so not a stale copy; the
    /// action path reads it again anyway.
    CatchUp { workflow: Value },
}

impl Work {
    /// The uid that decides the shard; a workflow without one goes to the first shard.
    pub(super) fn uid(&self) -> &str {
        match self {
            Work::Event { workflow, .. } | Work::CatchUp { workflow } => workflow
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or(""),
            Work::Recheck { uid, .. } => uid,
        }
    }
}

pub(super) type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What every shard and every completion shares.
pub(super) struct Gate {
    pub ctx: Context,
    pub tombstones: TombstoneCache,
    pub tracker: Tracker,
    pub delivery: Option<Delivery>,
    pub events: EventWriter,
    pub limits: Limits,
    /// Requests to the API server in flight at once from the action paths.
    api: Arc<Semaphore>,
    delayed: mpsc::Sender<(Duration, Work)>,
    /// Completion tasks, run by the exit loop so that they stop with it.
    tasks: mpsc::UnboundedSender<Task>,
}

impl Gate {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: Context,
        tombstones: TombstoneCache,
        tracker: Tracker,
        delivery: Option<Delivery>,
        limits: Limits,
        delayed: mpsc::Sender<(Duration, Work)>,
        tasks: mpsc::UnboundedSender<Task>,
    ) -> Self {
        Gate {
            api: Arc::new(Semaphore::new(ctx.concurrency)),
            events: EventWriter::new(ctx.client.clone()),
            ctx,
            tombstones,
            tracker,
            delivery,
            limits,
            delayed,
            tasks,
        }
    }

    /// Hands `work` back to the loop after `after`; never waits (a worker must not block on
    /// its own loop), so beyond the queue's capacity the work is dropped and counted.
    pub fn schedule(&self, after: Duration, work: Work) {
        if self.delayed.try_send((after, work)).is_err() {
            tracing::warn!("delayed exit work queue full; dropping a re-check");
            Metrics::count(&self.ctx.metrics.exit_decisions, "delay-dropped");
        }
    }

    /// Runs `task` beside the shards, as long as the exit loop runs.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let _ = self.tasks.send(Box::pin(task));
    }

    /// A place among the API requests the action paths may have in flight.
    pub async fn api_permit(&self) -> OwnedSemaphorePermit {
        self.api
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }
}

pub(super) async fn run(gate: Arc<Gate>, mut work: mpsc::Receiver<Work>) {
    while let Some(item) = work.recv().await {
        match item {
            Work::Event {
                kind,
                workflow,
                requeues,
                handled,
            } => {
                on_event(&gate, kind, workflow, requeues, handled).await;
            }
            Work::Recheck {
                namespace,
                name,
                uid,
                requeues,
            } => recheck(&gate, &namespace, &name, &uid, requeues).await,
            Work::CatchUp { workflow } => catch_up(&gate, workflow).await,
        }
    }
}

async fn on_event(
    gate: &Arc<Gate>,
    kind: EventKind,
    workflow: Value,
    requeues: u32,
    handled: Option<oneshot::Sender<Handled>>,
) {
    let identity = WorkflowFacts::read(&workflow);
    // A DELETE hands the final object to its completion if one is under way, whatever the
    // decision below: the action path's read will find the workflow gone.
    if kind == EventKind::Deleted
        && let Some(facts) = identity.as_ref().filter(|facts| facts.complete)
    {
        gate.tracker.attach_final(
            &facts.completion_key(),
            Final {
                facts: facts.clone(),
                mark: Mark::read(&workflow),
            },
        );
    }
    let tombstones = gate.tombstones.clone();
    let decided = gate
        .ctx
        .policy
        .call(Export::ExitEligibility, move |loaded| {
            match gate::assess(&loaded.policy, &tombstones, kind, &workflow) {
                Ok(assessment) => Ok(Some((assessment, workflow))),
                Err(GateError::Policy(error)) => Err(error),
                Err(GateError::Malformed) => Ok(None),
            }
        })
        .await;
    let metrics = &gate.ctx.metrics;
    metrics
        .tombstones
        .set(i64::try_from(gate.tombstones.approx_len()).unwrap_or(i64::MAX));
    let (assessment, workflow) = match decided {
        Ok(Some(decided)) => decided,
        Ok(None) => {
            tracing::warn!("workflow event without metadata.name or metadata.uid; ignored");
            return reply(handled, counted(metrics, "malformed"), None);
        }
        Err(error) => {
            tracing::warn!(%error, kind = error.kind(), "exit-eligibility failed; not acting");
            // Often transient (a deadline on a starved CPU): decide again on a fresh read.
            if let Some(facts) = identity
                && kind != EventKind::Deleted
            {
                recheck_later(gate, &facts, requeues);
            }
            return reply(handled, counted(metrics, "error"), None);
        }
    };
    let Assessment {
        facts,
        eligibility,
        act,
        ..
    } = assessment;
    let (decision, reason) = eligibility_parts(&eligibility);
    Metrics::count(&metrics.exit_decisions, decision);
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
            recheck_later(gate, &facts, requeues);
        }
        _ => tracing::debug!(workflow = workflow_key, decision, reason, "decided"),
    }
    if !act {
        return reply(handled, Handled::decided(decision), None);
    }
    let origin = if kind == EventKind::Deleted {
        Origin::Deleted(Box::new(Final {
            facts: facts.clone(),
            mark: Mark::read(&workflow),
        }))
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
    let known = take(gate, facts, &workflow, origin, waiter).await;
    match known {
        Some(outcome) => reply(handled, Handled::notified(decision, outcome), None),
        None => reply(handled, Handled::decided(decision), outcome),
    }
}

/// Hands a completion the policy let through to the action path, unless the object already
/// shows it settled (no read needed) or this replica may not write.
async fn take(
    gate: &Arc<Gate>,
    facts: WorkflowFacts,
    workflow: &Value,
    origin: Origin,
    waiter: Option<oneshot::Sender<&'static str>>,
) -> Option<&'static str> {
    let metrics = &gate.ctx.metrics;
    if !gate.ctx.may_write() {
        Metrics::count(&metrics.exit_notifications, "not-leader");
        return Some("not-leader");
    }
    if let Some(mark) = Mark::read(workflow)
        && facts.is_completion_key(mark.key())
    {
        let settled = match mark {
            Mark::Sent(_) => Some("already-notified"),
            Mark::Failed(_) => Some("already-failed"),
            Mark::Skipped(_) => Some("already-skipped"),
            Mark::Pending(_) => None,
        };
        if let Some(label) = settled {
            Metrics::count(&metrics.exit_notifications, label);
            return Some(label);
        }
    }
    let known = action::submit(gate, facts, origin, waiter).await;
    if let Some(label) = known {
        Metrics::count(&metrics.exit_notifications, label);
    }
    known
}

/// Tells an injected event's sender how it was handled: at once, or once its completion's
/// outcome is known.
fn reply(
    handled: Option<oneshot::Sender<Handled>>,
    now: Handled,
    later: Option<oneshot::Receiver<&'static str>>,
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
                let notification = outcome.await.unwrap_or("stopped");
                let _ = tell.send(Handled::notified(now.decision, notification));
            });
        }
    }
}

/// A listed workflow: the policy decides without the tombstones (a listing is the live state,
/// never a stale copy, and a tombstone at the same resourceVersion would reject it).
async fn catch_up(gate: &Arc<Gate>, workflow: Value) {
    let Some(facts) = WorkflowFacts::read(&workflow).filter(|facts| facts.complete) else {
        return;
    };
    let decided = gate
        .ctx
        .policy
        .call(Export::ExitEligibility, move |loaded| {
            gate::assess_listed(&loaded.policy, &workflow)
                .map(|eligibility| (eligibility, workflow))
        })
        .await;
    match decided {
        Ok((Eligibility::Process, workflow)) => {
            take(gate, facts, &workflow, Origin::Seen, None).await;
        }
        Ok((eligibility, _)) => {
            let (decision, reason) = eligibility_parts(&eligibility);
            tracing::debug!(
                workflow = facts.name,
                decision,
                reason,
                "catch-up: not notified"
            );
        }
        Err(error) => {
            tracing::warn!(%error, workflow = facts.name, "exit-eligibility failed on catch-up");
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

fn counted(metrics: &Metrics, decision: &'static str) -> Handled {
    Metrics::count(&metrics.exit_decisions, decision);
    Handled::decided(decision)
}

/// A requeued workflow, read again from the API server; gone or re-created means nothing to do
/// (its own events follow).
async fn recheck(gate: &Arc<Gate>, namespace: &str, name: &str, uid: &str, requeues: u32) {
    match watch::workflows(&gate.ctx, namespace).get_opt(name).await {
        Ok(Some(live)) if live.metadata.uid.as_deref() == Some(uid) => {
            match serde_json::to_value(live) {
                Ok(workflow) => {
                    on_event(gate, EventKind::Relisted, workflow, requeues, None).await;
                }
                Err(error) => tracing::warn!(%error, "cannot represent a workflow as JSON"),
            }
        }
        Ok(_) => tracing::debug!(namespace, name, "requeued workflow gone or re-created"),
        Err(error) => tracing::warn!(namespace, name, %error, "re-check failed"),
    }
}
