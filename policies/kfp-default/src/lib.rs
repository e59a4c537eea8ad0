//! The default pipewarden policy for Kubeflow Pipelines.
//!
//! Renders ScheduledWorkflows by recompiling the pipeline they carry with the target KFP
//! release's own compiler (ported in `kfp-compiler`: 2.14.4 to 2.17.0, exactly) for that
//! release's environment (its default install, `settings/kfp-<version>.json`, or the API
//! server's own, read live by the host) and the variables its settings name (see the README);
//! a target it cannot compile for exactly is never rendered. Decides rebuilds from the version and
//! render-hash stamps, applies Argo 4.1's stale-copy rules to workflow events and notifies the
//! completions its `notify` setting names (workflows with an exit handler, or all). The logic
//! is in [`kfp_core`], where native callers (tests, benchmarks) should reach it; this crate
//! only exports it as the component.

use pipewarden_guest::{
    Eligibility, Policy, RebuildDecision, RebuildInput, RenderContext, Tombstone, WorkflowEvent,
};

pub use kfp_core;
use kfp_core::Settings;

/// The default policy, as exported by this component.
pub struct KfpDefault;

impl Policy for KfpDefault {
    fn validate_settings(settings: String) -> Result<(), String> {
        let settings = Settings::parse(&settings)?;
        for (given, likely) in settings.misspelt_keys() {
            pipewarden_guest::log::warn(&format!(
                "settings key {given:?} is read by nothing and ignored; did you mean {likely:?}?"
            ));
        }
        settings.validate()
    }

    fn should_rebuild(input: RebuildInput) -> RebuildDecision {
        kfp_core::should_rebuild(&input)
    }

    fn render_swf(swf: String, context: RenderContext) -> Result<String, String> {
        let settings = Settings::parse(&context.settings)?;
        kfp_core::render_swf(&swf, context.target_version.as_deref(), &settings)
    }

    fn exit_eligibility(event: WorkflowEvent, tombstone: Option<Tombstone>) -> Eligibility {
        kfp_core::exit_eligibility_with_host_settings(&event, tombstone.as_ref())
    }
}

pipewarden_guest::export_policy!(KfpDefault);
