//! A component of `pipewarden:policy@0.1.0`, as distributions built them before 0.1.1 added
//! `host.settings`: a host serving 0.1.1 must load it and call every export.

#[allow(clippy::too_many_arguments)] // the canonical ABI flattens records into arguments
mod bindings {
    wit_bindgen::generate!({ path: "wit", world: "policy" });
}

use bindings::pipewarden::policy::host::{LogLevel, log};
use bindings::pipewarden::policy::types::EventKind;
use bindings::{
    Eligibility, RebuildDecision, RebuildInput, RenderContext, Tombstone, WorkflowEvent,
};

struct Contract010;

impl bindings::Guest for Contract010 {
    fn validate_settings(_settings: String) -> Result<(), String> {
        Ok(())
    }

    fn should_rebuild(_input: RebuildInput) -> RebuildDecision {
        log(LogLevel::Info, "a 0.1.0 policy was called");
        RebuildDecision::Skip("built for pipewarden:policy@0.1.0".to_owned())
    }

    fn render_swf(swf: String, _context: RenderContext) -> Result<String, String> {
        Ok(swf)
    }

    fn exit_eligibility(event: WorkflowEvent, tombstone: Option<Tombstone>) -> Eligibility {
        match (event.kind, tombstone) {
            (EventKind::Deleted, _) => Eligibility::Skip("deleted".to_owned()),
            (_, Some(t)) if t.completed => Eligibility::RejectStale("0.1.0 rules".to_owned()),
            _ => Eligibility::Process,
        }
    }
}

bindings::export!(Contract010 with_types_in bindings);
