//! The exit loop: watch Argo Workflows, decide each event through the tombstone cache and the
//! policy, and send one exit notification per completion (see `crate::exit` for the rules).
//!
//! Events are sharded by uid over `ctx.concurrency` workers, so one workflow's events are
//! handled in the order they arrived while different workflows proceed in parallel. A shard
//! only decides: each completion the policy lets through is processed by a task of its own
//! (`action`, with its own budget of attempts), its webhook deliveries go through a bounded
//! queue with its own pool of requests (`delivery`), and a periodic sweep (`sweep`) takes up
//! claims left pending.

mod action;
pub mod delivery;
mod events;
mod sweep;
mod tracker;
mod watch;
pub mod webhook;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt as _};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::context::Context;
use super::metrics::Metrics;
use crate::cli::eval::humantime_secs;
use crate::engine::EventKind;
use crate::exit::tombstone::{MonotonicClock, TombstoneCache, UidKey};
use action::Limits;
use delivery::Delivery;
use tracker::Tracker;
use watch::Input;
use worker::{Gate, Task, Work};

pub use webhook::{PostError, Webhook};

#[derive(clap::Args, Debug, Clone)]
pub struct ExitArgs {
    /// Run the exit gate (watches argoproj.io Workflows); turn off where Argo is not installed.
    #[arg(long, env = "PIPEWARDEN_EXIT_GATE", default_value_t = true, action = clap::ArgAction::Set)]
    pub exit_gate: bool,
    /// POST each exit notification (a CloudEvent, HTTP binary mode) to this http:// or
    /// https:// URL.
    #[arg(long, env = "PIPEWARDEN_EXIT_WEBHOOK_URL")]
    pub exit_webhook_url: Option<String>,
    /// Attempts of the action path (confirming read, claim, Event, delivery) per completion,
    /// each with at most one webhook request; then the completion is given up (an
    /// ExitNotificationFailed Event and pipewarden_exit_gave_up).
    #[arg(
        long,
        alias = "exit-webhook-attempts",
        env = "PIPEWARDEN_EXIT_ATTEMPTS",
        default_value_t = 16
    )]
    pub exit_attempts: u32,
    /// Wait before the second attempt; it doubles per attempt (jittered) up to
    /// --exit-retry-max-delay.
    #[arg(long, env = "PIPEWARDEN_EXIT_RETRY_DELAY", default_value = "2s", value_parser = humantime_secs)]
    pub exit_retry_delay: Duration,
    /// The longest wait between two attempts (also after a receiver's 4xx).
    #[arg(long, env = "PIPEWARDEN_EXIT_RETRY_MAX_DELAY", default_value = "10m", value_parser = humantime_secs)]
    pub exit_retry_max_delay: Duration,
    /// Timeout of one webhook request, answer included; a timed-out delivery is retried with a
    /// longer one (2x, then 4x).
    #[arg(long, env = "PIPEWARDEN_EXIT_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = humantime_secs)]
    pub exit_webhook_timeout: Duration,
    /// Webhook requests in flight at once (a quarter more for receivers that timed out).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_DELIVERY_CONCURRENCY",
        default_value_t = 256
    )]
    pub exit_delivery_concurrency: usize,
    /// Deliveries that may wait for a request slot, per lane; beyond it an attempt fails and
    /// is retried after its backoff.
    #[arg(long, env = "PIPEWARDEN_EXIT_DELIVERY_QUEUE", default_value_t = 1024)]
    pub exit_delivery_queue: usize,
    /// The CloudEvents `source` of exit notifications (a URI-reference).
    #[arg(
        long,
        env = "PIPEWARDEN_EXIT_EVENT_SOURCE",
        default_value = "/pipewarden/exit-gate"
    )]
    pub exit_event_source: String,
    /// Unclaimed completions older than this when first seen are not notified (no flood on
    /// install); each is reported: skipped/<key>, an ExitNotificationSkipped Event, a metric.
    #[arg(long, env = "PIPEWARDEN_EXIT_CATCHUP_WINDOW", default_value = "1h", value_parser = humantime_secs)]
    pub exit_catchup_window: Duration,
    /// A claim still pending this long after its workflow finished is given up at once,
    /// whatever attempts a restart would allow.
    #[arg(long, env = "PIPEWARDEN_EXIT_GIVE_UP_AFTER", default_value = "24h", value_parser = humantime_secs)]
    pub exit_give_up_after: Duration,
    /// How often pending claims no attempt is working on are taken up again.
    #[arg(long, env = "PIPEWARDEN_EXIT_SWEEP_INTERVAL", default_value = "60s", value_parser = humantime_secs)]
    pub exit_sweep_interval: Duration,
    /// How long a tombstone is kept after it was recorded or last raised (Argo keeps 1300 s).
    #[arg(long, env = "PIPEWARDEN_TOMBSTONE_TTL", default_value = "1300s", value_parser = humantime_secs)]
    pub tombstone_ttl: Duration,
    /// Most tombstones held; the least recently used are evicted beyond it.
    #[arg(
        long,
        env = "PIPEWARDEN_TOMBSTONE_MAX_ENTRIES",
        default_value_t = 200_000
    )]
    pub tombstone_max_entries: u64,
}

