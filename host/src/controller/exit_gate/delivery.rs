//! Deliveries to the sink, apart from deciding: bounded queues drained by their own pool of
//! sends, so that a slow or dead receiver holds a delivery slot for at most the send timeout
//! and never a uid shard, a decision, or another workflow's delivery. The pools know the sink
//! only as a [`Sink`].
//!
//! Two lanes. The fresh lane carries every delivery except those to a receiver that already
//! timed out for it: those go to the slow lane (a quarter of the slots, longer timeouts), so
//! receivers that hang take fresh slots for one timeout at most, never the slots of their
//! retries as well. Healthy deliveries wait only if more requests hang at once than the fresh
//! lane has slots (completions per second x share hanging x timeout > concurrency). A full
//! queue is a failed attempt like any other: the claim stays pending and the action path
//! tries again after its backoff.
//!
//! A fence before every send: a job leaves the queue only while the claim it was queued under
//! has at least its request timeout left (by this process's clock, from when the claim was
//! written) and the leadership it was claimed under has not changed. Otherwise it is not sent;
//! the attempt fails and whoever holds the claim then delivers it. Neither a wait in the slow
//! lane nor a lost lease lets a job out after its claim could have passed to another replica.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::task::JoinSet;

use super::sink::{Sink, SinkError};
use crate::exit::notification::Notification;
use crate::metrics::Metrics;

struct Job {
    notification: Arc<Notification>,
    timeout: Duration,
    fence: Fence,
    reply: oneshot::Sender<Result<(), DeliveryError>>,
}

/// What a job must still hold when it leaves the queue.
#[derive(Clone, Debug)]
pub struct Fence {
    /// When the claim it is sent under runs out, by this process's monotonic clock (counted
    /// from before the claim was written).
    pub deadline: Instant,
    /// The leadership as it was when the claim was written: any change since fences the job.
    leadership: watch::Receiver<bool>,
}

impl Fence {
    pub fn new(deadline: Instant, mut leadership: watch::Receiver<bool>) -> Fence {
        leadership.borrow_and_update();
        Fence {
            deadline,
            leadership,
        }
    }

    /// Whether the claim has more than `left` to run and the leadership is unchanged.
    pub fn holds_for(&self, left: Duration) -> bool {
        self.check(left, Instant::now()).is_ok()
    }

    /// Why a request bounded by `timeout` may not leave at `now`, if it may not.
    pub fn check(&self, timeout: Duration, now: Instant) -> Result<(), String> {
        // A closed channel (no election: nothing will change it) keeps its last value.
        if self.leadership.has_changed().unwrap_or(false) || !*self.leadership.borrow() {
            return Err("leadership changed since the claim was written".to_owned());
        }
        let left = self.deadline.saturating_duration_since(now);
        if left <= timeout {
            return Err(format!(
                "the claim has {left:?} left, not more than the request timeout {timeout:?}"
            ));
        }
        Ok(())
    }
}

/// The sending side, shared by the completions' action paths.
pub struct Delivery {
    fresh: mpsc::Sender<Job>,
    slow: mpsc::Sender<Job>,
    /// The sink's name, for the metrics counted before a job reaches the pools.
    sink: &'static str,
    metrics: Arc<Metrics>,
}

/// The lanes' drains, to be run by the exit loop (they stop with it).
pub struct Pools {
    lanes: Vec<(mpsc::Receiver<Job>, usize)>,
    sink: Arc<dyn Sink>,
    metrics: Arc<Metrics>,
}

impl Delivery {
    /// `concurrency` sends at once in the fresh lane, a quarter of that (at least one) in the
    /// slow lane; `queue` deliveries may wait in each lane.
    pub fn new(
        sink: Arc<dyn Sink>,
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
            sink: sink.clone(),
            metrics: metrics.clone(),
        };
        (
            Delivery {
                fresh,
                slow,
                sink: sink.name(),
                metrics,
            },
            pools,
        )
    }

    /// Queues one send (in the slow lane if `slow`) and waits for its answer; never waits for
    /// a place in the queue.
    pub async fn deliver(
        &self,
        notification: Arc<Notification>,
        slow: bool,
        timeout: Duration,
        fence: Fence,
    ) -> Result<(), DeliveryError> {
        let (reply, answer) = oneshot::channel();
        let lane = if slow { &self.slow } else { &self.fresh };
        let job = Job {
            notification,
            timeout,
            fence,
            reply,
        };
        self.metrics.exit.delivery_queued.inc();
        if lane.try_send(job).is_err() {
            self.metrics.exit.delivery_queued.dec();
            let full = "queue-full";
            self.metrics.exit.count_delivery(self.sink, full, full);
            return Err(DeliveryError::QueueFull);
        }
        match answer.await {
            Ok(result) => result,
            Err(_) => Err(DeliveryError::Stopped),
        }
    }
}

/// Why a delivery did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryError {
    QueueFull,
    /// Not sent: the claim or the leadership it was queued under no longer holds.
    Fenced(String),
    Sink(SinkError),
    Stopped,
}

