//! A kube client layer that lets a test decide, request by request, to pass it on, hold it
//! forever, or answer it itself: partitions and refusals without a fake API server.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use kube::client::{Body, DynBody};
use tower::{BoxError, Layer, Service};

pub type Answer = Response<Box<DynBody>>;

/// A `Status` failure as the API server sends it: `code` with its `reason` and `message`.
pub fn status_answer(code: StatusCode, reason: &str, message: &str) -> Answer {
    let status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16()
    });
    let body = Body::from(status.to_string().into_bytes()).map_err(|e| Box::new(e) as BoxError);
    let mut response = Response::new(Box::new(body) as Box<DynBody>);
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// What to do with one request.
pub enum Verdict {
    Pass,
    /// Never answer, as across a partition where nothing comes back.
    Hang,
    Respond(Answer),
}

/// A layer deciding each request with `F`.
pub struct Intercept<F>(Arc<F>);

impl<F> Intercept<F>
where
    F: Fn(&Request<Body>) -> Verdict + Send + Sync + 'static,
{
    pub fn new(decide: F) -> Self {
        Intercept(Arc::new(decide))
    }
}

impl<S, F> Layer<S> for Intercept<F> {
    type Service = Intercepted<S, F>;

    fn layer(&self, inner: S) -> Self::Service {
        Intercepted {
            inner,
            decide: self.0.clone(),
        }
    }
}

pub struct Intercepted<S, F> {
    inner: S,
    decide: Arc<F>,
}

impl<S, F> Service<Request<Body>> for Intercepted<S, F>
where
    S: Service<Request<Body>, Response = Answer, Error = BoxError>,
    S::Future: Send + 'static,
    F: Fn(&Request<Body>) -> Verdict,
{
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        match (self.decide)(&request) {
            Verdict::Pass => Box::pin(self.inner.call(request)),
            Verdict::Hang => Box::pin(futures::future::pending()),
            Verdict::Respond(answer) => Box::pin(async { Ok(answer) }),
        }
    }
}
