//! Message tables of `ml_pipelines` (`api/v2alpha1/pipeline_spec.proto` at KFP 2.17.0): executors, the
//! `PipelineDeploymentConfig` read from a spec's `deploymentSpec`.

use super::Label::{Explicit, Implicit, Map, Oneof, Repeated};
use super::Ty::{Bool, Double, Int32, Int64, Message as Msg, Struct};
use super::pipeline::{ARTIFACT_TYPE_SCHEMA, VALUE_OR_RUNTIME_PARAMETER};
use super::{Message, Ty, field};
use crate::release::Release;

const STRING: Ty = Ty::String;

/// `PipelineDeploymentConfig`, read from the spec's `deploymentSpec` struct.
pub static DEPLOYMENT_CONFIG: Message = Message {
    name: "PipelineDeploymentConfig",
    fields: &[field("executors", "executors", Msg(&EXECUTOR_SPEC), Map)],
};

static EXECUTOR_SPEC: Message = Message {
    name: "PipelineDeploymentConfig.ExecutorSpec",
    fields: &[
        field(
            "container",
            "container",
            Msg(&CONTAINER_SPEC),
            Oneof("spec"),
        ),
        field("importer", "importer", Msg(&IMPORTER_SPEC), Oneof("spec")),
        field("resolver", "resolver", Msg(&RESOLVER_SPEC), Oneof("spec")),
        field(
            "customJob",
            "custom_job",
            Msg(&CUSTOM_JOB_SPEC),
            Oneof("spec"),
        ),
    ],
};

pub static CONTAINER_SPEC: Message = Message {
    name: "PipelineDeploymentConfig.PipelineContainerSpec",
    fields: &[
        field("image", "image", STRING, Implicit),
        field("command", "command", STRING, Repeated),
        field("args", "args", STRING, Repeated),
        field("lifecycle", "lifecycle", Msg(&LIFECYCLE), Explicit),
        field("resources", "resources", Msg(&RESOURCE_SPEC), Explicit),
        field("env", "env", Msg(&ENV_VAR), Repeated),
    ],
};

static LIFECYCLE: Message = Message {
    name: "PipelineDeploymentConfig.PipelineContainerSpec.Lifecycle",
    fields: &[field(
        "preCacheCheck",
        "pre_cache_check",
        Msg(&LIFECYCLE_EXEC),
        Explicit,
    )],
};

static LIFECYCLE_EXEC: Message = Message {
    name: "PipelineDeploymentConfig.PipelineContainerSpec.Lifecycle.Exec",
    fields: &[
        field("command", "command", STRING, Repeated),
        field("args", "args", STRING, Repeated),
    ],
};

static RESOURCE_SPEC: Message = Message {
    name: "PipelineDeploymentConfig.PipelineContainerSpec.ResourceSpec",
    fields: &[
        field("cpuLimit", "cpu_limit", Double, Implicit),
        field("memoryLimit", "memory_limit", Double, Implicit),
        field("cpuRequest", "cpu_request", Double, Implicit),
        field("memoryRequest", "memory_request", Double, Implicit),
        field("resourceCpuLimit", "resource_cpu_limit", STRING, Implicit),
        field(
            "resourceMemoryLimit",
            "resource_memory_limit",
            STRING,
            Implicit,
        ),
        field(
            "resourceCpuRequest",
            "resource_cpu_request",
            STRING,
            Implicit,
        ),
        field(
            "resourceMemoryRequest",
            "resource_memory_request",
            STRING,
            Implicit,
        ),
        field("accelerator", "accelerator", Msg(&ACCELERATOR), Explicit),
    ],
};

static ACCELERATOR: Message = Message {
    name: "PipelineDeploymentConfig.PipelineContainerSpec.ResourceSpec.AcceleratorConfig",
    fields: &[
        field("type", "type", STRING, Implicit),
        field("count", "count", Int64, Implicit),
        field("resourceType", "resource_type", STRING, Implicit),
        field("resourceCount", "resource_count", STRING, Implicit),
    ],
};

static ENV_VAR: Message = Message {
    name: "PipelineDeploymentConfig.PipelineContainerSpec.EnvVar",
    fields: &[
        field("name", "name", STRING, Implicit),
        field("value", "value", STRING, Implicit),
    ],
};

pub static IMPORTER_SPEC: Message = Message {
    name: "PipelineDeploymentConfig.ImporterSpec",
    fields: &[
        field(
            "artifactUri",
            "artifact_uri",
            Msg(&VALUE_OR_RUNTIME_PARAMETER),
            Explicit,
        ),
        field(
            "typeSchema",
            "type_schema",
            Msg(&ARTIFACT_TYPE_SCHEMA),
            Explicit,
        ),
        field(
            "properties",
            "properties",
            Msg(&VALUE_OR_RUNTIME_PARAMETER),
            Map,
        ),
        field(
            "customProperties",
            "custom_properties",
            Msg(&VALUE_OR_RUNTIME_PARAMETER),
            Map,
        ),
        field("reimport", "reimport", Bool, Implicit),
        field("metadata", "metadata", Struct, Explicit),
        field(
            "downloadToWorkspace",
            "download_to_workspace",
            Bool,
            Implicit,
        )
        .since(Release::V2_15_0),
    ],
};

static RESOLVER_SPEC: Message = Message {
    name: "PipelineDeploymentConfig.ResolverSpec",
    fields: &[field(
        "outputArtifactQueries",
        "output_artifact_queries",
        Msg(&ARTIFACT_QUERY),
        Map,
    )],
};

static ARTIFACT_QUERY: Message = Message {
    name: "PipelineDeploymentConfig.ResolverSpec.ArtifactQuerySpec",
    fields: &[
        field("filter", "filter", STRING, Implicit),
        field("limit", "limit", Int32, Implicit),
    ],
};

static CUSTOM_JOB_SPEC: Message = Message {
    name: "PipelineDeploymentConfig.AIPlatformCustomJobSpec",
    fields: &[field("customJob", "custom_job", Struct, Explicit)],
};
