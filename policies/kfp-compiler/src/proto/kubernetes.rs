//! Message tables of `kfp_kubernetes.KubernetesExecutorConfig`
//! (`kubernetes_platform/proto/kubernetes_executor_config.proto` at KFP 2.17.0). The compiler
//! parses each executor's platform config with it (strictly) to read the pod metadata.

use super::Label::{Explicit, Implicit, Map, Oneof, Repeated};
use super::Ty::{Bool, Int32, Int64, Message as Msg};
use super::pipeline::{INPUT_PARAMETER_SPEC, TASK_OUTPUT_PARAMETER};
use super::{Message, Ty, field};
use crate::release::Release;

const STRING: Ty = Ty::String;
const PARAMETER: Ty = Msg(&INPUT_PARAMETER_SPEC);

pub static EXECUTOR_CONFIG: Message = Message {
    name: "KubernetesExecutorConfig",
    fields: &[
        field(
            "secretAsVolume",
            "secret_as_volume",
            Msg(&SECRET_AS_VOLUME),
            Repeated,
        ),
        field(
            "secretAsEnv",
            "secret_as_env",
            Msg(&SECRET_AS_ENV),
            Repeated,
        ),
        field("pvcMount", "pvc_mount", Msg(&PVC_MOUNT), Repeated),
        field(
            "nodeSelector",
            "node_selector",
            Msg(&NODE_SELECTOR),
            Explicit,
        ),
        field("podMetadata", "pod_metadata", Msg(&POD_METADATA), Explicit),
        field(
            "imagePullSecret",
            "image_pull_secret",
            Msg(&IMAGE_PULL_SECRET),
            Repeated,
        ),
        field("imagePullPolicy", "image_pull_policy", STRING, Implicit),
        field(
            "configMapAsVolume",
            "config_map_as_volume",
            Msg(&CONFIG_MAP_AS_VOLUME),
            Repeated,
        ),
        field(
            "configMapAsEnv",
            "config_map_as_env",
            Msg(&CONFIG_MAP_AS_ENV),
            Repeated,
        ),
        field(
            "activeDeadlineSeconds",
            "active_deadline_seconds",
            Int64,
            Implicit,
        ),
        field(
            "fieldPathAsEnv",
            "field_path_as_env",
            Msg(&FIELD_PATH_AS_ENV),
            Repeated,
        ),
        field("tolerations", "tolerations", Msg(&TOLERATION), Repeated),
        field(
            "genericEphemeralVolume",
            "generic_ephemeral_volume",
            Msg(&GENERIC_EPHEMERAL_VOLUME),
            Repeated,
        ),
        field(
            "nodeAffinity",
            "node_affinity",
            Msg(&NODE_AFFINITY_TERM),
            Repeated,
        ),
        field(
            "podAffinity",
            "pod_affinity",
            Msg(&POD_AFFINITY_TERM),
            Repeated,
        ),
        field(
            "enabledSharedMemory",
            "enabled_shared_memory",
            Msg(&ENABLED_SHARED_MEMORY),
            Explicit,
        ),
        field(
            "emptyDirMounts",
            "empty_dir_mounts",
            Msg(&EMPTY_DIR_MOUNT),
            Repeated,
        ),
        field(
            "securityContext",
            "security_context",
            Msg(&SECURITY_CONTEXT),
            Explicit,
        )
        .since(Release::V2_16_0),
    ],
};

static ENABLED_SHARED_MEMORY: Message = Message {
    name: "EnabledSharedMemory",
    fields: &[
        field("volumeName", "volume_name", STRING, Implicit),
        field("size", "size", STRING, Implicit),
    ],
};

static SECRET_AS_VOLUME: Message = Message {
    name: "SecretAsVolume",
    fields: &[
        field("secretName", "secret_name", STRING, Implicit),
        field("mountPath", "mount_path", STRING, Implicit),
        field("optional", "optional", Bool, Explicit),
        field(
            "secretNameParameter",
            "secret_name_parameter",
            PARAMETER,
            Explicit,
        ),
    ],
};

static SECRET_AS_ENV: Message = Message {
    name: "SecretAsEnv",
    fields: &[
        field("secretName", "secret_name", STRING, Implicit),
        field("keyToEnv", "key_to_env", Msg(&SECRET_KEY_TO_ENV), Repeated),
        field("optional", "optional", Bool, Explicit).since(Release::V2_15_0),
        field(
            "secretNameParameter",
            "secret_name_parameter",
            PARAMETER,
            Explicit,
        ),
    ],
};

static SECRET_KEY_TO_ENV: Message = Message {
    name: "SecretAsEnv.SecretKeyToEnvMap",
    fields: &[
        field("secretKey", "secret_key", STRING, Implicit),
        field("envVar", "env_var", STRING, Implicit),
    ],
};

static PVC_MOUNT: Message = Message {
    name: "PvcMount",
    fields: &[
        field(
            "taskOutputParameter",
            "task_output_parameter",
            Msg(&TASK_OUTPUT_PARAMETER),
            Oneof("pvc_reference"),
        ),
        field("constant", "constant", STRING, Oneof("pvc_reference")),
        field(
            "componentInputParameter",
            "component_input_parameter",
            STRING,
            Oneof("pvc_reference"),
        ),
        field("mountPath", "mount_path", STRING, Implicit),
        field(
            "pvcNameParameter",
            "pvc_name_parameter",
            PARAMETER,
            Explicit,
        ),
        field("subPath", "sub_path", STRING, Implicit).since(Release::V2_16_0),
    ],
};

