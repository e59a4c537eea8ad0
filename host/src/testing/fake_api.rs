//! A scripted fake Kubernetes API server behind a real `kube::Client`, in the manner of kube-rs
//! `controller-rs`'s `ApiServerVerifier`: the test lists the requests it expects, in order, with
//! the answer to each; every request is recorded with its body. An unexpected request is
//! answered 500 and recorded as such, so a test sees exactly what a loop sent. Event creations
//! (`events.k8s.io` and core) are answered 201 on their own and kept apart: they are the loops'
//! reports, which a test checks separately.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use kube::client::Body;
use serde_json::{Value, json};

/// One request as the fake server received it.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: Method,
    /// Path and query, e.g. `/apis/kubeflow.org/v1beta1/namespaces/ns/scheduledworkflows/a`.
    pub uri: String,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

struct Step {
    method: Method,
    /// The path must end with this (query ignored).
    path_suffix: String,
    status: StatusCode,
    answer: Value,
}

#[derive(Default)]
struct State {
    script: VecDeque<Step>,
    received: Vec<Received>,
    unexpected: Vec<Received>,
    events: Vec<Value>,
}

#[derive(Clone, Default)]
pub struct FakeApi {
    state: Arc<Mutex<State>>,
}

impl FakeApi {
    pub fn new() -> Self {
        Self::default()
    }

    /// Expects `method` on a path ending with `path_suffix` next; answers `status` with `answer`.
    pub fn expect(&self, method: Method, path_suffix: &str, status: u16, answer: Value) -> &Self {
        self.lock().script.push_back(Step {
            method,
            path_suffix: path_suffix.to_owned(),
            status: StatusCode::from_u16(status).expect("a status code"),
            answer,
        });
        self
    }

    /// A client whose every request reaches this server.
    pub fn client(&self) -> kube::Client {
        let server = self.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let server = server.clone();
            async move { Ok::<_, std::convert::Infallible>(server.answer(request).await) }
        });
        kube::Client::new(service, "default")
    }

    /// Every scripted request received, in order (Events excluded).
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// Bodies of the Events created.
    pub fn events(&self) -> Vec<Value> {
        self.lock().events.clone()
    }

    /// Panics unless every step was reached and nothing else was asked.
    pub fn assert_done(&self) {
        let state = self.lock();
        assert!(
            state.unexpected.is_empty(),
            "unexpected requests: {:#?}",
            state.unexpected
        );
        assert!(
            state.script.is_empty(),
            "{} scripted request(s) never came; received {:#?}",
            state.script.len(),
            state.received
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn answer(&self, request: Request<Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let bytes = body
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .unwrap_or_default();
        let received = Received {
            method: parts.method.clone(),
            uri: parts.uri.to_string(),
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        };
        let path = parts.uri.path();
        let mut state = self.lock();
        if parts.method == Method::POST && path.ends_with("/events") {
            state.events.push(received.body.clone());
            return respond(StatusCode::CREATED, received.body);
        }
        let matches = state
            .script
            .front()
            .is_some_and(|step| step.method == parts.method && path.ends_with(&step.path_suffix));
        if !matches {
            state.unexpected.push(received.clone());
            let message = format!("unscripted request: {} {}", received.method, received.uri);
            return respond(
                StatusCode::INTERNAL_SERVER_ERROR,
                status(500, "InternalError", &message),
            );
        }
        let step = state.script.pop_front().expect("checked above");
        state.received.push(received);
        respond(step.status, step.answer)
    }
}

/// A `Status` failure body as the API server sends it.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code
    })
}

fn respond(code: StatusCode, body: Value) -> Response<Body> {
    let mut response = Response::new(Body::from(body.to_string().into_bytes()));
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
