//! Liveness, readiness and metrics over HTTP. `/healthz` answers while the process serves;
//! `/readyz` says whether the loops can be trusted: every loop listed its objects once, and no
//! loop's watch has been failing for longer than the grace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::metrics::Metrics;

pub struct Readiness {
    waiting: Mutex<BTreeSet<&'static str>>,
    failing: Mutex<BTreeMap<String, Failing>>,
    /// Parts that run but do less than they should (the SWF loop writing nothing), with a
    /// short reason: said by `/readyz`, which stays ready (the other loops serve).
    degraded: Mutex<BTreeMap<&'static str, String>>,
    grace: Duration,
}

/// A watch failing since `since`; `error` is its latest failure.
#[derive(Clone, Debug)]
pub struct Failing {
    pub since: Instant,
    pub error: String,
}

impl Readiness {
    /// `grace`: how long a watch may keep failing before the loop counts as unready.
    pub fn new(grace: Duration) -> Self {
        Readiness {
            waiting: Mutex::default(),
            failing: Mutex::default(),
            degraded: Mutex::default(),
            grace,
        }
    }

    pub fn expect(&self, part: &'static str) {
        self.waiting.lock().expect("readiness lock").insert(part);
    }

    pub fn ready(&self, part: &'static str) {
        if self.waiting.lock().expect("readiness lock").remove(part) {
            tracing::info!(part, "synced");
        }
    }

    /// The parts still waiting for their first list; empty once each has listed.
    pub fn waiting(&self) -> Vec<&'static str> {
        self.waiting
            .lock()
            .expect("readiness lock")
            .iter()
            .copied()
            .collect()
    }

    /// `watch` failed with `error`; it has been failing since its first failure in a row.
    pub fn watch_failed(&self, watch: &str, error: String) {
        let mut failing = self.failing.lock().expect("readiness lock");
        failing
            .entry(watch.to_owned())
            .and_modify(|f| f.error.clone_from(&error))
            .or_insert(Failing {
                since: Instant::now(),
                error,
            });
    }

    /// `watch` listed or delivered an event; returns how long it had been failing, if it was.
    pub fn watch_ok(&self, watch: &str) -> Option<Duration> {
        let mut failing = self.failing.lock().expect("readiness lock");
        failing.remove(watch).map(|f| f.since.elapsed())
    }

    /// `part` runs degraded for `why` (a short label, not an error text), or no longer does.
    pub fn set_degraded(&self, part: &'static str, why: Option<String>) {
        let mut degraded = self.degraded.lock().expect("readiness lock");
        match why {
            Some(why) => degraded.insert(part, why),
            None => degraded.remove(part),
        };
    }

    /// The degraded parts, one line each (`swf: target-not-served ...`).
    pub fn degraded(&self) -> Vec<String> {
        let degraded = self.degraded.lock().expect("readiness lock");
        degraded
            .iter()
            .map(|(part, why)| format!("{part}: {why}"))
            .collect()
    }

    /// Why it is not ready, one line per reason; empty means ready.
    pub fn blockers(&self) -> Vec<String> {
        let waiting = self.waiting.lock().expect("readiness lock").clone();
        let failing = self.failing.lock().expect("readiness lock").clone();
        unready(&waiting, &failing, Instant::now(), self.grace)
    }
}

/// The parts that have not listed yet, and the watches failing for longer than `grace`.
pub fn unready(
    waiting: &BTreeSet<&'static str>,
    failing: &BTreeMap<String, Failing>,
    now: Instant,
    grace: Duration,
) -> Vec<String> {
    let mut reasons = Vec::new();
    if !waiting.is_empty() {
        let parts: Vec<&str> = waiting.iter().copied().collect();
        reasons.push(format!("waiting for: {}", parts.join(", ")));
    }
    for (watch, failure) in failing {
        let failing_for = now.saturating_duration_since(failure.since);
        if failing_for > grace {
            // The error names servers and their answers: it goes to the log, not to whoever can
            // reach this port.
            reasons.push(format!(
                "{watch}: watch failing for {}s (grace {}s); the error is in the log",
                failing_for.as_secs_f64().ceil(),
                grace.as_secs(),
            ));
        }
    }
    reasons
}

#[derive(Clone)]
struct HttpState {
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
) -> anyhow::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(HttpState { metrics, readiness });
    tracing::info!(addr = %listener.local_addr()?, "serving /healthz, /readyz, /metrics");
    axum::serve(listener, app).await?;
    Ok(())
}

async fn readyz(State(state): State<HttpState>) -> (StatusCode, String) {
    let blockers = state.readiness.blockers();
    if blockers.is_empty() {
        let mut body = "ready".to_owned();
        for line in state.readiness.degraded() {
            body.push_str(&format!("\ndegraded: {line}"));
        }
        (StatusCode::OK, body)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, blockers.join("\n"))
    }
}

async fn metrics_text(
    State(state): State<HttpState>,
) -> ([(&'static str, &'static str); 1], String) {
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(since: Instant, error: &str) -> Failing {
        Failing {
            since,
            error: error.into(),
        }
    }

    #[test]
    fn a_watch_failing_within_the_grace_keeps_it_ready_and_past_it_names_the_loop_only() {
        let grace = Duration::from_secs(30);
        let start = Instant::now();
        let watches = BTreeMap::from([(
            "swf".to_owned(),
            failing(
                start,
                "list failed: connection refused (API server https://10.0.0.1/)",
            ),
        )]);
        let none = BTreeSet::new();
        assert!(unready(&none, &watches, start + Duration::from_secs(30), grace).is_empty());
        let reasons = unready(&none, &watches, start + Duration::from_secs(42), grace);
        assert_eq!(
            reasons,
            ["swf: watch failing for 42s (grace 30s); the error is in the log"]
        );
    }

    #[test]
    fn parts_that_never_listed_are_named_first() {
        let start = Instant::now();
        let waiting = BTreeSet::from(["exit", "swf"]);
        let watches = BTreeMap::from([("exit".to_owned(), failing(start, "watch failed"))]);
        let reasons = unready(
            &waiting,
            &watches,
            start + Duration::from_secs(5),
            Duration::from_secs(1),
        );
        assert_eq!(
            reasons,
            [
                "waiting for: exit, swf",
                "exit: watch failing for 5s (grace 1s); the error is in the log"
            ]
        );
    }

    #[test]
    fn a_failure_keeps_its_start_and_a_success_clears_it() {
        let readiness = Readiness::new(Duration::ZERO);
        readiness.watch_failed("swf", "first".into());
        let since = readiness.failing.lock().unwrap()["swf"].since;
        readiness.watch_failed("swf", "second".into());
        let latest = readiness.failing.lock().unwrap()["swf"].clone();
        assert_eq!((latest.since, latest.error.as_str()), (since, "second"));
        assert!(readiness.watch_ok("swf").is_some());
        assert!(readiness.watch_ok("swf").is_none(), "already cleared");
        assert!(readiness.blockers().is_empty());
    }
}