static NODE_SELECTOR: Message = Message {
    name: "NodeSelector",
    fields: &[
        field("labels", "labels", STRING, Map),
        field(
            "nodeSelectorJson",
            "node_selector_json",
            PARAMETER,
            Explicit,
        ),
    ],
};

pub static POD_METADATA: Message = Message {
    name: "PodMetadata",
    fields: &[
        field("labels", "labels", STRING, Map),
        field("annotations", "annotations", STRING, Map),
    ],
};

static CONFIG_MAP_AS_VOLUME: Message = Message {
    name: "ConfigMapAsVolume",
    fields: &[
        field("configMapName", "config_map_name", STRING, Implicit),
        field("mountPath", "mount_path", STRING, Implicit),
        field("optional", "optional", Bool, Explicit),
        field(
            "configMapNameParameter",
            "config_map_name_parameter",
            PARAMETER,
            Explicit,
        ),
    ],
};

static CONFIG_MAP_AS_ENV: Message = Message {
    name: "ConfigMapAsEnv",
    fields: &[
        field("configMapName", "config_map_name", STRING, Implicit),
        field(
            "keyToEnv",
            "key_to_env",
            Msg(&CONFIG_MAP_KEY_TO_ENV),
            Repeated,
        ),
        field(
            "configMapNameParameter",
            "config_map_name_parameter",
            PARAMETER,
            Explicit,
        ),
        field("optional", "optional", Bool, Explicit).since(Release::V2_15_0),
    ],
};

static CONFIG_MAP_KEY_TO_ENV: Message = Message {
    name: "ConfigMapAsEnv.ConfigMapKeyToEnvMap",
    fields: &[
        field("configMapKey", "config_map_key", STRING, Implicit),
        field("envVar", "env_var", STRING, Implicit),
    ],
};

static GENERIC_EPHEMERAL_VOLUME: Message = Message {
    name: "GenericEphemeralVolume",
    fields: &[
        field("volumeName", "volume_name", STRING, Implicit),
        field("mountPath", "mount_path", STRING, Implicit),
        field("accessModes", "access_modes", STRING, Repeated),
        field("size", "size", STRING, Implicit),
        field(
            "defaultStorageClass",
            "default_storage_class",
            Bool,
            Implicit,
        ),
        field("storageClassName", "storage_class_name", STRING, Implicit),
        field("metadata", "metadata", Msg(&POD_METADATA), Explicit),
    ],
};

static IMAGE_PULL_SECRET: Message = Message {
    name: "ImagePullSecret",
    fields: &[
        field("secretName", "secret_name", STRING, Implicit),
        field(
            "secretNameParameter",
            "secret_name_parameter",
            PARAMETER,
            Explicit,
        ),
    ],
};

static FIELD_PATH_AS_ENV: Message = Message {
    name: "FieldPathAsEnv",
    fields: &[
        field("name", "name", STRING, Implicit),
        field("fieldPath", "field_path", STRING, Implicit),
    ],
};

static TOLERATION: Message = Message {
    name: "Toleration",
    fields: &[
        field("key", "key", STRING, Implicit),
        field("operator", "operator", STRING, Implicit),
        field("value", "value", STRING, Implicit),
        field("effect", "effect", STRING, Implicit),
        field("tolerationSeconds", "toleration_seconds", Int64, Explicit),
        field("tolerationJson", "toleration_json", PARAMETER, Explicit),
    ],
};

static SELECTOR_REQUIREMENT: Message = Message {
    name: "SelectorRequirement",
    fields: &[
        field("key", "key", STRING, Implicit),
        field("operator", "operator", STRING, Implicit),
        field("values", "values", STRING, Repeated),
    ],
};

static NODE_AFFINITY_TERM: Message = Message {
    name: "NodeAffinityTerm",
    fields: &[
        field(
            "matchExpressions",
            "match_expressions",
            Msg(&SELECTOR_REQUIREMENT),
            Repeated,
        ),
        field(
            "matchFields",
            "match_fields",
            Msg(&SELECTOR_REQUIREMENT),
            Repeated,
        ),
        field("weight", "weight", Int32, Explicit),
        field(
            "nodeAffinityJson",
            "node_affinity_json",
            PARAMETER,
            Explicit,
        ),
    ],
};

static POD_AFFINITY_TERM: Message = Message {
    name: "PodAffinityTerm",
    fields: &[
        field(
            "matchPodExpressions",
            "match_pod_expressions",
            Msg(&SELECTOR_REQUIREMENT),
            Repeated,
        ),
        field("matchPodLabels", "match_pod_labels", STRING, Map),
        field("topologyKey", "topology_key", STRING, Implicit),
        field("namespaces", "namespaces", STRING, Repeated),
        field(
            "matchNamespaceExpressions",
            "match_namespace_expressions",
            Msg(&SELECTOR_REQUIREMENT),
            Repeated,
        ),
        field(
            "matchNamespaceLabels",
            "match_namespace_labels",
            STRING,
            Map,
        ),
        field("weight", "weight", Int32, Explicit),
        field("anti", "anti", Bool, Explicit),
    ],
};

static SECURITY_CONTEXT: Message = Message {
    name: "SecurityContext",
    fields: &[
        field("runAsUser", "run_as_user", Int64, Explicit),
        field("runAsGroup", "run_as_group", Int64, Explicit),
        field("runAsNonRoot", "run_as_non_root", Bool, Explicit),
    ],
};

static EMPTY_DIR_MOUNT: Message = Message {
    name: "EmptyDirMount",
    fields: &[
        field("volumeName", "volume_name", STRING, Implicit),
        field("mountPath", "mount_path", STRING, Implicit),
        field("medium", "medium", STRING, Explicit),
        field("sizeLimit", "size_limit", STRING, Explicit),
    ],
};
