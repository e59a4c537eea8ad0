//! A client layer that answers every SWF patch with 409 Conflict, as if another writer always got
//! there first: the deterministic way to see the controller run out of conflict retries.

use crate::intercept::{Answer, Intercept, Verdict, status_answer};
use http::{Method, Request, StatusCode};
use kube::client::Body;

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
    status_answer(
        StatusCode::CONFLICT,
        "Conflict",
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}
