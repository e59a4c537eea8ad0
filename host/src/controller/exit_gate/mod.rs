//! The exit loop: watch Argo Workflows, decide each event through the tombstone cache and the
//! policy, and send one exit notification per completion (see `crate::exit` for the rules).
//!
//! Events are sharded by uid over `ctx.concurrency` workers, so one workflow's events are
//! handled in the order they arrived while different workflows proceed in parallel. A shard
//! only decides: each completion the policy lets through is processed by a task of its own
//! (`action`, with its own budget of attempts), its deliveries to the sink (`sink`: a webhook
//! or NATS JetStream) go through a bounded queue with its own pool of sends (`delivery`), and
//! a periodic sweep (`sweep`) takes up claims left pending.

mod action;
// The action path's tests, beside `entry`'s checks they also go through.
#[cfg(test)]
mod action_tests;
mod claims_seen;
pub mod delivery;
mod dispatch;
mod entry;
mod events;
mod gate;
mod listed;
mod observe;
mod rerun;
pub mod sink;
mod sweep;
mod tracker;
mod watch;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt as _};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::context::Context;
use crate::cluster::mark_key::mark_key;
use crate::config::{ExitArgs, ExitMode};
use crate::engine::EventKind;
use crate::exit::TombstoneCache;
use crate::exit::claim::Claimant;
use crate::exit::decision::ExitDecision;
use crate::exit::outcome::Outcome;
use crate::exit::tombstone::MonotonicClock;
use delivery::Delivery;
use dispatch::Dispatcher;
use gate::{Claims, Gate, Limits, Queues, Task, Work};
use tracker::Tracker;
use watch::Input;

pub use sink::webhook::{SIGNATURE_HEADER, Webhook, WebhookOptions, signature};
pub use sink::{Sink, SinkError};

/// A workflow event handed to the exit loop by a test, beside the watch (see [`super::Hooks`]).
pub struct InjectedEvent {
    pub kind: EventKind,
    pub workflow: Value,
    /// Told how the event was handled, once it was.
    pub handled: Option<oneshot::Sender<Handled>>,
}

/// How one event was handled: the policy's decision (or `error`, `malformed`) and, when the
/// event led to exit processing, the notification outcome (that of its completion, once known).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handled {
    pub decision: ExitDecision,
    pub notification: Option<Outcome>,
}

impl Handled {
    fn decided(decision: ExitDecision) -> Handled {
        Handled {
            decision,
            notification: None,
        }
    }

    fn notified(decision: ExitDecision, notification: Outcome) -> Handled {
        Handled {
            decision,
            notification: Some(notification),
        }
    }
}

