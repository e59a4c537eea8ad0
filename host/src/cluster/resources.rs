//! The custom resources pipewarden reads and writes, for `run` and `plan` alike.

use kube::api::{ApiResource, GroupVersionKind};

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
