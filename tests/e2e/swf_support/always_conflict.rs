//! A client layer that answers every SWF patch with 409 Conflict, as if another writer always got
//! there first: the deterministic way to see the controller run out of conflict retries.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use kube::client::{Body, DynBody};
use serde_json::json;
use tower::{BoxError, Layer, Service};

#[derive(Clone, Copy, Default)]
pub struct AlwaysConflictLayer;

impl<S> Layer<S> for AlwaysConflictLayer {
    type Service = AlwaysConflict<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AlwaysConflict { inner }
    }
}

pub struct AlwaysConflict<S> {
    inner: S,
}

type Answer = Response<Box<DynBody>>;

impl<S> Service<Request<Body>> for AlwaysConflict<S>
where
    S: Service<Request<Body>, Response = Answer, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let refused = request.method() == Method::PATCH
            && request.uri().path().contains("/scheduledworkflows/");
        if !refused {
            return Box::pin(self.inner.call(request));
        }
        Box::pin(async { Ok(conflict()) })
    }
}

/// The Status the apiserver sends for a stale resourceVersion.
fn conflict() -> Answer {
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": "the object has been modified; please apply your changes to the latest version and try again",
        "reason": "Conflict",
        "code": 409
    });
    let body = Body::from(status.to_string().into_bytes()).map_err(|e| Box::new(e) as BoxError);
    let mut response = Response::new(Box::new(body) as Box<DynBody>);
    *response.status_mut() = StatusCode::CONFLICT;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