/// Runs until the watch fails for good or the task is aborted; everything it started stops
/// with it.
pub async fn run(
    ctx: Context,
    args: ExitArgs,
    injected: Option<mpsc::Receiver<InjectedEvent>>,
) -> anyhow::Result<()> {
    let mut loops = tokio::task::JoinSet::new();
    let sink = sink::from_args(&args).await?;
    let sink_name = sink.as_ref().map_or("none", |sink| sink.name());
    let delivery = match sink {
        Some(sink) => {
            let (delivery, pools) = Delivery::new(
                sink,
                args.exit_delivery_concurrency,
                args.exit_delivery_queue,
                ctx.metrics.clone(),
            );
            loops.spawn(pools.run());
            Some(delivery)
        }
        None => None,
    };
    let tombstones = TombstoneCache::new(
        args.tombstone_ttl,
        args.tombstone_max_entries,
        Arc::new(MonotonicClock::new()),
    );
    let limits = Limits {
        observe: args.exit_mode == ExitMode::Observe,
        claim_ttl: args.claim_ttl(),
        attempts: args.exit_attempts.max(1),
        retry_delay: args.exit_retry_delay,
        retry_max_delay: args.exit_retry_max_delay.max(args.exit_retry_delay),
        catch_up: args.exit_catchup_window,
        give_up_after: args.exit_give_up_after,
        send_timeout: args.exit_webhook_timeout.max(Duration::from_millis(100)),
        event_source: args.exit_event_source.clone(),
    };
    let (delay_tx, mut delay_rx) = mpsc::channel::<(Duration, Work)>(DELAYED_CAPACITY);
    let (task_tx, mut task_rx) = mpsc::unbounded_channel::<Task>();
    let gate = Arc::new(Gate::new(
        ctx.clone(),
        tombstones,
        Tracker::new(args.tombstone_ttl, args.tombstone_max_entries),
        delivery,
        limits,
        Claims {
            claimant: Claimant::new(&ctx.identity),
            key: mark_key(args.exit_mark_key_file.as_deref())?,
        },
        Queues {
            delayed: delay_tx,
            tasks: task_tx,
        },
    ));
    loops.spawn(sweep::run(gate.clone(), args.exit_sweep_interval));

    let mut workers = tokio::task::JoinSet::new();
    let (dispatcher, queues) = Dispatcher::new(&ctx);
    for queue in queues {
        workers.spawn(worker::run(gate.clone(), queue));
    }
    let mut completions = tokio::task::JoinSet::new();

    let (mut inputs, watches) = watch::inputs(&ctx, injected);
    let mut listed = vec![false; watches];
    let mut delayed = FuturesUnordered::new();
    // Completions seen while another replica held the lease are caught up on taking it over.
    let mut leadership = ctx.may_write.clone();
    let mut was_writer = *leadership.borrow_and_update();
    let mut election = true;
    let mut catching_up: Option<tokio::task::AbortHandle> = None;
    tracing::info!(
        namespaces = ?ctx.namespaces,
        sink = sink_name,
        mode = ?args.exit_mode,
        "exit gate watching workflows"
    );
    if args.exit_mode == ExitMode::Observe {
        tracing::warn!(
            "exit gate in observe mode: completions are decided and recorded, nothing is sent \
             (--exit-mode=notify sends)"
        );
    }
    loop {
        tokio::select! {
            input = inputs.next() => match input {
                Some(Input::Event(work)) => dispatcher.send(*work).await?,
                Some(Input::Listed(index)) => {
                    listed[index] = true;
                    if listed.iter().all(|done| *done) {
                        ctx.readiness.ready("exit");
                    }
                }
                None => anyhow::bail!("the workflow watch ended"),
            },
            Some(task) = task_rx.recv() => {
                completions.spawn(task);
            }
            Some(_) = completions.join_next(), if !completions.is_empty() => {}
            Some((after, work)) = delay_rx.recv() => {
                if delayed.len() >= DELAYED_CAPACITY {
                    tracing::warn!("too many delayed re-checks; dropping one");
                    ctx.metrics.exit.decided(ExitDecision::DelayDropped);
                    continue;
                }
                delayed.push(async move {
                    tokio::time::sleep(after).await;
                    work
                });
            }
            Some(work) = delayed.next(), if !delayed.is_empty() => dispatcher.send(work).await?,
            changed = leadership.changed(), if election => match changed {
                Ok(()) => {
                    let writer = *leadership.borrow_and_update();
                    if writer && !was_writer {
                        tracing::info!("became the writer; catching up on completed workflows");
                        // One catch-up at a time: a lease lost and taken again starts over.
                        if let Some(previous) = catching_up.take() {
                            previous.abort();
                        }
                        let (ctx, dispatcher) = (ctx.clone(), dispatcher.clone());
                        catching_up = Some(completions.spawn(async move {
                            let listed = watch::catch_up(ctx, dispatcher).await;
                            tracing::info!(workflows = listed, "caught up");
                        }));
                    }
                    was_writer = writer;
                }
                // No election: this replica writes from the start.
                Err(_) => election = false,
            },
            Some(ended) = workers.join_next() => {
                anyhow::bail!("an exit worker stopped: {ended:?}");
            }
            Some(ended) = loops.join_next() => {
                anyhow::bail!("an exit loop stopped: {ended:?}");
            }
        }
    }
}

/// Re-checks and redeliveries waiting for their time; beyond this they are dropped and counted.
const DELAYED_CAPACITY: usize = 65_536;
