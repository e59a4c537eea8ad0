//! The default Kubeflow Pipelines policy's decisions, as plain functions.
//!
//! `kfp-default` exports these as its component; a distribution's policy links this crate and
//! adds its own steps (see `kfp-downstream-example`). Native tests and benchmarks call the same
//! functions the component runs.
//!
//! - [`Target`]: which release's compiler a target version gets (the five releases compiled
//!   exactly, and patch releases with the same compiler); anything else is unsupported.
//! - [`Settings`]: the KFP API server variables a render compiles with (`V2_DRIVER_IMAGE`, ...),
//!   on top of the target's environment, parsed and validated from the settings JSON.
//! - [`render_swf`] / [`render_swf_with`]: recover the pipeline a ScheduledWorkflow carries,
//!   compile it for the settings with `kfp-compiler`, wrap it as KFP's API server does, and
//!   stamp it.
//! - [`should_rebuild`]: the rebuild policy applied to stamps and drift.
//! - [`exit_eligibility`]: Argo 4.1's stale-copy rules from the SDK, then the `notify` setting:
//!   which completed workflows get an exit notification.

pub mod args;
mod rebuild;
mod render;
mod settings;
pub mod target;

pub use args::{FlagSpec, FlagStyle};
pub use kfp_compiler;
pub use rebuild::should_rebuild;
pub use render::{LAUNCHER_CONTAINER, rebuild_workflow, render_swf, render_swf_with};
pub use settings::{
    API_SERVER_ENV_KEY, API_SERVER_ENV_UNKNOWN_KEY, Notify, Settings, SettingsProblem,
    render_settings_digest,
};
pub use target::Target;

use pipewarden_guest::workflow::{event_is_completed, exit_handler_of};
use pipewarden_guest::{Eligibility, Tombstone, WorkflowEvent};

/// Exit eligibility: the SDK's Argo 4.1 rules (see [`pipewarden_guest::eligibility`] for the
/// table and the unparseable-resourceVersion choice), then, for a completion they let through,
/// the `notify` setting: with `exit-handler` a workflow without an exit handler is skipped.
///
/// `notify` is asked for only when the answer depends on it (a completion without an exit
/// handler), so the settings are read on that path alone; every other event costs what the
/// ordering rules cost.
pub fn exit_eligibility(
    event: &WorkflowEvent,
    tombstone: Option<&Tombstone>,
    notify: impl FnOnce() -> Notify,
) -> Eligibility {
    let answer = pipewarden_guest::eligibility::argo_exit_eligibility(event, tombstone);
    if answer != Eligibility::Process || !event_is_completed(event) {
        return answer;
    }
    match exit_handler_of(&event.workflow) {
        Ok(Some(_)) => Eligibility::Process,
        Ok(None) => match notify() {
            Notify::All => Eligibility::Process,
            Notify::ExitHandler => Eligibility::Skip(format!(
                "No exit handler (spec.onExit or spec.hooks.exit, nor in a stored workflow \
                 template) and notify is exit-handler; {} is not notified.",
                event.phase
            )),
        },
        // Better one notification too many than a lost one.
        Err(error) => {
            pipewarden_guest::log::warn(&format!(
                "cannot tell whether {}/{} has an exit handler ({error}); notifying",
                event.namespace, event.name
            ));
            Eligibility::Process
        }
    }
}

/// [`exit_eligibility`] with `notify` read from the settings in force (the host's `settings`
/// import; natively, see [`pipewarden_guest::settings::set_native`]): what the exported
/// `exit-eligibility` runs.
pub fn exit_eligibility_with_host_settings(
    event: &WorkflowEvent,
    tombstone: Option<&Tombstone>,
) -> Eligibility {
    exit_eligibility(event, tombstone, || {
        Notify::from_settings(&pipewarden_guest::settings::settings())
    })
}

#[cfg(test)]
pub(crate) mod fixtures;
