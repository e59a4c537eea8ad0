//! A client layer that answers every SWF patch with 409 Conflict, as if another writer always got
//! there first: the deterministic way to see the controller run out of conflict retries.

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use kube::client::{Body, DynBody};
use pipewarden_tests::intercept::{Answer, Intercept, Verdict};
use serde_json::json;
use tower::BoxError;

/// Answers every SWF patch with a conflict; passes everything else on.
pub fn always_conflict() -> Intercept<impl Fn(&Request<Body>) -> Verdict + Send + Sync + 'static> {
    Intercept::new(|request| {
        let refused = request.method() == Method::PATCH
            && request.uri().path().contains("/scheduledworkflows/");
        if refused {
            Verdict::Respond(conflict())
        } else {
            Verdict::Pass
        }
    })
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
