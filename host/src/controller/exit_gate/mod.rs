//! The exit loop: watch Argo Workflows, decide each event through the tombstone cache and the
//! policy, and send one exit notification per completion (see `crate::exit` for the rules).
//!
//! Events are sharded by uid over `ctx.concurrency` workers, so one workflow's events are
//! handled in the order they arrived while different workflows proceed in parallel.

mod notify;
mod watch;
mod webhook;
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
use watch::Input;
use worker::{Gate, Work};

pub use webhook::Webhook;

#[derive(clap::Args, Debug, Clone)]
pub struct ExitArgs {
    /// Run the exit gate (watches argoproj.io Workflows); turn off where Argo is not installed.
    #[arg(long, env = "PIPEWARDEN_EXIT_GATE", default_value_t = true, action = clap::ArgAction::Set)]
    pub exit_gate: bool,
    /// POST each exit notification as JSON to this http:// or https:// URL.
    #[arg(long, env = "PIPEWARDEN_EXIT_WEBHOOK_URL")]
    pub exit_webhook_url: Option<String>,
    /// Attempts per webhook delivery within one pass, with jittered backoff between them.
    #[arg(long, env = "PIPEWARDEN_EXIT_WEBHOOK_ATTEMPTS", default_value_t = 4)]
    pub exit_webhook_attempts: u32,
    /// Unclaimed completions older than this are not notified (no flood on install).
    #[arg(long, env = "PIPEWARDEN_EXIT_CATCHUP_WINDOW", default_value = "1h", value_parser = humantime_secs)]
    pub exit_catchup_window: Duration,
    /// Wait before delivering a claimed notification again after a failed pass (doubles
    /// per pass, five passes at most; a restart retries too).
    #[arg(long, env = "PIPEWARDEN_EXIT_RETRY_DELAY", default_value = "30s", value_parser = humantime_secs)]
    pub exit_retry_delay: Duration,
    /// How long a tombstone is kept after it was recorded or last raised.
    #[arg(long, env = "PIPEWARDEN_TOMBSTONE_TTL", default_value = "10m", value_parser = humantime_secs)]
    pub tombstone_ttl: Duration,
    /// Most tombstones held; the least useful are evicted beyond it.
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
/// event led to exit processing, the notification outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handled {
    pub decision: &'static str,
    pub notification: Option<&'static str>,
}

/// Runs until the watch fails for good or the task is aborted.
pub async fn run(
    ctx: Context,
    args: ExitArgs,
    injected: Option<mpsc::Receiver<InjectedEvent>>,
) -> anyhow::Result<()> {
    let webhook = match &args.exit_webhook_url {
        Some(url) => Some(Webhook::new(url, args.exit_webhook_attempts)?),
        None => None,
    };
    let tombstones = TombstoneCache::new(
        args.tombstone_ttl,
        args.tombstone_max_entries,
        Arc::new(MonotonicClock::new()),
    );
    let (delay_tx, mut delay_rx) = mpsc::channel::<(Duration, Work)>(DELAYED_CAPACITY);
    let gate = Arc::new(Gate::new(ctx.clone(), tombstones, webhook, &args, delay_tx));

    let mut workers = tokio::task::JoinSet::new();
    let shards: Vec<mpsc::Sender<Work>> = (0..ctx.concurrency)
        .map(|_| {
            let (tx, rx) = mpsc::channel(SHARD_CAPACITY);
            workers.spawn(worker::run(gate.clone(), rx));
            tx
        })
        .collect();

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
                Some(Input::Event(work)) => dispatch(&shards, work).await?,
                Some(Input::Listed(index)) => {
                    listed[index] = true;
                    if listed.iter().all(|done| *done) {
                        ctx.readiness.ready("exit");
                    }
                }
                None => anyhow::bail!("the workflow watch ended"),
            },
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
            Some(work) = delayed.next(), if !delayed.is_empty() => dispatch(&shards, work).await?,
            changed = leadership.changed(), if election => match changed {
                Ok(()) => {
                    let writer = *leadership.borrow_and_update();
                    if writer && !was_writer {
                        let listed = watch::list_all(&ctx).await;
                        tracing::info!(workflows = listed.len(), "became the writer; catching up");
                        for work in listed {
                            dispatch(&shards, work).await?;
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
        }
    }
}

/// Hands work to the worker that owns its uid, waiting while that worker is busy.
async fn dispatch(shards: &[mpsc::Sender<Work>], work: Work) -> anyhow::Result<()> {
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
