//! A webhook receiver on loopback that records every delivery: its idempotency key and body.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;

/// One accepted delivery.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub key: String,
    pub body: Value,
}

#[derive(Default)]
struct Inbox {
    requests: AtomicUsize,
    /// Requests answered 503 before the receiver starts accepting.
    refuse_first: usize,
    /// The idempotency key of every request, refused ones included.
    keys: Mutex<Vec<String>>,
    accepted: Mutex<Vec<Delivery>>,
}

#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    inbox: Arc<Inbox>,
}

impl Receiver {
    /// Listens on a free loopback port until the test's runtime ends.
    pub async fn start() -> Result<Receiver> {
        Receiver::refusing_first(0).await
    }

    /// A receiver that answers its first `count` requests with 503 Service Unavailable.
    pub async fn refusing_first(count: usize) -> Result<Receiver> {
        let inbox = Arc::new(Inbox {
            refuse_first: count,
            ..Inbox::default()
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/exit", listener.local_addr()?);
        let app = Router::new()
            .route("/exit", post(receive))
            .with_state(inbox.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Receiver { url, inbox })
    }

    /// The `--exit-webhook-url` flag for this receiver.
    pub fn flag(&self) -> String {
        format!("--exit-webhook-url={}", self.url)
    }

    /// Every request, refused ones included.
    pub fn requests(&self) -> usize {
        self.inbox.requests.load(Ordering::SeqCst)
    }

    /// The idempotency key of every request, in arrival order.
    pub fn request_keys(&self) -> Vec<String> {
        self.inbox.keys.lock().expect("inbox").clone()
    }

    pub fn accepted(&self) -> Vec<Delivery> {
        self.inbox.accepted.lock().expect("inbox").clone()
    }

    /// Accepted deliveries per idempotency key.
    pub fn per_key(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for delivery in self.accepted() {
            *counts.entry(delivery.key).or_default() += 1;
        }
        counts
    }
}

async fn receive(State(inbox): State<Arc<Inbox>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let key = headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    inbox.keys.lock().expect("inbox").push(key.clone());
    if inbox.requests.fetch_add(1, Ordering::SeqCst) < inbox.refuse_first {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    inbox
        .accepted
        .lock()
        .expect("inbox")
        .push(Delivery { key, body });
    StatusCode::OK
}
