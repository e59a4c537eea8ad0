//! Faults injected between the controller and the API server with the shared
//! request-intercepting client layer: chosen requests of each step of the action path (the
//! confirming read, the claim and the sent mark, the Event) are answered 500 instead of
//! being passed on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::ControlPlane;
use crate::intercept::{Answer, Intercept, Verdict, status_answer};
use anyhow::Result;
use http::{Method, Request, StatusCode};
use kube::client::{Body, ClientBuilder};

/// A step of the action path, as seen on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// GET of one workflow (the confirming read, or a re-read).
    Read,
    /// A PATCH of a workflow until one got through: the claim.
    Claim,
    /// A PATCH of a workflow once a claim got through: the sent (or failed) mark.
    Mark,
    /// POST of an events.k8s.io Event.
    Event,
}

#[derive(Default)]
struct State {
    /// Per step: fail the request when this returns true, given how many of the step's
    /// requests came before it.
    rules: HashMap<Step, Box<dyn Fn(usize) -> bool + Send + Sync>>,
    seen: HashMap<Step, usize>,
    failed: HashMap<Step, usize>,
    /// Workflows (by path) whose claim got through.
    claimed: std::collections::HashSet<String>,
}

/// Which requests fail; cheap to clone, shared with the client it builds.
#[derive(Clone, Default)]
pub struct Faults(Arc<Mutex<State>>);

impl Faults {
    /// Fails the first `count` requests of `step`.
    pub fn fail_first(self, step: Step, count: usize) -> Self {
        self.fail_when(step, move |n| n < count)
    }

    /// Fails the requests of `step` for which `when(n)` holds, n counting from 0.
    pub fn fail_when(
        self,
        step: Step,
        when: impl Fn(usize) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.0
            .lock()
            .expect("faults")
            .rules
            .insert(step, Box::new(when));
        self
    }

    /// Stops failing anything.
    pub fn heal(&self) {
        self.0.lock().expect("faults").rules.clear();
    }

    /// Requests of `step` answered 500.
    pub fn failed(&self, step: Step) -> usize {
        *self
            .0
            .lock()
            .expect("faults")
            .failed
            .get(&step)
            .unwrap_or(&0)
    }

    /// A client for the control plane whose requests go through these faults.
    pub fn client(&self, control_plane: &ControlPlane) -> Result<kube::Client> {
        let faults = self.clone();
        let layer = Intercept::new(move |request| faults.decide(request));
        Ok(ClientBuilder::try_from(control_plane.config().clone())?
            .with_layer(&layer)
            .build())
    }

    fn decide(&self, request: &Request<Body>) -> Verdict {
        let Some(step) = self.step(request) else {
            return Verdict::Pass;
        };
        let mut state = self.0.lock().expect("faults");
        let path = request.uri().path().to_string();
        let step = match step {
            Step::Claim if state.claimed.contains(&path) => Step::Mark,
            other => other,
        };
        let seen = state.seen.entry(step).or_default();
        let n = *seen;
        *seen += 1;
        let fail = state.rules.get(&step).is_some_and(|rule| rule(n));
        if fail {
            *state.failed.entry(step).or_default() += 1;
            return Verdict::Respond(internal_error());
        }
        if step == Step::Claim {
            state.claimed.insert(path);
        }
        Verdict::Pass
    }

    fn step(&self, request: &Request<Body>) -> Option<Step> {
        let path = request.uri().path();
        if path.contains("/apis/events.k8s.io/") && request.method() == Method::POST {
            return Some(Step::Event);
        }
        // One workflow: .../workflows/<name>, not the collection a list or watch reads.
        let (_, name) = path.split_once("/workflows/")?;
        if name.is_empty() || name.contains('/') {
            return None;
        }
        match *request.method() {
            Method::GET => Some(Step::Read),
            Method::PATCH => Some(Step::Claim),
            _ => None,
        }
    }
}

/// What the API server answers when something inside it broke.
fn internal_error() -> Answer {
    status_answer(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "injected fault: etcdserver: request timed out",
    )
}
