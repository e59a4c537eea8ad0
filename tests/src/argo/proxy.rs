//! A fault-injecting HTTP proxy in front of the kube-apiserver: the seed-001 stale copy, live.
//!
//! Clients (Argo's controller, pipewarden) talk plain HTTP to the proxy on loopback; it forwards
//! every request to the API server over TLS as the admin and streams the answers back unchanged,
//! except Workflow watch streams of namespaces given a [`Replay`]: once such a stream delivers a
//! completed copy of a workflow (phase Succeeded, Failed or Error), the proxy sends the same stream,
//! after the replay's delay, an older copy of that run as a `MODIFIED` event: the newest copy with
//! phase Running it saw before the completion, with its old resourceVersion. That is what a lagging
//! cache or a relist from a stale API server delivers (Argo #12198). Each stream gets one replay per
//! completion; every replay actually written to a stream is counted ([`StaleProxy::injections`]).
//!
//! The proxy also notes when it first saw each completion go by ([`StaleProxy::completions`]),
//! which is when Argo's controller wrote it, give or take one watch delivery.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxumState;
use axum::response::{IntoResponse as _, Response};
use futures::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::Value;
use tokio::sync::mpsc;

/// Who a request came from, by its User-Agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Consumer {
    /// Argo's workflow controller (`... argo-controller`).
    Argo,
    /// pipewarden, through [`StaleProxy::client_config`].
    Pipewarden,
    Other,
}

impl std::fmt::Display for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Consumer::Argo => "argo",
            Consumer::Pipewarden => "pipewarden",
            Consumer::Other => "other",
        })
    }
}

/// The User-Agent [`StaleProxy::client_config`] sends.
pub const PIPEWARDEN_AGENT: &str = "pipewarden (through the stale-copy proxy)";

fn consumer_of(headers: &HeaderMap) -> Consumer {
    let agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if agent.contains("argo-controller") {
        Consumer::Argo
    } else if agent.starts_with("pipewarden") {
        Consumer::Pipewarden
    } else {
        Consumer::Other
    }
}

/// Stale copies for the workflow watch streams of one namespace.
#[derive(Clone, Debug)]
pub struct Replay {
    /// How long after a stream delivered a completion its stale copy follows.
    pub delay: Duration,
    /// The consumers whose streams get stale copies; empty: all.
    pub to: Vec<Consumer>,
}

impl Replay {
    /// Every consumer's streams, `delay` after each completion.
    pub fn after(delay: Duration) -> Self {
        Replay {
            delay,
            to: Vec::new(),
        }
    }

    fn applies_to(&self, consumer: Consumer) -> bool {
        self.to.is_empty() || self.to.contains(&consumer)
    }
}

/// One stale copy written into a watch stream.
#[derive(Clone, Debug)]
pub struct Injection {
    pub consumer: Consumer,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The stale copy's resourceVersion and phase.
    pub stale_resource_version: u64,
    pub stale_phase: String,
    /// The completed copy it followed.
    pub completed_resource_version: u64,
    pub at: Instant,
}

/// A completion (one run of a workflow reaching Succeeded, Failed or Error), as first seen.
#[derive(Clone, Debug)]
pub struct Completion {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub phase: String,
    pub started_at: String,
    pub resource_version: u64,
    /// When the proxy first saw it in any watch stream.
    pub seen: Instant,
}

/// One copy of a workflow the proxy saw in a watch stream.
struct Copy {
    resource_version: u64,
    phase: String,
    started_at: String,
    object: Arc<Value>,
}

#[derive(Default)]
struct Inner {
    /// Copies per uid, in the order seen.
    copies: HashMap<String, Vec<Copy>>,
    /// Per (uid, startedAt): the first completed copy seen.
    completions: HashMap<(String, String), Completion>,
    replays: HashMap<String, Replay>,
    /// (consumer, uid, startedAt) replays scheduled.
    scheduled: HashSet<(Consumer, String, String)>,
    injections: Vec<Injection>,
    /// Completions in replaying namespaces for which no older Running copy was seen.
    without_stale_copy: u64,
    /// Workflow watch streams opened, per consumer.
    watches: HashMap<Consumer, u64>,
}

struct State {
    upstream: kube::Client,
    inner: Mutex<Inner>,
}

/// The proxy, serving on loopback from the runtime that started it.
pub struct StaleProxy {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    state: Arc<State>,
}

