//! The custom resources the project works with, their CRDs, and sample objects.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

/// KFP's ScheduledWorkflow CRD, byte-identical to the upstream file.
pub const SWF_CRD: &str = include_str!("../data/crds/kfp-scheduledworkflow-crd.yaml");
/// Argo's Workflow CRD (the minimal one Argo ships), byte-identical to the upstream file.
pub const WORKFLOW_CRD: &str = include_str!("../data/crds/argo-workflow-crd.yaml");

/// A KFP v2 ScheduledWorkflow as KFP 2.17 leaves it (server-set metadata stripped).
pub const SWF_KFP_2_17: &str = include_str!("../data/samples/swf-kfp-2.17.yaml");
/// A completed run spawned by [`SWF_KFP_2_17`].
pub const WORKFLOW_KFP_SUCCEEDED: &str =
    include_str!("../data/samples/workflow-kfp-succeeded.yaml");
/// A running Argo workflow with an exit handler.
pub const WORKFLOW_NOTIFY_RUNNING: &str =
    include_str!("../data/samples/workflow-notify-running.yaml");

/// `scheduledworkflows.kubeflow.org/v1beta1`.
pub fn swf_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("kubeflow.org", "v1beta1", "ScheduledWorkflow");
    ApiResource::from_gvk_with_plural(&gvk, "scheduledworkflows")
}

/// `workflows.argoproj.io/v1alpha1`.
pub fn workflow_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Workflow");
    ApiResource::from_gvk_with_plural(&gvk, "workflows")
}

/// `tests/data` in this repository.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// Parses one YAML document into a dynamic object.
pub fn parse_object(yaml: &str) -> Result<DynamicObject> {
    serde_yaml::from_str(yaml).context("parsing a Kubernetes object from YAML")
}
