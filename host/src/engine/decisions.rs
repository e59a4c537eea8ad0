//! The decision seam: what a policy answers, whoever runs it. [`Policy`] answers with the
//! component through the engine; [`super::Native`] with a policy's Rust logic compiled into the
//! caller, so a case file, a test or a benchmark checks both the same way.

use super::{
    Eligibility, Policy, PolicyError, RebuildDecision, RebuildInput, RenderContext, Tombstone,
    WorkflowEvent,
};

/// The calls of one SWF decision: should-rebuild, then render-swf when it asks for one.
pub trait SwfCalls {
    fn should_rebuild(&mut self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError>;
    fn render_swf(&mut self, swf: &str, context: &RenderContext) -> Result<String, PolicyError>;
}

pub trait Decisions: Sized {
    /// One SWF decision's calls. By default each is a decision of its own; [`Policy`] runs
    /// them in one fresh instance (still one per SWF: nothing crosses SWFs).
    fn swf_calls(&self) -> Box<dyn SwfCalls + '_> {
        Box::new(Separate(self))
    }
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

/// Each call on its own.
struct Separate<'a, D>(&'a D);

impl<D: Decisions> SwfCalls for Separate<'_, D> {
    fn should_rebuild(&mut self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        self.0.should_rebuild(input)
    }

    fn render_swf(&mut self, swf: &str, context: &RenderContext) -> Result<String, PolicyError> {
        self.0.render_swf(swf, context)
    }
}

impl Decisions for Policy {
    fn swf_calls(&self) -> Box<dyn SwfCalls + '_> {
        Box::new(self.swf_decision())
    }

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
