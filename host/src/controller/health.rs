//! Liveness, readiness and metrics over HTTP.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::metrics::Metrics;

/// Ready once every loop that was started has synced its cache.
#[derive(Default)]
pub struct Readiness {
    waiting: Mutex<BTreeSet<&'static str>>,
}

impl Readiness {
    pub fn expect(&self, part: &'static str) {
        self.waiting.lock().expect("readiness lock").insert(part);
    }

    pub fn ready(&self, part: &'static str) {
        if self.waiting.lock().expect("readiness lock").remove(part) {
            tracing::info!(part, "synced");
        }
    }

    /// The parts still being waited for; empty means ready.
    pub fn waiting(&self) -> Vec<&'static str> {
        self.waiting
            .lock()
            .expect("readiness lock")
            .iter()
            .copied()
            .collect()
    }
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
    let waiting = state.readiness.waiting();
    if waiting.is_empty() {
        (StatusCode::OK, "ready".into())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("waiting for: {}", waiting.join(", ")),
        )
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
