//! The default policy for the loops' step tests: the component when `make policies` built it,
//! else the same Rust logic compiled into the test binary, so `cargo test` needs no Wasm build.

use kfp_default::KfpDefault;

use crate::engine::{
    Decisions, Eligibility, Native, Policy, PolicyError, RebuildDecision, RebuildInput,
    RenderContext, SwfCalls, Tombstone, WorkflowEvent,
};

/// What the loops hold as their policy in the crate's tests (see `LoopPolicy`).
pub enum DefaultPolicy {
    Component(Policy),
    Native(Native<KfpDefault>, String),
}

/// Stands in for a digest where no component was loaded.
const NATIVE_DIGEST: &str = "native-kfp-default";

impl From<Policy> for DefaultPolicy {
    fn from(policy: Policy) -> Self {
        DefaultPolicy::Component(policy)
    }
}

impl Clone for DefaultPolicy {
    fn clone(&self) -> Self {
        match self {
            DefaultPolicy::Component(policy) => DefaultPolicy::Component(policy.clone()),
            DefaultPolicy::Native(_, settings) => DefaultPolicy::native(settings),
        }
    }
}

// The component's inherent names, so the loops call either without importing `Decisions`.
impl DefaultPolicy {
    pub fn native(settings: &str) -> Self {
        DefaultPolicy::Native(Native::new(settings), settings.to_owned())
    }

    pub fn digest(&self) -> &str {
        match self {
            DefaultPolicy::Component(policy) => policy.digest(),
            DefaultPolicy::Native(..) => NATIVE_DIGEST,
        }
    }

    pub fn label(&self) -> &str {
        match self {
            DefaultPolicy::Component(policy) => policy.label(),
            DefaultPolicy::Native(..) => "kfp-default (native)",
        }
    }

    pub fn with_settings(&self, settings: &str) -> Self {
        Decisions::with_settings(self, settings)
    }

    pub fn should_rebuild(&self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        Decisions::should_rebuild(self, input)
    }

    pub fn exit_eligibility(
        &self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError> {
        Decisions::exit_eligibility(self, event, tombstone)
    }
}

impl Decisions for DefaultPolicy {
    fn swf_calls(&self) -> Box<dyn SwfCalls + '_> {
        match self {
            DefaultPolicy::Component(policy) => policy.swf_calls(),
            DefaultPolicy::Native(native, _) => native.swf_calls(),
        }
    }

    fn with_settings(&self, settings: &str) -> Self {
        match self {
            DefaultPolicy::Component(policy) => {
                DefaultPolicy::Component(policy.with_settings(settings))
            }
            DefaultPolicy::Native(..) => DefaultPolicy::native(settings),
        }
    }

    fn validate_settings(&self, settings: &str) -> Result<(), PolicyError> {
        match self {
            DefaultPolicy::Component(policy) => policy.validate_settings(settings),
            DefaultPolicy::Native(native, _) => native.validate_settings(settings),
        }
    }

    fn should_rebuild(&self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        match self {
            DefaultPolicy::Component(policy) => policy.should_rebuild(input),
            DefaultPolicy::Native(native, _) => native.should_rebuild(input),
        }
    }

    fn render_swf(&self, swf: &str, context: &RenderContext) -> Result<String, PolicyError> {
        match self {
            DefaultPolicy::Component(policy) => policy.render_swf(swf, context),
            DefaultPolicy::Native(native, _) => native.render_swf(swf, context),
        }
    }

    fn exit_eligibility(
        &self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError> {
        match self {
            DefaultPolicy::Component(policy) => policy.exit_eligibility(event, tombstone),
            DefaultPolicy::Native(native, _) => native.exit_eligibility(event, tombstone),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_native_policy_answers_its_settings_check_as_the_component_would() {
        let native = DefaultPolicy::native("{}");
        assert_eq!(native.digest(), NATIVE_DIGEST);
        let settings = crate::testing::default_settings();
        native
            .validate_settings(&settings)
            .expect("the shipped settings pass");
        assert!(native.validate_settings("not json").is_err());
    }
}
