//! The default Kubeflow Pipelines policy's decisions, as plain functions.
//!
//! `kfp-default` exports these as its component; a distribution's policy links this crate and
//! adds its own steps (see `kfp-downstream-example`). Native tests and benchmarks call the same
//! functions the component runs.
//!
//! - [`Settings`]: what a render migrates to (driver and launcher images, driver flags, service
//!   account), parsed and validated from the settings JSON.
//! - [`render_swf`] / [`render_swf_with`]: migrate the workflow embedded in a ScheduledWorkflow and
//!   stamp it.
//! - [`should_rebuild`]: the rebuild policy applied to stamps and drift.
//! - [`exit_eligibility`]: Argo 4.1's stale-copy rules from the SDK.

pub mod args;
mod rebuild;
mod render;
mod settings;

pub use rebuild::should_rebuild;
pub use render::{LAUNCHER_CONTAINER, migrate_workflow, render_swf, render_swf_with};
pub use settings::{
    DriverKind, DriverSettings, FlagSpec, FlagStyle, InputSpec, LauncherSettings, Settings,
};

use pipewarden_guest::{Eligibility, Tombstone, WorkflowEvent};

/// Exit eligibility: the SDK's Argo 4.1 rules, unchanged (see
/// [`pipewarden_guest::eligibility`] for the table and the unparseable-resourceVersion choice).
pub fn exit_eligibility(event: &WorkflowEvent, tombstone: Option<&Tombstone>) -> Eligibility {
    pipewarden_guest::eligibility::argo_exit_eligibility(event, tombstone)
}

#[cfg(test)]
pub(crate) mod fixtures;
