//! Message tables of `ml_pipelines` (`api/v2alpha1/pipeline_spec.proto` at KFP 2.17.0): the platform spec
//! document that follows a pipeline spec in an IR file.

use super::Label::{Explicit, Implicit, Map};
use super::Ty::{Int32, Message as Msg, Struct};
use super::{Message, Ty, field};
use crate::release::Release;

const STRING: Ty = Ty::String;

/// The document after the pipeline spec in an IR file.
pub static PLATFORM_SPEC: Message = Message {
    name: "PlatformSpec",
    fields: &[field(
        "platforms",
        "platforms",
        Msg(&SINGLE_PLATFORM_SPEC),
        Map,
    )],
};

pub static SINGLE_PLATFORM_SPEC: Message = Message {
    name: "SinglePlatformSpec",
    fields: &[
        field(
            "deploymentSpec",
            "deployment_spec",
            Msg(&PLATFORM_DEPLOYMENT_CONFIG),
            Explicit,
        ),
        field("platform", "platform", STRING, Implicit),
        field("config", "config", Struct, Explicit),
        // Declared in camelCase in the .proto, so both names are the same.
        field(
            "pipelineConfig",
            "pipelineConfig",
            Msg(&PIPELINE_CONFIG),
            Explicit,
        ),
    ],
};

static PLATFORM_DEPLOYMENT_CONFIG: Message = Message {
    name: "PlatformDeploymentConfig",
    fields: &[field("executors", "executors", Struct, Map)],
};

/// Renumbered twice: 2.14.4 had `semaphoreKey`, `mutexName`, `resourceTtl`, `workspace`;
/// 2.15.0 kept `resourceTtl` and `workspace`; 2.17.0 renamed `resourceTtl` to
/// `resourceTtlOnCompletion` and added the others (kubeflow/pipelines#13184, #13187).
static PIPELINE_CONFIG: Message = Message {
    name: "PipelineConfig",
    fields: &[
        field("semaphoreKey", "semaphore_key", STRING, Implicit).until(Release::V2_14_4),
        field("mutexName", "mutex_name", STRING, Implicit).until(Release::V2_14_4),
        field("resourceTtl", "resource_ttl", Int32, Implicit).until(Release::V2_16_1),
        field(
            "resourceTtlOnCompletion",
            "resource_ttl_on_completion",
            Int32,
            Implicit,
        )
        .since(Release::V2_17_0),
        field("workspace", "workspace", Msg(&WORKSPACE_CONFIG), Explicit),
        field(
            "resourceTtlOnSuccess",
            "resource_ttl_on_success",
            Int32,
            Implicit,
        )
        .since(Release::V2_17_0),
        field(
            "resourceTtlOnFailure",
            "resource_ttl_on_failure",
            Int32,
            Implicit,
        )
        .since(Release::V2_17_0),
        field(
            "activeDeadlineSeconds",
            "active_deadline_seconds",
            Int32,
            Implicit,
        )
        .since(Release::V2_17_0),
    ],
};

static WORKSPACE_CONFIG: Message = Message {
    name: "WorkspaceConfig",
    fields: &[
        field("size", "size", STRING, Implicit),
        field(
            "kubernetes",
            "kubernetes",
            Msg(&KUBERNETES_WORKSPACE_CONFIG),
            Explicit,
        ),
    ],
};

static KUBERNETES_WORKSPACE_CONFIG: Message = Message {
    name: "KubernetesWorkspaceConfig",
    fields: &[field("pvcSpecPatch", "pvc_spec_patch", Struct, Explicit)],
};
