//! Message tables of `ml_pipelines` (`api/v2alpha1/pipeline_spec.proto` at KFP 2.17.0): the
//! pipeline spec, its components and tasks, and the `PipelineJob` around it.

use super::Label::{Explicit, Implicit, Map, Oneof, Repeated};
use super::Ty::{Bool, Double, Duration, Enum, Int32, Int64, Message as Msg, Struct, Value};
use super::{Message, Ty, field};
use crate::release::Release;

const STRING: Ty = Ty::String;

const PRIMITIVE_TYPE: Ty = Enum(&["PRIMITIVE_TYPE_UNSPECIFIED", "INT", "DOUBLE", "STRING"]);
const PARAMETER_TYPE: Ty = Enum(&[
    "PARAMETER_TYPE_ENUM_UNSPECIFIED",
    "NUMBER_DOUBLE",
    "NUMBER_INTEGER",
    "STRING",
    "BOOLEAN",
    "LIST",
    "STRUCT",
    "TASK_FINAL_STATUS",
    "TASK_CONFIG",
]);
const TASK_CONFIG_PASSTHROUGH_TYPE: Ty = Enum(&[
    "NONE",
    "RESOURCES",
    "ENV",
    "KUBERNETES_AFFINITY",
    "KUBERNETES_TOLERATIONS",
    "KUBERNETES_NODE_SELECTOR",
    "KUBERNETES_VOLUMES",
]);
pub const TRIGGER_STRATEGY: &[&str] = &[
    "TRIGGER_STRATEGY_UNSPECIFIED",
    "ALL_UPSTREAM_TASKS_SUCCEEDED",
    "ALL_UPSTREAM_TASKS_COMPLETED",
];

pub static PIPELINE_JOB: Message = Message {
    name: "PipelineJob",
    fields: &[
        field("name", "name", STRING, Implicit),
        field("displayName", "display_name", STRING, Implicit),
        field("pipelineSpec", "pipeline_spec", Struct, Explicit),
        field("labels", "labels", STRING, Map),
        field(
            "runtimeConfig",
            "runtime_config",
            Msg(&RUNTIME_CONFIG),
            Explicit,
        ),
    ],
};

pub static RUNTIME_CONFIG: Message = Message {
    name: "PipelineJob.RuntimeConfig",
    fields: &[
        field("parameters", "parameters", Msg(&PIPELINE_VALUE), Map),
        field(
            "gcsOutputDirectory",
            "gcs_output_directory",
            STRING,
            Implicit,
        ),
        field("parameterValues", "parameter_values", Value, Map),
    ],
};

/// `ml_pipelines.Value`, the deprecated typed constant.
static PIPELINE_VALUE: Message = Message {
    name: "Value",
    fields: &[
        field("intValue", "int_value", Int64, Oneof("value")),
        field("doubleValue", "double_value", Double, Oneof("value")),
        field("stringValue", "string_value", STRING, Oneof("value")),
    ],
};

pub static PIPELINE_SPEC: Message = Message {
    name: "PipelineSpec",
    fields: &[
        field(
            "pipelineInfo",
            "pipeline_info",
            Msg(&PIPELINE_INFO),
            Explicit,
        ),
        field("deploymentSpec", "deployment_spec", Struct, Explicit),
        field("sdkVersion", "sdk_version", STRING, Implicit),
        field("schemaVersion", "schema_version", STRING, Implicit),
        field("components", "components", Msg(&COMPONENT_SPEC), Map),
        field("root", "root", Msg(&COMPONENT_SPEC), Explicit),
        field(
            "defaultPipelineRoot",
            "default_pipeline_root",
            STRING,
            Implicit,
        ),
    ],
};

static PIPELINE_INFO: Message = Message {
    name: "PipelineInfo",
    fields: &[
        field("name", "name", STRING, Implicit),
        field("displayName", "display_name", STRING, Implicit),
        field("description", "description", STRING, Implicit),
    ],
};

pub static COMPONENT_SPEC: Message = Message {
    name: "ComponentSpec",
    fields: &[
        field(
            "inputDefinitions",
            "input_definitions",
            Msg(&COMPONENT_INPUTS),
            Explicit,
        ),
        field(
            "outputDefinitions",
            "output_definitions",
            Msg(&COMPONENT_OUTPUTS),
            Explicit,
        ),
        field("dag", "dag", Msg(&DAG_SPEC), Oneof("implementation")),
        field(
            "executorLabel",
            "executor_label",
            STRING,
            Oneof("implementation"),
        ),
        field(
            "singlePlatformSpecs",
            "single_platform_specs",
            Msg(&super::platform::SINGLE_PLATFORM_SPEC),
            Repeated,
        ),
        field(
            "taskConfigPassthroughs",
            "task_config_passthroughs",
            Msg(&TASK_CONFIG_PASSTHROUGH),
            Repeated,
        )
        .since(Release::V2_15_0),
    ],
};

