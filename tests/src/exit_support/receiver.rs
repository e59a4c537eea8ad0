//! A webhook receiver on loopback that records every request: its idempotency key, CloudEvents
//! headers, body and arrival time, and answers as the test's behaviour says: at once, with an
//! error, slowly, or never.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;

/// One request as the receiver saw it.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub key: String,
    /// `ce-subject`: namespace/name.
    pub subject: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// The body as received, for checking a signature over it.
    pub raw: Bytes,
    pub at: Instant,
}

/// How the receiver answers one request.
#[derive(Clone, Copy, Debug)]
pub enum Answer {
    Status(u16),
    /// The status, after a delay.
    Slow(u16, Duration),
    /// Never: the request is held open until the client gives up.
    Hang,
}

/// Decides each request's answer from the request and how many came before it (any key).
pub type Behaviour = dyn Fn(&Delivery, usize) -> Answer + Send + Sync;

struct Inbox {
    requests: AtomicUsize,
    behaviour: Box<Behaviour>,
    /// Every request, refused ones included.
    seen: Mutex<Vec<Delivery>>,
    /// Requests answered 2xx (a slow 2xx counts, even if the client gave up waiting).
    accepted: Mutex<Vec<Delivery>>,
}

#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    inbox: Arc<Inbox>,
}

impl Receiver {
    /// Accepts everything at once. Listens on a free loopback port until the runtime ends.
    pub async fn start() -> Result<Receiver> {
        Receiver::with(|_, _| Answer::Status(200)).await
    }

    /// A receiver that answers its first `count` requests with 503 Service Unavailable.
    pub async fn refusing_first(count: usize) -> Result<Receiver> {
        Receiver::with(move |_, n| {
            if n < count {
                Answer::Status(503)
            } else {
                Answer::Status(200)
            }
        })
        .await
    }

    pub async fn with(
        behaviour: impl Fn(&Delivery, usize) -> Answer + Send + Sync + 'static,
    ) -> Result<Receiver> {
        let inbox = Arc::new(Inbox {
            requests: AtomicUsize::new(0),
            behaviour: Box::new(behaviour),
            seen: Mutex::default(),
            accepted: Mutex::default(),
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

    /// Every request, in arrival order.
    pub fn seen(&self) -> Vec<Delivery> {
        self.inbox.seen.lock().expect("inbox").clone()
    }

    /// The idempotency key of every request, in arrival order.
    pub fn request_keys(&self) -> Vec<String> {
        self.seen().into_iter().map(|d| d.key).collect()
    }

    /// Requests per idempotency key, refused ones included.
    pub fn requests_per_key(&self) -> BTreeMap<String, usize> {
        count(self.seen())
    }

    pub fn accepted(&self) -> Vec<Delivery> {
        self.inbox.accepted.lock().expect("inbox").clone()
    }

    /// Accepted (2xx) deliveries per idempotency key.
    pub fn per_key(&self) -> BTreeMap<String, usize> {
        count(self.accepted())
    }
}

fn count(deliveries: Vec<Delivery>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for delivery in deliveries {
        *counts.entry(delivery.key).or_default() += 1;
    }
    counts
}

async fn receive(State(inbox): State<Arc<Inbox>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let headers: BTreeMap<String, String> = headers
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_string())))
        .collect();
    let delivery = Delivery {
        key: headers.get("idempotency-key").cloned().unwrap_or_default(),
        subject: headers.get("ce-subject").cloned().unwrap_or_default(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw: body,
        at: Instant::now(),
    };
    inbox.seen.lock().expect("inbox").push(delivery.clone());
    let before = inbox.requests.fetch_add(1, Ordering::SeqCst);
    let (status, delay) = match (inbox.behaviour)(&delivery, before) {
        Answer::Status(status) => (status, None),
        Answer::Slow(status, delay) => (status, Some(delay)),
        Answer::Hang => {
            std::future::pending::<()>().await;
            unreachable!()
        }
    };
    // Acted on before answering: a slow 2xx counts even if the client stopped waiting.
    if (200..300).contains(&status) {
        inbox.accepted.lock().expect("inbox").push(delivery);
    }
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
