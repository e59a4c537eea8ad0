//! Webhook delivery throughput through the controller's delivery queue and pools (the
//! production `Delivery`, `Webhook` and CloudEvent), to a loopback receiver: once with every
//! receiver healthy, once with 10% of them hanging (the receiver never answers their
//! requests). Completions arrive at a steady rate; each is delivered with the action path's
//! retry policy (a timed-out receiver is retried in the slow lane with a longer timeout, after
//! a backoff). What counts is the healthy receivers' notification latency, from the moment
//! their completion was handed over to the 2xx answer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use pipewarden::controller::exit_gate::delivery::{Delivery, DeliveryError, Fence};
use pipewarden::controller::exit_gate::{SinkError, Webhook};
use pipewarden::exit::event::WorkflowFacts;
use pipewarden::exit::notification::notification;
use pipewarden::exit::retry::jittered;
use pipewarden::metrics::Metrics;
use serde_json::json;

use super::common;

/// Completions per run, and how fast they come.
const COMPLETIONS: usize = 2_000;
const PER_SECOND: f64 = 200.0;
/// A shorter request timeout than the controller's default (10 s), to keep the run short.
const TIMEOUT: Duration = Duration::from_secs(2);
/// The controller's defaults.
const CONCURRENCY: usize = 256;
const QUEUE: usize = 1024;
const ATTEMPTS: u32 = 3;
const RETRY_DELAY: Duration = Duration::from_secs(2);
const GOAL_RATIO: f64 = 2.0;

pub fn run() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let healthy = runtime.block_on(deliver_all(0));
    let hanging = runtime.block_on(deliver_all(10));
    let ratio = hanging.p99.as_secs_f64() / healthy.p99.as_secs_f64();
    println!(
        "webhook delivery: {COMPLETIONS} completions at {PER_SECOND:.0}/s, request timeout \
         {TIMEOUT:?}, {CONCURRENCY} fresh + {} slow slots, {ATTEMPTS} attempts; latency of the \
         healthy receivers' notifications (handed over -> 2xx)\n",
        CONCURRENCY.div_ceil(4)
    );
    let row = |label: &str, run: &Run, goal: &str, met: &str| {
        vec![
            label.to_string(),
            format!("{:.0}/s", run.throughput),
            format!("{}", run.delivered),
            common::us(run.p50),
            common::us(run.p99),
            format!("{}", run.timeouts),
            goal.to_string(),
            met.to_string(),
        ]
    };
    let goal = format!("p99 <= {GOAL_RATIO:.0}x healthy run");
    let met = if ratio <= GOAL_RATIO { "yes" } else { "NO" };
    common::print_table(
        &[
            "receivers",
            "healthy delivered/s",
            "healthy delivered",
            "healthy p50",
            "healthy p99",
            "timeouts",
            "goal",
            "met",
        ],
        &[
            row("all healthy", &healthy, "-", "-"),
            row(
                &format!("10% hanging (p99 ratio {ratio:.2}x)"),
                &hanging,
                &goal,
                met,
            ),
        ],
    );
}

struct Run {
    delivered: usize,
    throughput: f64,
    p50: Duration,
    p99: Duration,
    timeouts: usize,
}

/// Delivers `COMPLETIONS` notifications, `hanging_percent` of them to receivers that never
/// answer.
async fn deliver_all(hanging_percent: usize) -> Run {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/exit", listener.local_addr().expect("address"));
    let app = Router::new().route("/exit", post(receive));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let metrics = Arc::new(Metrics::new());
    let (delivery, pools) = Delivery::new(
        Arc::new(Webhook::new(&url, &Default::default()).expect("webhook")),
        CONCURRENCY,
        QUEUE,
        metrics.clone(),
    );
    let pools = tokio::spawn(pools.run());
    let delivery = Arc::new(delivery);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..COMPLETIONS {
        // A steady arrival rate, as completions come in a busy cluster.
        let due = started + Duration::from_secs_f64(i as f64 / PER_SECOND);
        tokio::time::sleep_until(due.into()).await;
        let hangs = i % 100 < hanging_percent;
        let name = if hangs {
            format!("hang-{i}")
        } else {
            format!("fine-{i}")
        };
        let delivery = delivery.clone();
        tasks.spawn(async move {
            let handed_over = Instant::now();
            let delivered = deliver_with_retries(&delivery, &name).await;
            (hangs, delivered.then(|| handed_over.elapsed()))
        });
    }
    let mut latencies = Vec::new();
    let mut timeouts = 0;
    while let Some(result) = tasks.join_next().await {
        match result.expect("a delivery task") {
            (false, Some(latency)) => latencies.push(latency),
            (false, None) => panic!("a healthy receiver's notification was not delivered"),
            (true, _) => timeouts += 1,
        }
    }
    let elapsed = started.elapsed();
    pools.abort();
    server.abort();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    Run {
        delivered: latencies.len(),
        throughput: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
        timeouts,
    }
}

/// Leadership that never moves, for the fences.
static LEADER: std::sync::LazyLock<tokio::sync::watch::Sender<bool>> =
    std::sync::LazyLock::new(|| tokio::sync::watch::Sender::new(true));

/// The action path's delivery step and retry policy, without the API server.
async fn deliver_with_retries(delivery: &Delivery, name: &str) -> bool {
    let facts = WorkflowFacts::read(&json!({
        "metadata": {"name": name, "namespace": "bench", "uid": format!("uid-{name}"),
                     "resourceVersion": "110"},
        "status": {"phase": "Failed", "startedAt": "2026-08-04T01:00:03Z",
                   "finishedAt": "2026-08-04T01:09:41Z"},
    }))
    .expect("facts");
    let sent = Arc::new(notification(&facts, "/pipewarden/exit-gate"));
    let mut timeouts = 0u32;
    for attempt in 0..ATTEMPTS {
        let slow = timeouts > 0;
        let timeout = TIMEOUT * 2u32.pow(timeouts.min(2));
        // A claim that holds past every attempt, under a leadership that never moves.
        let fence = Fence::new(
            Instant::now() + Duration::from_secs(3600),
            LEADER.subscribe(),
        );
        match delivery.deliver(sent.clone(), slow, timeout, fence).await {
            Ok(()) => return true,
            Err(DeliveryError::Sink(SinkError::Timeout(_))) => timeouts += 1,
            Err(_) => {}
        }
        if attempt + 1 < ATTEMPTS {
            tokio::time::sleep(jittered(attempt, RETRY_DELAY, RETRY_DELAY * 8)).await;
        }
    }
    false
}

async fn receive(headers: HeaderMap) -> StatusCode {
    let subject = headers
        .get("ce-subject")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if subject.contains("/hang-") {
        std::future::pending::<()>().await;
    }
    StatusCode::OK
}