/// A workflow event handed to the exit loop by a test, beside the watch (see [`super::Hooks`]).
pub struct InjectedEvent {
    pub kind: EventKind,
    pub workflow: Value,
    /// Told how the event was handled, once it was.
    pub handled: Option<oneshot::Sender<Handled>>,
}

/// How one event was handled: the policy's decision (or `error`, `malformed`) and, when the
/// event led to exit processing, the notification outcome (that of its completion, once known:
/// `sent`, `unconfirmed`, `already-notified`, `gave-up`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handled {
    pub decision: &'static str,
    pub notification: Option<&'static str>,
}

impl Handled {
    fn decided(decision: &'static str) -> Handled {
        Handled {
            decision,
            notification: None,
        }
    }

    fn notified(decision: &'static str, notification: &'static str) -> Handled {
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
    let delivery = match &args.exit_webhook_url {
        Some(url) => {
            let (delivery, pools) = Delivery::new(
                Webhook::new(url)?,
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
        attempts: args.exit_attempts.max(1),
        retry_delay: args.exit_retry_delay,
        retry_max_delay: args.exit_retry_max_delay.max(args.exit_retry_delay),
        catch_up: args.exit_catchup_window,
        give_up_after: args.exit_give_up_after,
        webhook_timeout: args.exit_webhook_timeout.max(Duration::from_millis(100)),
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
        delay_tx,
        task_tx,
    ));
    loops.spawn(sweep::run(gate.clone(), args.exit_sweep_interval));

    let mut workers = tokio::task::JoinSet::new();
    let shards: Vec<mpsc::Sender<Work>> = (0..ctx.concurrency)
        .map(|_| {
            let (tx, rx) = mpsc::channel(SHARD_CAPACITY);
            workers.spawn(worker::run(gate.clone(), rx));
            tx
        })
        .collect();
    let mut completions = tokio::task::JoinSet::new();

    let (mut inputs, watches) = watch::inputs(&ctx, injected);
    let mut listed = vec![false; watches];
    let mut delayed = FuturesUnordered::new();
    // Completions seen while another replica held the lease are caught up on taking it over.
    let mut leadership = ctx.may_write.clone();
    let mut was_writer = *leadership.borrow_and_update();
    let mut election = true;
    tracing::info!(
        namespaces = ?ctx.namespaces,
        webhook = args.exit_webhook_url.is_some(),
        "exit gate watching workflows"
    );
    loop {
        tokio::select! {
            input = inputs.next() => match input {
                Some(Input::Event(work)) => dispatch(&ctx, &shards, work).await?,
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
                    Metrics::count(&ctx.metrics.exit_decisions, "delay-dropped");
                    continue;
                }
                delayed.push(async move {
                    tokio::time::sleep(after).await;
                    work
                });
            }
            Some(work) = delayed.next(), if !delayed.is_empty() => dispatch(&ctx, &shards, work).await?,
            changed = leadership.changed(), if election => match changed {
                Ok(()) => {
                    let writer = *leadership.borrow_and_update();
                    if writer && !was_writer {
                        let listed = watch::list_all(&ctx).await;
                        tracing::info!(workflows = listed.len(), "became the writer; catching up");
                        for work in listed {
                            dispatch(&ctx, &shards, work).await?;
                        }
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

/// Hands work to the worker that owns its uid, waiting while that worker is busy.
async fn dispatch(ctx: &Context, shards: &[mpsc::Sender<Work>], work: Work) -> anyhow::Result<()> {
    // Another replica's shard (`--shard`) handles it.
    if !ctx.shard.owns(work.uid()) {
        return Ok(());
    }
    let shard = (UidKey::new(work.uid()).as_u128() % shards.len() as u128) as usize;
    shards[shard]
        .send(work)
        .await
        .map_err(|_| anyhow::anyhow!("exit worker {shard} is gone"))
}

/// Events waiting for a worker, per shard: a full shard slows the watch down.
const SHARD_CAPACITY: usize = 256;
/// Re-checks and redeliveries waiting for their time; beyond this they are dropped and counted.
const DELAYED_CAPACITY: usize = 65_536;
