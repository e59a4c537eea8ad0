//! Webhook deliveries, apart from deciding: bounded queues drained by their own pool of
//! requests, so that a slow or dead receiver holds a delivery slot for at most the request
//! timeout and never a uid shard, a decision, or another workflow's delivery.
//!
//! Two lanes. The fresh lane carries every delivery except those to a receiver that already
//! timed out for it: those go to the slow lane (a quarter of the slots, longer timeouts), so
//! receivers that hang take fresh slots for one timeout at most, never the slots of their
//! retries as well. Healthy deliveries wait only if more requests hang at once than the fresh
//! lane has slots (completions per second x share hanging x timeout > concurrency). A full
//! queue is a failed attempt like any other: the claim stays pending and the action path
//! tries again after its backoff.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinSet;

use super::webhook::{PostError, Webhook};
use crate::controller::metrics::Metrics;
use crate::exit::notification::Notification;

struct Job {
    notification: Arc<Notification>,
    timeout: Duration,
    reply: oneshot::Sender<Result<(), PostError>>,
}

/// The sending side, shared by the completions' action paths.
pub struct Delivery {
    fresh: mpsc::Sender<Job>,
    slow: mpsc::Sender<Job>,
    metrics: Arc<Metrics>,
}

/// The lanes' drains, to be run by the exit loop (they stop with it).
pub struct Pools {
    lanes: Vec<(mpsc::Receiver<Job>, usize)>,
    webhook: Arc<Webhook>,
    metrics: Arc<Metrics>,
}

impl Delivery {
    /// `concurrency` requests at once in the fresh lane, a quarter of that (at least one) in
    /// the slow lane; `queue` deliveries may wait in each lane.
    pub fn new(
        webhook: Webhook,
        concurrency: usize,
        queue: usize,
        metrics: Arc<Metrics>,
    ) -> (Delivery, Pools) {
        let concurrency = concurrency.max(1);
        let (fresh, fresh_rx) = mpsc::channel(queue.max(1));
        let (slow, slow_rx) = mpsc::channel(queue.max(1));
        let pools = Pools {
            lanes: vec![
                (fresh_rx, concurrency),
                (slow_rx, concurrency.div_ceil(4).max(1)),
            ],
            webhook: Arc::new(webhook),
            metrics: metrics.clone(),
        };
        (
            Delivery {
                fresh,
                slow,
                metrics,
            },
            pools,
        )
    }

    /// Queues one POST (in the slow lane if `slow`) and waits for its answer; never waits for
    /// a place in the queue.
    pub async fn deliver(
        &self,
        notification: Arc<Notification>,
        slow: bool,
        timeout: Duration,
    ) -> Result<(), DeliveryError> {
        let (reply, answer) = oneshot::channel();
        let lane = if slow { &self.slow } else { &self.fresh };
        let job = Job {
            notification,
            timeout,
            reply,
        };
        self.metrics.exit_delivery_queued.inc();
        if lane.try_send(job).is_err() {
            self.metrics.exit_delivery_queued.dec();
            Metrics::count(&self.metrics.exit_webhook_requests, "queue-full");
            return Err(DeliveryError::QueueFull);
        }
        match answer.await {
            Ok(result) => result.map_err(DeliveryError::Post),
            Err(_) => Err(DeliveryError::Stopped),
        }
    }
}

/// Why a delivery did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryError {
    QueueFull,
    Post(PostError),
    Stopped,
}

impl std::fmt::Display for DeliveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeliveryError::QueueFull => write!(f, "the delivery queue is full"),
            DeliveryError::Post(error) => error.fmt(f),
            DeliveryError::Stopped => write!(f, "the delivery pool stopped"),
        }
    }
}

impl Pools {
    /// Drains both lanes until the senders are gone or the task is aborted.
    pub async fn run(self) -> anyhow::Result<()> {
        let mut lanes = JoinSet::new();
        for (queue, slots) in self.lanes {
            lanes.spawn(drain(
                queue,
                Arc::new(Semaphore::new(slots)),
                self.webhook.clone(),
                self.metrics.clone(),
            ));
        }
        while lanes.join_next().await.is_some() {}
        Ok(())
    }
}

async fn drain(
    mut queue: mpsc::Receiver<Job>,
    slots: Arc<Semaphore>,
    webhook: Arc<Webhook>,
    metrics: Arc<Metrics>,
) {
    let mut requests = JoinSet::new();
    while let Some(job) = queue.recv().await {
        let slot = slots
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        // Finished requests are reaped here, so the set holds only those under way.
        while requests.try_join_next().is_some() {}
        metrics.exit_delivery_queued.dec();
        metrics.exit_deliveries_in_flight.inc();
        let (webhook, metrics) = (webhook.clone(), metrics.clone());
        requests.spawn(async move {
            let result = webhook.post(&job.notification, job.timeout).await;
            drop(slot);
            metrics.exit_deliveries_in_flight.dec();
            let outcome = match &result {
                Ok(()) => "ok",
                Err(PostError::Status(_)) => "rejected",
                Err(PostError::Timeout(_)) => "timeout",
                Err(PostError::Transport(_)) => "error",
            };
            Metrics::count(&metrics.exit_webhook_requests, outcome);
            let _ = job.reply.send(result);
        });
    }
    while requests.join_next().await.is_some() {}
}