impl StaleProxy {
    /// Listens on a free loopback port and forwards to the API server `upstream` describes
    /// (its credentials replace the client's). Call on the runtime that is to serve it.
    pub async fn start(mut upstream: kube::Config) -> Result<Self> {
        // Long watches pass through; kube must not retry on the clients' behalf.
        upstream.read_timeout = None;
        upstream.default_retry = false;
        let state = Arc::new(State {
            upstream: kube::Client::try_from(upstream)?,
            inner: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let app = Router::new().fallback(forward).with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(StaleProxy { url, state })
    }

    /// From now on, workflow watch streams carrying `namespace` get stale copies as `replay` says.
    pub fn replay(&self, namespace: &str, replay: Replay) {
        self.inner().replays.insert(namespace.to_owned(), replay);
    }

    /// A client configuration for pipewarden through the proxy (no credentials: the proxy adds
    /// them), identifying itself as [`Consumer::Pipewarden`].
    pub fn client_config(&self) -> Result<kube::Config> {
        let mut config = kube::Config::new(self.url.parse().context("the proxy's URL")?);
        config.headers.push((
            http::header::USER_AGENT,
            HeaderValue::from_static(PIPEWARDEN_AGENT),
        ));
        Ok(config)
    }

    /// Every stale copy written into a stream so far.
    pub fn injections(&self) -> Vec<Injection> {
        self.inner().injections.clone()
    }

    /// Stale copies written into `consumer`'s streams for workflows in `namespace`.
    pub fn injected(&self, namespace: &str, consumer: Consumer) -> Vec<Injection> {
        self.injections()
            .into_iter()
            .filter(|i| i.namespace == namespace && i.consumer == consumer)
            .collect()
    }

    /// Completions seen in `namespace`, in no particular order.
    pub fn completions(&self, namespace: &str) -> Vec<Completion> {
        self.inner()
            .completions
            .values()
            .filter(|c| c.namespace == namespace)
            .cloned()
            .collect()
    }

    /// Completions in replaying namespaces that had no older Running copy to replay.
    pub fn without_stale_copy(&self) -> u64 {
        self.inner().without_stale_copy
    }

    /// Workflow watch streams `consumer` opened through the proxy.
    pub fn watch_streams(&self, consumer: Consumer) -> u64 {
        self.inner().watches.get(&consumer).copied().unwrap_or(0)
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.state.inner.lock().expect("proxy state")
    }
}

type Body = axum::body::Body;

async fn forward(AxumState(state): AxumState<Arc<State>>, request: Request<Body>) -> Response {
    match forward_request(state, request).await {
        Ok(response) => response,
        Err(e) => (StatusCode::BAD_GATEWAY, format!("stale-copy proxy: {e:#}")).into_response(),
    }
}

/// Hop-by-hop headers, and those the upstream client sets itself.
const DROPPED_REQUEST_HEADERS: [&str; 10] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "authorization",
    "content-length",
    // Answers stay uncompressed, so watch streams can be read line by line.
    "accept-encoding",
];
const DROPPED_RESPONSE_HEADERS: [&str; 4] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
];

async fn forward_request(state: Arc<State>, request: Request<Body>) -> Result<Response> {
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .context("reading the request body")?;
    let consumer = consumer_of(&parts.headers);
    let workflow_watch = is_workflow_watch(&parts.method, &parts.uri);
    for name in DROPPED_REQUEST_HEADERS {
        parts.headers.remove(name);
    }
    let upstream = Request::from_parts(parts, kube::client::Body::from(bytes.to_vec()));
    let answer = state
        .upstream
        .send(upstream)
        .await
        .context("sending to the API server")?;
    let (mut parts, body) = answer.into_parts();
    for name in DROPPED_RESPONSE_HEADERS {
        parts.headers.remove(HeaderName::from_static(name));
    }
    let body = if workflow_watch && parts.status == StatusCode::OK {
        *state
            .inner
            .lock()
            .expect("proxy state")
            .watches
            .entry(consumer)
            .or_default() += 1;
        replaying(state, consumer, body)
    } else {
        Body::new(body)
    };
    Ok(Response::from_parts(parts, body))
}

/// `GET .../argoproj.io/v1alpha1/[namespaces/NS/]workflows?watch=true`.
fn is_workflow_watch(method: &Method, uri: &http::Uri) -> bool {
    if method != Method::GET {
        return false;
    }
    let watching = uri.query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    });
    let path = uri.path();
    let Some(rest) = path.strip_prefix("/apis/argoproj.io/v1alpha1/") else {
        return false;
    };
    let collection = match rest.strip_prefix("namespaces/") {
        Some(namespaced) => namespaced.split_once('/').map(|(_, c)| c),
        None => Some(rest),
    };
    watching && collection == Some("workflows")
}

enum Out {
    Line(Bytes),
    Stale(Bytes, Injection),
}

/// The watch stream as the client gets it: upstream's events, line by line, with stale copies
/// merged in after their delay.
fn replaying(state: Arc<State>, consumer: Consumer, upstream: kube::client::Body) -> Body {
    let (tell, mut lines) = mpsc::channel::<Out>(256);
    tokio::spawn(read_events(state.clone(), consumer, upstream, tell));
    let stream = futures::stream::poll_fn(move |cx| lines.poll_recv(cx)).map(move |out| {
        Ok::<_, Infallible>(match out {
            Out::Line(line) => line,
            Out::Stale(line, mut injection) => {
                injection.at = Instant::now();
                state
                    .inner
                    .lock()
                    .expect("proxy state")
                    .injections
                    .push(injection);
                line
            }
        })
    });
    Body::from_stream(stream)
}