static TASK_CONFIG_PASSTHROUGH: Message = Message {
    name: "TaskConfigPassthrough",
    fields: &[
        field("field", "field", TASK_CONFIG_PASSTHROUGH_TYPE, Implicit),
        field("applyToTask", "apply_to_task", Bool, Implicit),
    ],
};

static DAG_SPEC: Message = Message {
    name: "DagSpec",
    fields: &[
        field("tasks", "tasks", Msg(&PIPELINE_TASK_SPEC), Map),
        field("outputs", "outputs", Msg(&DAG_OUTPUTS), Explicit),
    ],
};

static DAG_OUTPUTS: Message = Message {
    name: "DagOutputsSpec",
    fields: &[
        field("artifacts", "artifacts", Msg(&DAG_OUTPUT_ARTIFACT), Map),
        field("parameters", "parameters", Msg(&DAG_OUTPUT_PARAMETER), Map),
    ],
};

static ARTIFACT_SELECTOR: Message = Message {
    name: "DagOutputsSpec.ArtifactSelectorSpec",
    fields: &[
        field("producerSubtask", "producer_subtask", STRING, Implicit),
        field("outputArtifactKey", "output_artifact_key", STRING, Implicit),
    ],
};

static DAG_OUTPUT_ARTIFACT: Message = Message {
    name: "DagOutputsSpec.DagOutputArtifactSpec",
    fields: &[field(
        "artifactSelectors",
        "artifact_selectors",
        Msg(&ARTIFACT_SELECTOR),
        Repeated,
    )],
};

static PARAMETER_SELECTOR: Message = Message {
    name: "DagOutputsSpec.ParameterSelectorSpec",
    fields: &[
        field("producerSubtask", "producer_subtask", STRING, Implicit),
        field(
            "outputParameterKey",
            "output_parameter_key",
            STRING,
            Implicit,
        ),
    ],
};

static PARAMETER_SELECTORS: Message = Message {
    name: "DagOutputsSpec.ParameterSelectorsSpec",
    fields: &[field(
        "parameterSelectors",
        "parameter_selectors",
        Msg(&PARAMETER_SELECTOR),
        Repeated,
    )],
};

static DAG_OUTPUT_PARAMETER: Message = Message {
    name: "DagOutputsSpec.DagOutputParameterSpec",
    fields: &[
        field(
            "valueFromParameter",
            "value_from_parameter",
            Msg(&PARAMETER_SELECTOR),
            Oneof("kind"),
        ),
        field(
            "valueFromOneof",
            "value_from_oneof",
            Msg(&PARAMETER_SELECTORS),
            Oneof("kind"),
        ),
    ],
};

static COMPONENT_INPUTS: Message = Message {
    name: "ComponentInputsSpec",
    fields: &[
        field(
            "artifacts",
            "artifacts",
            Msg(&INPUT_ARTIFACT_DEFINITION),
            Map,
        ),
        field(
            "parameters",
            "parameters",
            Msg(&INPUT_PARAMETER_DEFINITION),
            Map,
        ),
    ],
};

static INPUT_ARTIFACT_DEFINITION: Message = Message {
    name: "ComponentInputsSpec.ArtifactSpec",
    fields: &[
        field(
            "artifactType",
            "artifact_type",
            Msg(&ARTIFACT_TYPE_SCHEMA),
            Explicit,
        ),
        field("isArtifactList", "is_artifact_list", Bool, Implicit),
        field("isOptional", "is_optional", Bool, Implicit),
        field("description", "description", STRING, Implicit),
    ],
};

static INPUT_PARAMETER_DEFINITION: Message = Message {
    name: "ComponentInputsSpec.ParameterSpec",
    fields: &[
        field("type", "type", PRIMITIVE_TYPE, Implicit),
        field("parameterType", "parameter_type", PARAMETER_TYPE, Implicit),
        field("defaultValue", "default_value", Value, Explicit),
        field("isOptional", "is_optional", Bool, Implicit),
        field("description", "description", STRING, Implicit),
        field("literals", "literals", Value, Repeated).since(Release::V2_16_0),
    ],
};