impl std::fmt::Display for DeliveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeliveryError::QueueFull => write!(f, "the delivery queue is full"),
            DeliveryError::Fenced(why) => write!(f, "not sent: {why}"),
            DeliveryError::Sink(error) => error.fmt(f),
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
                self.sink.clone(),
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
    sink: Arc<dyn Sink>,
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
        metrics.exit.delivery_queued.dec();
        if let Err(why) = job.fence.check(job.timeout, Instant::now()) {
            metrics.exit.count_delivery(sink.name(), "fenced", "fenced");
            let _ = job.reply.send(Err(DeliveryError::Fenced(why)));
            continue;
        }
        metrics.exit.deliveries_in_flight.inc();
        let (sink, metrics) = (sink.clone(), metrics.clone());
        requests.spawn(async move {
            let result = sink.send(&job.notification, job.timeout).await;
            drop(slot);
            metrics.exit.deliveries_in_flight.dec();
            let (outcome, legacy) = match &result {
                Ok(()) => ("ok", "ok"),
                Err(error) => (error.label(), error.legacy_label()),
            };
            metrics.exit.count_delivery(sink.name(), outcome, legacy);
            let _ = job.reply.send(result.map_err(DeliveryError::Sink));
        });
    }
    while requests.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::controller::exit_gate::sink::webhook::Webhook;
    use crate::controller::exit_gate::sink::{Reason, Sending};
    use crate::exit::event::WorkflowFacts;
    use crate::exit::notification::notification;

    /// A receiver on loopback that holds every request for `hold`, counting them.
    async fn receiver(hold: Duration) -> (String, Arc<AtomicUsize>) {
        let posts = Arc::new(AtomicUsize::new(0));
        let counted = posts.clone();
        let app = axum::Router::new().route(
            "/",
            axum::routing::post(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::time::sleep(hold).await;
                    http::StatusCode::OK
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, posts)
    }

    fn completion(name: &str) -> Arc<Notification> {
        let facts = WorkflowFacts::read(&json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "status": {"phase": "Failed", "startedAt": "a", "finishedAt": "b"},
        }))
        .unwrap();
        Arc::new(notification(&facts, "/test"))
    }

    /// The slow lane (one slot) is held by a receiver that hangs; two more jobs wait behind it.
    /// The lease moves while they wait: neither is POSTed when its turn comes, and a job whose
    /// claim has less than its timeout left is not POSTed either.
    #[tokio::test]
    async fn a_job_whose_leadership_moved_or_whose_claim_runs_out_is_not_sent() {
        let (url, posts) = receiver(Duration::from_millis(600)).await;
        let metrics = Arc::new(Metrics::new());
        let webhook = Webhook::new(&url, &Default::default()).unwrap();
        let (delivery, pools) = Delivery::new(Arc::new(webhook), 1, 8, metrics);
        tokio::spawn(pools.run());
        let delivery = Arc::new(delivery);
        let (lease, leadership) = watch::channel(true);
        let timeout = Duration::from_millis(300);
        let claim = || Fence::new(Instant::now() + Duration::from_secs(60), leadership.clone());
        let send = |name: &'static str, fence: Fence| {
            let delivery = delivery.clone();
            tokio::spawn(async move {
                delivery
                    .deliver(completion(name), true, timeout, fence)
                    .await
            })
        };
        let first = send("first", claim());
        tokio::time::sleep(Duration::from_millis(50)).await;
        let queued: Vec<_> = ["second", "third"]
            .into_iter()
            .map(|n| send(n, claim()))
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        lease.send(false).unwrap();
        assert!(matches!(
            first.await.unwrap(),
            Err(DeliveryError::Sink(SinkError::Timeout(_)))
        ));
        for job in queued {
            let result = job.await.unwrap();
            assert!(
                matches!(result, Err(DeliveryError::Fenced(_))),
                "{result:?}"
            );
        }
        assert_eq!(
            posts.load(Ordering::SeqCst),
            1,
            "only the job sent before the move"
        );

        // Leadership back, but a claim with less than the request timeout left.
        lease.send(true).unwrap();
        let short = Fence::new(
            Instant::now() + Duration::from_millis(200),
            leadership.clone(),
        );
        let result = send("short", short).await.unwrap();
        assert!(
            matches!(result, Err(DeliveryError::Fenced(_))),
            "{result:?}"
        );
        assert_eq!(posts.load(Ordering::SeqCst), 1);
    }

    /// A sink that refuses everything for good, as a stream that does not exist would.
    struct Refusing;

    impl Sink for Refusing {
        fn name(&self) -> &'static str {
            "refusing"
        }

        fn send<'a>(&'a self, _: &'a Notification, _: Duration) -> Sending<'a> {
            Box::pin(async {
                Err(SinkError::Permanent(Reason {
                    text: "no stream".to_owned(),
                    answered: true,
                }))
            })
        }
    }

    /// Deliveries count under the sink's name; only the webhook's under the old name too.
    #[tokio::test]
    async fn each_delivery_counts_under_its_sink_and_the_webhooks_also_under_the_old_name() {
        let metrics = Arc::new(Metrics::new());
        let (url, _) = receiver(Duration::ZERO).await;
        let webhook = Arc::new(Webhook::new(&url, &Default::default()).unwrap());
        let fence = || {
            Fence::new(
                Instant::now() + Duration::from_secs(60),
                watch::channel(true).1,
            )
        };
        let timeout = Duration::from_secs(5);
        for sink in [webhook as Arc<dyn Sink>, Arc::new(Refusing)] {
            let (delivery, pools) = Delivery::new(sink, 1, 1, metrics.clone());
            tokio::spawn(pools.run());
            let _ = delivery
                .deliver(completion("one"), false, timeout, fence())
                .await;
        }
        let deliveries = &metrics.exit;
        let by_sink = |sink: &str, outcome: &str| {
            let labels = crate::metrics::SinkOutcomeLabels {
                sink: sink.to_owned(),
                outcome: outcome.to_owned(),
            };
            deliveries.deliveries.get_or_create(&labels).get()
        };
        assert_eq!(by_sink("webhook", "ok"), 1);
        assert_eq!(by_sink("refusing", "permanent"), 1);
        let old = |outcome: &str| {
            let label = crate::metrics::OutcomeLabel {
                outcome: outcome.to_owned(),
            };
            deliveries.webhook_requests.get_or_create(&label).get()
        };
        assert_eq!((old("ok"), old("rejected")), (1, 0));
    }
}
