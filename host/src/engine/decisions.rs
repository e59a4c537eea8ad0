//! The decision seam: what a policy answers, whoever runs it. [`Policy`] answers with the
//! component through the engine; [`super::Native`] with a policy's Rust logic compiled into the
//! caller, so a case file, a test or a benchmark checks both the same way.

use super::{
    Eligibility, Policy, PolicyError, RebuildDecision, RebuildInput, RenderContext, Tombstone,
    WorkflowEvent,
};

pub trait Decisions: Sized {
    /// The same policy, answering its `settings` import with `settings`.
    fn with_settings(&self, settings: &str) -> Self;
    fn validate_settings(&self, settings: &str) -> Result<(), PolicyError>;
    fn should_rebuild(&self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError>;
    fn render_swf(&self, swf: &str, context: &RenderContext) -> Result<String, PolicyError>;
    fn exit_eligibility(
        &self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError>;
}

impl Decisions for Policy {
    fn with_settings(&self, settings: &str) -> Self {
        Policy::with_settings(self, settings)
    }

    fn validate_settings(&self, settings: &str) -> Result<(), PolicyError> {
        Policy::validate_settings(self, settings)
    }

    fn should_rebuild(&self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        Policy::should_rebuild(self, input)
    }

    fn render_swf(&self, swf: &str, context: &RenderContext) -> Result<String, PolicyError> {
        Policy::render_swf(self, swf, context)
    }

    fn exit_eligibility(
        &self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError> {
        Policy::exit_eligibility(self, event, tombstone)
    }
}
