//! Workflows as Argo leaves them and the two ways to decide on them (the compiled default
//! policy, and the same rules compiled natively), shared by the exit-gate tests and bench.

use pipewarden::engine::native;
use pipewarden::engine::{
    Decisions, Eligibility, PolicyError, RebuildDecision, RebuildInput, RenderContext, Tombstone,
    WorkflowEvent,
};
use serde_json::{Value, json};

pub const U1: &str = "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61";
pub const U2: &str = "0b1c2d3e-5f60-4718-8a9b-0c1d2e3f4a52";
pub const FINISHED: &str = "2026-08-04T01:09:41Z";

/// A Workflow named `nightly-etl` at `rv` in `phase`; complete phases carry the completed
/// label and `finished_at`.
pub fn workflow(uid: &str, rv: &str, phase: &str, finished_at: Option<&str>) -> Value {
    let complete = matches!(phase, "Succeeded" | "Failed" | "Error");
    let mut status = json!({});
    if !phase.is_empty() {
        status["phase"] = json!(phase);
        status["startedAt"] = json!("2026-08-04T01:00:03Z");
    }
    if let Some(at) = finished_at {
        status["finishedAt"] = json!(at);
    }
    json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": "nightly-etl",
            "namespace": "data-eng",
            "uid": uid,
            "resourceVersion": rv,
            "labels": {
                "workflows.argoproj.io/completed": complete.to_string(),
                "workflows.argoproj.io/phase": phase,
            },
        },
        "spec": {"entrypoint": "etl", "onExit": "notify-on-failure"},
        "status": status,
    })
}

/// A completed workflow as Argo leaves it.
pub fn completed(uid: &str, rv: &str, phase: &str) -> Value {
    workflow(uid, rv, phase, Some(FINISHED))
}

/// The event and tombstone as a natively compiled policy takes them.
pub use pipewarden::engine::native::to_guest_event as to_guest;

/// The policy's rules (kfp-core, the default policy's logic) compiled natively; the settings
/// are what `pipewarden_guest::settings::set_native` set on this thread (`{}` by default).
pub fn native(
    event: &WorkflowEvent,
    tombstone: Option<&Tombstone>,
) -> Result<Eligibility, PolicyError> {
    let (event, tombstone) = to_guest(event, tombstone);
    let decided = kfp_core::exit_eligibility_with_host_settings(&event, tombstone.as_ref());
    Ok(native::from_guest_eligibility(decided))
}

/// A policy that answers only exit eligibility, from `decide`: the exit gate takes a policy
/// ([`Decisions`]), and these run it with a decision function (the native rules, a kept
/// instance, a constant) beside the component.
pub struct ExitOnly<F>(std::cell::RefCell<F>);

impl<F> ExitOnly<F>
where
    F: FnMut(&WorkflowEvent, Option<&Tombstone>) -> Result<Eligibility, PolicyError>,
{
    pub fn new(decide: F) -> Self {
        ExitOnly(std::cell::RefCell::new(decide))
    }
}

impl<F> Decisions for ExitOnly<F>
where
    F: FnMut(&WorkflowEvent, Option<&Tombstone>) -> Result<Eligibility, PolicyError>,
{
    fn with_settings(&self, _: &str) -> Self {
        unreachable!("exit eligibility only")
    }
    fn validate_settings(&self, _: &str) -> Result<(), PolicyError> {
        unreachable!("exit eligibility only")
    }
    fn should_rebuild(&self, _: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        unreachable!("exit eligibility only")
    }
    fn render_swf(&self, _: &str, _: &RenderContext) -> Result<String, PolicyError> {
        unreachable!("exit eligibility only")
    }
    fn exit_eligibility(
        &self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError> {
        (self.0.borrow_mut())(event, tombstone)
    }
}
