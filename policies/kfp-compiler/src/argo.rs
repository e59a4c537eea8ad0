//! Small builders for the Argo Workflow JSON the compiler writes, with the template
//! expressions and parameter names KFP uses.

use serde_json::{Map, Value, json};

pub const PARAM_COMPONENT: &str = "component";
pub const PARAM_TASK: &str = "task";
pub const PARAM_TASK_NAME: &str = "task-name";
pub const PARAM_CONTAINER: &str = "container";
pub const PARAM_IMPORTER: &str = "importer";
pub const PARAM_RUNTIME_CONFIG: &str = "runtime-config";
pub const PARAM_PARENT_DAG_ID: &str = "parent-dag-id";
pub const PARAM_EXECUTION_ID: &str = "execution-id";
pub const PARAM_ITERATION_COUNT: &str = "iteration-count";
pub const PARAM_ITERATION_INDEX: &str = "iteration-index";
pub const PARAM_DRIVER_TYPE: &str = "driver-type";
pub const PARAM_CACHED_DECISION: &str = "cached-decision";
pub const PARAM_POD_SPEC_PATCH: &str = "pod-spec-patch";
pub const PARAM_CONDITION: &str = "condition";
pub const PARAM_KUBERNETES_CONFIG: &str = "kubernetes-config";
pub const PARAM_RETRY_MAX_COUNT: &str = "retry-max-count";
pub const PARAM_RETRY_BACKOFF_DURATION: &str = "retry-backoff-duration";
pub const PARAM_RETRY_BACKOFF_FACTOR: &str = "retry-backoff-factor";
pub const PARAM_RETRY_BACKOFF_MAX_DURATION: &str = "retry-backoff-max-duration";
pub const PARAM_POD_ANNOTATION_KEY: &str = "pod-metadata-annotation-key";
pub const PARAM_POD_ANNOTATION_VAL: &str = "pod-metadata-annotation-val";
pub const PARAM_POD_LABEL_KEY: &str = "pod-metadata-label-key";
pub const PARAM_POD_LABEL_VAL: &str = "pod-metadata-label-val";

pub const RETRY_PARAMS: [&str; 4] = [
    PARAM_RETRY_MAX_COUNT,
    PARAM_RETRY_BACKOFF_DURATION,
    PARAM_RETRY_BACKOFF_FACTOR,
    PARAM_RETRY_BACKOFF_MAX_DURATION,
];

/// Prefixes of the workflow arguments that carry the IR.
pub const ARG_COMPONENTS: &str = "components-";
pub const ARG_IMPLEMENTATIONS: &str = "implementations-";
pub const ARG_KUBERNETES: &str = "kubernetes-";

pub const ANNOTATION_RUNTIME_ROLE: &str = "pipelines.kubeflow.org/runtime-role";
pub const ENTRYPOINT: &str = "entrypoint";

pub const RUN_ID: &str = "{{workflow.uid}}";
pub const RUN_NAME: &str = "{{workflow.name}}";
pub const RUN_CREATION_TIME: &str = "{{workflow.creationTimestamp}}";
pub const LOOP_ITEM: &str = "{{item}}";

pub fn workflow_parameter(name: &str) -> String {
    format!("{{{{workflow.parameters.{name}}}}}")
}

/// A template's own input (`{{inputs.parameters.NAME}}`).
pub fn input_parameter(name: &str) -> String {
    format!("{{{{inputs.parameters.{name}}}}}")
}

pub fn output_path(name: &str) -> String {
    format!("{{{{outputs.parameters.{name}.path}}}}")
}

pub fn task_output_parameter(task: &str, name: &str) -> String {
    format!("{{{{tasks.{task}.outputs.parameters.{name}}}}}")
}

/// Argo's enhanced `depends`: every listed task must have succeeded.
pub fn depends<S: AsRef<str>>(tasks: &[S]) -> String {
    let mut out = String::new();
    for (i, task) in tasks.iter().enumerate() {
        if i > 0 {
            out.push_str(" && ");
        }
        out.push_str(task.as_ref());
        out.push_str(".Succeeded");
    }
    out
}

/// A JSON object from `(key, value)` pairs, values moved in (`json!` would deep-copy them).
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut map = Map::new();
    for (key, value) in entries {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

/// Strings as a JSON list.
pub fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::Array(items.into_iter().map(|s| Value::String(s.into())).collect())
}

/// `{name}`: a declared input without default.
pub fn param(name: &str) -> Value {
    object([("name", name.into())])
}

pub fn param_value(name: &str, value: impl Into<String>) -> Value {
    object([
        ("name", name.into()),
        ("value", Value::String(value.into())),
    ])
}

pub fn param_default(name: &str, default: &str) -> Value {
    object([("name", name.into()), ("default", default.into())])
}