async fn read_events(
    state: Arc<State>,
    consumer: Consumer,
    mut upstream: kube::client::Body,
    tell: mpsc::Sender<Out>,
) {
    let mut pending: Vec<u8> = Vec::new();
    while let Some(frame) = upstream.frame().await {
        let Ok(frame) = frame else { break };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            observe(&state, consumer, &line, &tell);
            if tell.send(Out::Line(line.into())).await.is_err() {
                return;
            }
        }
    }
    if !pending.is_empty() {
        let _ = tell.send(Out::Line(pending.into())).await;
    }
}

fn complete(phase: &str) -> bool {
    matches!(phase, "Succeeded" | "Failed" | "Error")
}

/// Records the copy an event carries; for a completion in a replaying namespace, schedules this
/// stream's stale copy.
fn observe(state: &State, consumer: Consumer, line: &[u8], tell: &mpsc::Sender<Out>) {
    let Ok(event) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    if !matches!(
        event["type"].as_str(),
        Some("ADDED" | "MODIFIED" | "DELETED")
    ) {
        return;
    }
    let object = &event["object"];
    let meta = &object["metadata"];
    let (Some(uid), Some(namespace), Some(name)) = (
        meta["uid"].as_str(),
        meta["namespace"].as_str(),
        meta["name"].as_str(),
    ) else {
        return;
    };
    let Some(resource_version) = meta["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse::<u64>().ok())
    else {
        return;
    };
    let phase = object["status"]["phase"].as_str().unwrap_or_default();
    let started_at = object["status"]["startedAt"].as_str().unwrap_or_default();
    let mut inner = state.inner.lock().expect("proxy state");
    let copies = inner.copies.entry(uid.to_owned()).or_default();
    if !copies
        .iter()
        .any(|c| c.resource_version == resource_version)
    {
        copies.push(Copy {
            resource_version,
            phase: phase.to_owned(),
            started_at: started_at.to_owned(),
            object: Arc::new(object.clone()),
        });
    }
    if !complete(phase) {
        return;
    }
    let run = (uid.to_owned(), started_at.to_owned());
    inner
        .completions
        .entry(run.clone())
        .or_insert_with(|| Completion {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
            phase: phase.to_owned(),
            started_at: started_at.to_owned(),
            resource_version,
            seen: Instant::now(),
        });
    let Some(replay) = inner.replays.get(namespace).cloned() else {
        return;
    };
    if !replay.applies_to(consumer)
        || !inner
            .scheduled
            .insert((consumer, run.0.clone(), run.1.clone()))
    {
        return;
    }
    // The newest copy of this run that was still Running, older than the completion.
    let stale = inner.copies[uid]
        .iter()
        .filter(|c| {
            c.resource_version < resource_version
                && c.phase == "Running"
                && c.started_at == started_at
        })
        .max_by_key(|c| c.resource_version)
        .map(|c| (c.resource_version, c.phase.clone(), c.object.clone()));
    let Some((stale_rv, stale_phase, stale_object)) = stale else {
        inner.without_stale_copy += 1;
        return;
    };
    drop(inner);
    let injected = serde_json::json!({"type": "MODIFIED", "object": &*stale_object});
    let mut line = serde_json::to_vec(&injected).expect("an event is JSON");
    line.push(b'\n');
    let injection = Injection {
        consumer,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        stale_resource_version: stale_rv,
        stale_phase,
        completed_resource_version: resource_version,
        at: Instant::now(),
    };
    let tell = tell.clone();
    tokio::spawn(async move {
        tokio::time::sleep(replay.delay).await;
        let _ = tell.send(Out::Stale(line.into(), injection)).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_workflow_watches_are_rewritten() {
        let cases = [
            ("/apis/argoproj.io/v1alpha1/workflows?watch=true", true),
            (
                "/apis/argoproj.io/v1alpha1/namespaces/a/workflows?labelSelector=x&watch=1",
                true,
            ),
            ("/apis/argoproj.io/v1alpha1/namespaces/a/workflows", false),
            (
                "/apis/argoproj.io/v1alpha1/namespaces/a/workflows/w?watch=true",
                false,
            ),
            (
                "/apis/argoproj.io/v1alpha1/namespaces/a/workflowtemplates?watch=true",
                false,
            ),
            ("/api/v1/pods?watch=true", false),
        ];
        for (uri, expected) in cases {
            let uri: http::Uri = uri.parse().unwrap();
            assert_eq!(is_workflow_watch(&Method::GET, &uri), expected, "{uri}");
        }
    }
}