static COMPONENT_OUTPUTS: Message = Message {
    name: "ComponentOutputsSpec",
    fields: &[
        field(
            "artifacts",
            "artifacts",
            Msg(&OUTPUT_ARTIFACT_DEFINITION),
            Map,
        ),
        field(
            "parameters",
            "parameters",
            Msg(&OUTPUT_PARAMETER_DEFINITION),
            Map,
        ),
    ],
};

static OUTPUT_ARTIFACT_DEFINITION: Message = Message {
    name: "ComponentOutputsSpec.ArtifactSpec",
    fields: &[
        field(
            "artifactType",
            "artifact_type",
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
        field("metadata", "metadata", Struct, Explicit),
        field("isArtifactList", "is_artifact_list", Bool, Implicit),
        field("description", "description", STRING, Implicit),
    ],
};

static OUTPUT_PARAMETER_DEFINITION: Message = Message {
    name: "ComponentOutputsSpec.ParameterSpec",
    fields: &[
        field("type", "type", PRIMITIVE_TYPE, Implicit),
        field("parameterType", "parameter_type", PARAMETER_TYPE, Implicit),
        field("description", "description", STRING, Implicit),
    ],
};

static TASK_INPUTS: Message = Message {
    name: "TaskInputsSpec",
    fields: &[
        field("parameters", "parameters", Msg(&INPUT_PARAMETER_SPEC), Map),
        field("artifacts", "artifacts", Msg(&INPUT_ARTIFACT_SPEC), Map),
    ],
};

static INPUT_ARTIFACT_SPEC: Message = Message {
    name: "TaskInputsSpec.InputArtifactSpec",
    fields: &[
        field(
            "taskOutputArtifact",
            "task_output_artifact",
            Msg(&TASK_OUTPUT_ARTIFACT),
            Oneof("kind"),
        ),
        field(
            "componentInputArtifact",
            "component_input_artifact",
            STRING,
            Oneof("kind"),
        ),
    ],
};

static TASK_OUTPUT_ARTIFACT: Message = Message {
    name: "TaskInputsSpec.InputArtifactSpec.TaskOutputArtifactSpec",
    fields: &[
        field("producerTask", "producer_task", STRING, Implicit),
        field("outputArtifactKey", "output_artifact_key", STRING, Implicit),
    ],
};

/// `TaskInputsSpec.InputParameterSpec`, also used by the Kubernetes platform spec.
pub static INPUT_PARAMETER_SPEC: Message = Message {
    name: "TaskInputsSpec.InputParameterSpec",
    fields: &[
        field(
            "taskOutputParameter",
            "task_output_parameter",
            Msg(&TASK_OUTPUT_PARAMETER),
            Oneof("kind"),
        ),
        field(
            "runtimeValue",
            "runtime_value",
            Msg(&VALUE_OR_RUNTIME_PARAMETER),
            Oneof("kind"),
        ),
        field(
            "componentInputParameter",
            "component_input_parameter",
            STRING,
            Oneof("kind"),
        ),
        field(
            "taskFinalStatus",
            "task_final_status",
            Msg(&TASK_FINAL_STATUS),
            Oneof("kind"),
        ),
        field(
            "parameterExpressionSelector",
            "parameter_expression_selector",
            STRING,
            Implicit,
        ),
    ],
};

/// `TaskInputsSpec.InputParameterSpec.TaskOutputParameterSpec`.
pub static TASK_OUTPUT_PARAMETER: Message = Message {
    name: "TaskInputsSpec.InputParameterSpec.TaskOutputParameterSpec",
    fields: &[
        field("producerTask", "producer_task", STRING, Implicit),
        field(
            "outputParameterKey",
            "output_parameter_key",
            STRING,
            Implicit,
        ),
    ],
};

static TASK_FINAL_STATUS: Message = Message {
    name: "TaskInputsSpec.InputParameterSpec.TaskFinalStatus",
    fields: &[field("producerTask", "producer_task", STRING, Implicit)],
};

pub static PIPELINE_TASK_SPEC: Message = Message {
    name: "PipelineTaskSpec",
    fields: &[
        field("taskInfo", "task_info", Msg(&PIPELINE_TASK_INFO), Explicit),
        field("inputs", "inputs", Msg(&TASK_INPUTS), Explicit),
        field("dependentTasks", "dependent_tasks", STRING, Repeated),
        field(
            "cachingOptions",
            "caching_options",
            Msg(&CACHING_OPTIONS),
            Explicit,
        ),
        field(
            "componentRef",
            "component_ref",
            Msg(&COMPONENT_REF),
            Explicit,
        ),
        field(
            "triggerPolicy",
            "trigger_policy",
            Msg(&TRIGGER_POLICY),
            Explicit,
        ),
        field(
            "artifactIterator",
            "artifact_iterator",
            Msg(&ARTIFACT_ITERATOR),
            Oneof("iterator"),
        ),
        field(
            "parameterIterator",
            "parameter_iterator",
            Msg(&PARAMETER_ITERATOR),
            Oneof("iterator"),
        ),
        field("retryPolicy", "retry_policy", Msg(&RETRY_POLICY), Explicit),
        field(
            "iteratorPolicy",
            "iterator_policy",
            Msg(&ITERATOR_POLICY),
            Explicit,
        ),
    ],
};

static CACHING_OPTIONS: Message = Message {
    name: "PipelineTaskSpec.CachingOptions",
    fields: &[
        field("enableCache", "enable_cache", Bool, Implicit),
        field("cacheKey", "cache_key", STRING, Implicit),
    ],
};

static TRIGGER_POLICY: Message = Message {
    name: "PipelineTaskSpec.TriggerPolicy",
    fields: &[
        field("condition", "condition", STRING, Implicit),
        field("strategy", "strategy", Enum(TRIGGER_STRATEGY), Implicit),
    ],
};

static RETRY_POLICY: Message = Message {
    name: "PipelineTaskSpec.RetryPolicy",
    fields: &[
        field("maxRetryCount", "max_retry_count", Int32, Implicit),
        field("backoffDuration", "backoff_duration", Duration, Explicit),
        field("backoffFactor", "backoff_factor", Double, Implicit),
        field(
            "backoffMaxDuration",
            "backoff_max_duration",
            Duration,
            Explicit,
        ),
    ],
};

static ITERATOR_POLICY: Message = Message {
    name: "PipelineTaskSpec.IteratorPolicy",
    fields: &[field(
        "parallelismLimit",
        "parallelism_limit",
        Int32,
        Implicit,
    )],
};

static ARTIFACT_ITERATOR: Message = Message {
    name: "ArtifactIteratorSpec",
    fields: &[
        field("items", "items", Msg(&ARTIFACT_ITEMS), Explicit),
        field("itemInput", "item_input", STRING, Implicit),
    ],
};

static ARTIFACT_ITEMS: Message = Message {
    name: "ArtifactIteratorSpec.ItemsSpec",
    fields: &[field("inputArtifact", "input_artifact", STRING, Implicit)],
};

static PARAMETER_ITERATOR: Message = Message {
    name: "ParameterIteratorSpec",
    fields: &[
        field("items", "items", Msg(&PARAMETER_ITEMS), Explicit),
        field("itemInput", "item_input", STRING, Implicit),
    ],
};

static PARAMETER_ITEMS: Message = Message {
    name: "ParameterIteratorSpec.ItemsSpec",
    fields: &[
        field("raw", "raw", STRING, Oneof("kind")),
        field("inputParameter", "input_parameter", STRING, Oneof("kind")),
    ],
};

static COMPONENT_REF: Message = Message {
    name: "ComponentRef",
    fields: &[field("name", "name", STRING, Implicit)],
};

static PIPELINE_TASK_INFO: Message = Message {
    name: "PipelineTaskInfo",
    fields: &[field("name", "name", STRING, Implicit)],
};

pub(super) static ARTIFACT_TYPE_SCHEMA: Message = Message {
    name: "ArtifactTypeSchema",
    fields: &[
        field("schemaTitle", "schema_title", STRING, Oneof("kind")),
        field("schemaUri", "schema_uri", STRING, Oneof("kind")),
        field("instanceSchema", "instance_schema", STRING, Oneof("kind")),
        field("schemaVersion", "schema_version", STRING, Implicit),
    ],
};

pub(super) static VALUE_OR_RUNTIME_PARAMETER: Message = Message {
    name: "ValueOrRuntimeParameter",
    fields: &[
        field(
            "constantValue",
            "constant_value",
            Msg(&PIPELINE_VALUE),
            Oneof("value"),
        ),
        field(
            "runtimeParameter",
            "runtime_parameter",
            STRING,
            Oneof("value"),
        ),
        field("constant", "constant", Value, Oneof("value")),
    ],
};