/// A template with the fields Go always writes (`inputs`, `outputs`, `metadata`).
pub fn template(name: &str) -> Map<String, Value> {
    let mut template = Map::new();
    template.insert("name".into(), name.into());
    template.insert("inputs".into(), json!({}));
    template.insert("outputs".into(), json!({}));
    template.insert("metadata".into(), json!({}));
    template
}

pub fn input_parameters(template: &mut Map<String, Value>, parameters: Vec<Value>) {
    template.insert(
        "inputs".into(),
        object([("parameters", Value::Array(parameters))]),
    );
}

pub fn dag_template(name: &str, parameters: Vec<Value>, tasks: Vec<Value>) -> Map<String, Value> {
    let mut template = template(name);
    if !parameters.is_empty() {
        input_parameters(&mut template, parameters);
    }
    template.insert("dag".into(), object([("tasks", Value::Array(tasks))]));
    template
}

/// A DAG task running `template` with the given argument parameters.
pub fn dag_task(name: &str, template: &str, parameters: Vec<Value>) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("name".into(), name.into());
    task.insert("template".into(), template.into());
    task.insert(
        "arguments".into(),
        object([("parameters", Value::Array(parameters))]),
    );
    task
}

/// Sets a string field unless it is empty (Go's `omitempty`).
pub fn set_nonempty(object: &mut Map<String, Value>, key: &str, value: String) {
    if !value.is_empty() {
        object.insert(key.to_owned(), Value::String(value));
    }
}

/// The exit lifecycle hook KFP attaches to a task whose exit handler is `exit_template`.
pub fn add_exit_hook(task: &mut Map<String, Value>, exit_template: &str, parent_dag_id: &str) {
    if exit_template.is_empty() {
        return;
    }
    let arguments = object([(
        "parameters",
        Value::Array(vec![param_value(PARAM_PARENT_DAG_ID, parent_dag_id)]),
    )]);
    let hook = object([("template", exit_template.into()), ("arguments", arguments)]);
    task.insert("hooks".into(), object([("exit", hook)]));
}

pub fn env_var(name: &str, value: &str) -> Value {
    object([("name", name.into()), ("value", value.into())])
}

pub fn field_env_var(name: &str, field_path: &str) -> Value {
    json!({ "name": name, "valueFrom": { "fieldRef": { "fieldPath": field_path } } })
}

/// `KFP_POD_NAME` and `KFP_POD_UID` from the downward API.
pub fn common_envs() -> Vec<Value> {
    vec![
        field_env_var("KFP_POD_NAME", "metadata.name"),
        field_env_var("KFP_POD_UID", "metadata.uid"),
    ]
}

/// The optional `metadata-grpc-configmap` every launcher-run container reads.
pub fn metadata_env_from() -> Value {
    json!({ "configMapRef": { "name": "metadata-grpc-configmap", "optional": true } })
}

/// Driver resources as Kubernetes writes the quantities `0.5`, `0.5Gi`, `0.1`, `64Mi`.
pub fn driver_resources() -> Value {
    json!({
        "limits": { "cpu": "500m", "memory": "512Mi" },
        "requests": { "cpu": "100m", "memory": "64Mi" }
    })
}

/// Launcher init container resources; the memory limit was 128Mi before 2.16.1.
pub fn launcher_resources(memory_limit: &str) -> Value {
    json!({
        "limits": { "cpu": "500m", "memory": memory_limit },
        "requests": { "cpu": "100m" }
    })
}

pub fn set_runtime_role(template: &mut Map<String, Value>, role: &str) {
    let metadata = object_field(template, "metadata");
    let annotations = object_field(metadata, "annotations");
    annotations.insert(ANNOTATION_RUNTIME_ROLE.into(), role.into());
}

/// `object[key]` as a map, created empty when missing.
pub fn object_field<'a>(
    object: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let entry = object
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(map) => map,
        _ => unreachable!("replaced by an object above"),
    }
}

/// `object[key]` as a list, created empty when missing.
pub fn array_field<'a>(object: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let entry = object
        .entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    match entry {
        Value::Array(items) => items,
        _ => unreachable!("replaced by a list above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        assert_eq!(
            workflow_parameter("components-root"),
            "{{workflow.parameters.components-root}}"
        );
        assert_eq!(input_parameter("task"), "{{inputs.parameters.task}}");
        assert_eq!(
            output_path("condition"),
            "{{outputs.parameters.condition.path}}"
        );
        assert_eq!(
            task_output_parameter("a-driver", "execution-id"),
            "{{tasks.a-driver.outputs.parameters.execution-id}}"
        );
        assert_eq!(depends(&["a", "b"]), "a.Succeeded && b.Succeeded");
        assert_eq!(depends::<&str>(&[]), "");
    }
}
