//! One shard of the exit loop: decide each event, then hand completions to `notify`.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{ExitArgs, Handled, Webhook, notify, watch};
use crate::controller::context::Context;
use crate::controller::metrics::Metrics;
use crate::engine::{Eligibility, EventKind, Export};
use crate::exit::event::WorkflowFacts;
use crate::exit::gate::{self, Assessment, GateError, eligibility_parts};
use crate::exit::retry::jittered;
use crate::exit::tombstone::TombstoneCache;

/// Re-reads of a requeued (or undecided) workflow before the loop waits for its next event.
const MAX_REQUEUES: u32 = 5;
/// Delivery passes for one claimed notification before it waits for a restart or an event.
pub(super) const MAX_DELIVERY_PASSES: u32 = 5;

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
    /// Deliver a claimed notification again (after a failed pass).
    Redeliver { seen: WorkflowFacts, pass: u32 },
    /// A workflow listed when this replica became the writer: notify its completion if no
    /// replica did. Listed just now, so not a stale copy; `notify` reads it again anyway.
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
            Work::Redeliver { seen, .. } => &seen.uid,
        }
    }
}

/// What every shard shares.
pub(super) struct Gate {
    pub ctx: Context,
    pub tombstones: TombstoneCache,
    pub webhook: Option<Webhook>,
    pub catch_up: Duration,
    pub retry_delay: Duration,
    delayed: mpsc::Sender<(Duration, Work)>,
}

impl Gate {
    pub fn new(
        ctx: Context,
        tombstones: TombstoneCache,
        webhook: Option<Webhook>,
        args: &ExitArgs,
        delayed: mpsc::Sender<(Duration, Work)>,
    ) -> Self {
        Gate {
            ctx,
            tombstones,
            webhook,
            catch_up: args.exit_catchup_window,
            retry_delay: args.exit_retry_delay,
            delayed,
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
}

pub(super) async fn run(gate: std::sync::Arc<Gate>, mut work: mpsc::Receiver<Work>) {
    while let Some(item) = work.recv().await {
        match item {
            Work::Event {
                kind,
                workflow,
                requeues,
                handled,
            } => {
                let outcome = on_event(&gate, kind, workflow, requeues).await;
                if let Some(tell) = handled {
                    let _ = tell.send(outcome);
                }
            }
            Work::Recheck {
                namespace,
                name,
                uid,
                requeues,
            } => recheck(&gate, &namespace, &name, &uid, requeues).await,
            Work::Redeliver { seen, pass } => {
                notify::process(&gate, &seen, None, pass).await;
            }
            Work::CatchUp { workflow } => {
                if let Some(seen) = WorkflowFacts::read(&workflow).filter(|f| f.complete) {
                    notify::process(&gate, &seen, Some(&workflow), 0).await;
                }
            }
        }
    }
}

async fn on_event(gate: &Gate, kind: EventKind, workflow: Value, requeues: u32) -> Handled {
    let identity = WorkflowFacts::read(&workflow);
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
            return counted(metrics, "malformed");
        }
        Err(error) => {
            tracing::warn!(%error, kind = error.kind(), "exit-eligibility failed; not acting");
            // Often transient (a deadline on a starved CPU): decide again on a fresh read.
            if let Some(facts) = identity {
                recheck_later(gate, &facts, requeues);
            }
            return counted(metrics, "error");
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
    let notification = if act {
        Some(notify::process(gate, &facts, Some(&workflow), 0).await)
    } else {
        None
    };
    Handled {
        decision,
        notification,
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
    Handled {
        decision,
        notification: None,
    }
}

/// A requeued workflow, read again from the API server; gone or re-created means nothing to do
/// (its own events follow).
async fn recheck(gate: &Gate, namespace: &str, name: &str, uid: &str, requeues: u32) {
    match watch::workflows(&gate.ctx, namespace).get_opt(name).await {
        Ok(Some(live)) if live.metadata.uid.as_deref() == Some(uid) => {
            match serde_json::to_value(live) {
                Ok(workflow) => {
                    on_event(gate, EventKind::Relisted, workflow, requeues).await;
                }
                Err(error) => tracing::warn!(%error, "cannot represent a workflow as JSON"),
            }
        }
        Ok(_) => tracing::debug!(namespace, name, "requeued workflow gone or re-created"),
        Err(error) => tracing::warn!(namespace, name, %error, "re-check failed"),
    }
}
