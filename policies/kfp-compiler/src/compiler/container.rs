//! Container components: the container driver, the executor DAG and the launcher-run
//! implementation template (Go's `container.go`).

use serde_json::{Map, Value, json};

use super::dag::TaskInputs;
use super::{Compiler, component_ref, condition, dependent_tasks};
use crate::argo::{self, *};
use crate::error::CompileError;
use crate::gojson;
use crate::proto::{self, Unknown, kubernetes};
use crate::release::Feature;

/// Images the SDK uses for Kubernetes-only tasks (PVC create/delete): driver only.
const DUMMY_IMAGES: [&str; 2] = ["argostub/createpvc", "argostub/deletepvc"];

const LAUNCHER_VOLUME: &str = "kfp-launcher";
/// 2.14.4's executor CA bundle volume.
const EXECUTOR_CA_VOLUME: &str = "ca-bundle";
const LAUNCHER_MOUNT_PATH: &str = "/kfp-launcher";
const LAUNCHER_PATH: &str = "/kfp-launcher/launch";
/// Writable scratch directories of the user container: (volume, mount path).
const SCRATCH_VOLUMES: [(&str, &str); 7] = [
    (LAUNCHER_VOLUME, LAUNCHER_MOUNT_PATH),
    ("gcs-scratch", "/gcs"),
    ("s3-scratch", "/s3"),
    ("minio-scratch", "/minio"),
    ("dot-local-scratch", "/.local"),
    ("dot-cache-scratch", "/.cache"),
    ("dot-config-scratch", "/.config"),
];

struct ContainerDriverOutputs {
    pod_spec_patch: String,
    cached: String,
    condition: String,
}

impl Compiler<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn container_tasks(
        &mut self,
        name: &str,
        task: &Value,
        inputs: &TaskInputs<'_>,
        component_placeholder: &str,
        task_json: &str,
        container: &Value,
        runs_after_upstream: bool,
    ) -> Result<Vec<Value>, CompileError> {
        let component_name = component_ref(task);
        let container_placeholder = self.use_component_impl(component_name)?;
        let driver_name = format!("{name}-driver");
        let kubernetes_config = self.use_kubernetes_impl(component_name);
        let mut parameters = vec![
            param_value(PARAM_COMPONENT, component_placeholder),
            param_value(PARAM_TASK, task_json),
            param_value(PARAM_CONTAINER, container_placeholder),
            param_value(PARAM_TASK_NAME, inputs.task_name.unwrap_or(name)),
            param_value(PARAM_PARENT_DAG_ID, inputs.parent_dag_id.as_str()),
        ];
        if let Some(index) = &inputs.iteration_index {
            parameters.push(param_value(PARAM_ITERATION_INDEX, index.as_str()));
        }
        if !kubernetes_config.is_empty() {
            parameters.push(param_value(PARAM_KUBERNETES_CONFIG, kubernetes_config));
        }
        let template = self.add_container_driver_template();
        let mut driver = argo::dag_task(&driver_name, &template, parameters);
        let outputs = ContainerDriverOutputs {
            pod_spec_patch: task_output_parameter(&driver_name, PARAM_POD_SPEC_PATCH),
            cached: task_output_parameter(&driver_name, PARAM_CACHED_DECISION),
            condition: if condition(task).is_empty() {
                String::new()
            } else {
                task_output_parameter(&driver_name, PARAM_CONDITION)
            },
        };
        if runs_after_upstream {
            set_nonempty(&mut driver, "depends", depends(&dependent_tasks(task)));
        }
        let image = container.get("image").and_then(Value::as_str).unwrap_or("");
        if DUMMY_IMAGES.contains(&image) {
            driver.insert("name".into(), Value::String(name.to_owned()));
            return Ok(vec![Value::Object(driver)]);
        }
        let mut executor = self
            .container_executor_task(name, task, &outputs, inputs)
            .map_err(|e| e.context(format!("error creating executor for {name:?}")))?;
        executor.insert("depends".into(), Value::String(depends(&[&driver_name])));
        Ok(vec![Value::Object(driver), Value::Object(executor)])
    }

    fn add_container_driver_template(&mut self) -> String {
        let name = "system-container-driver";
        if self.has_template(name) {
            return name.to_owned();
        }
        let mut args: Vec<String> = [
            "--type",
            "CONTAINER",
            "--pipeline_name",
            self.pipeline_name,
            "--run_id",
            RUN_ID,
            "--run_name",
            RUN_NAME,
            "--run_display_name",
            self.display_name,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if self.has(Feature::CreateTimeFlag) {
            args.extend([
                "--pipeline_job_create_time_utc".into(),
                RUN_CREATION_TIME.into(),
            ]);
        }
        for (flag, parameter) in [
            ("--dag_execution_id", input_parameter(PARAM_PARENT_DAG_ID)),
            ("--component", input_parameter(PARAM_COMPONENT)),
            ("--task", input_parameter(PARAM_TASK)),
            ("--task_name", input_parameter(PARAM_TASK_NAME)),
            ("--container", input_parameter(PARAM_CONTAINER)),
            ("--iteration_index", input_parameter(PARAM_ITERATION_INDEX)),
            ("--cached_decision_path", output_path(PARAM_CACHED_DECISION)),
            ("--pod_spec_patch_path", output_path(PARAM_POD_SPEC_PATCH)),
            ("--condition_path", output_path(PARAM_CONDITION)),
            (
                "--kubernetes_config",
                input_parameter(PARAM_KUBERNETES_CONFIG),
            ),
        ] {
            args.push(flag.to_owned());
            args.push(parameter);
        }
        let uses_ca_bundle = self.push_driver_flags(&mut args);
        let options = self.options;
        if self.has(Feature::DefaultRunAs) {
            if let Some(user) = options.default_run_as_user {
                args.extend(["--default_run_as_user".to_owned(), user.to_string()]);
            }
            if let Some(group) = options.default_run_as_group {
                args.extend(["--default_run_as_group".to_owned(), group.to_string()]);
            }
            if let Some(non_root) = options.default_run_as_non_root {
                args.extend(["--default_run_as_non_root".to_owned(), non_root.to_string()]);
            }
        }
        if let Some(host_users) = options
            .default_host_users
            .filter(|_| self.has(Feature::DefaultHostUsers))
        {
            args.extend(["--default_host_users".to_owned(), host_users.to_string()]);
        }

        let mut template = argo::template(name);
        argo::input_parameters(
            &mut template,
            vec![
                param(PARAM_COMPONENT),
                param(PARAM_TASK),
                param(PARAM_CONTAINER),
                param(PARAM_TASK_NAME),
                param(PARAM_PARENT_DAG_ID),
                param_default(PARAM_ITERATION_INDEX, "-1"),
                param_default(PARAM_KUBERNETES_CONFIG, ""),
            ],
        );
        template.insert(
            "outputs".into(),
            json!({ "parameters": [
                { "name": PARAM_POD_SPEC_PATCH,
                  "valueFrom": { "path": "/tmp/outputs/pod-spec-patch", "default": "" } },
                { "name": PARAM_CACHED_DECISION, "default": "false",
                  "valueFrom": { "path": "/tmp/outputs/cached-decision", "default": "false" } },
                { "name": PARAM_CONDITION,
                  "valueFrom": { "path": "/tmp/outputs/condition", "default": "true" } },
            ]}),
        );
        let mut env = self.proxy_env();
        if self.has(Feature::ContainerDriverPodEnv) {
            env.extend(common_envs());
        }
        template.insert("container".into(), self.driver_container(args, env));
        self.finish_driver_template(&mut template, uses_ca_bundle);
        self.push_template(template);
        name.to_owned()
    }

    fn container_executor_task(
        &mut self,
        name: &str,
        task: &Value,
        outputs: &ContainerDriverOutputs,
        inputs: &TaskInputs<'_>,
    ) -> Result<Map<String, Value>, CompileError> {
        let reference = component_ref(task);
        let pod_metadata = self.pod_metadata(reference)?;
        let template = self.add_container_executor_template(task, pod_metadata.as_ref());
        let mut parameters = vec![
            param_value(PARAM_POD_SPEC_PATCH, outputs.pod_spec_patch.as_str()),
            argo::object([
                ("name", PARAM_CACHED_DECISION.into()),
                ("value", outputs.cached.as_str().into()),
                ("default", "false".into()),
            ]),
        ];
        parameters.extend(pod_metadata_parameters(pod_metadata.as_ref(), true));
        parameters.extend(retry_parameters_with_values(task));
        let mut executor = argo::dag_task(name, &template, parameters);
        if !outputs.condition.is_empty() {
            executor.insert(
                "when".into(),
                Value::String(format!("{} != false", outputs.condition)),
            );
        }
        argo::add_exit_hook(&mut executor, inputs.exit_template, &inputs.parent_dag_id);
        Ok(executor)
    }

    /// Pod metadata from the component's Kubernetes config, which must parse as a
    /// `KubernetesExecutorConfig`.
    fn pod_metadata(&mut self, component: &str) -> Result<Option<Value>, CompileError> {
        if let Some(cached) = self.pod_metadata.get(component) {
            return Ok(cached.clone());
        }
        let metadata = match self.kubernetes_configs.get(component) {
            Some(config) => {
                let config = proto::canonicalize_for(
                    self.options.release,
                    &kubernetes::EXECUTOR_CONFIG,
                    config,
                    Unknown::Reject,
                )
                .map_err(|e| {
                    CompileError::Invalid(format!("failed to unmarshal kubernetes config: {e}"))
                })?;
                config.get("podMetadata").cloned()
            }
            None => None,
        };
        self.pod_metadata
            .insert(component.to_owned(), metadata.clone());
        Ok(metadata)
    }

    /// The executor DAG (skips the pod on a cache hit) and its implementation template,
    /// shared by every task with the same retry and pod-metadata shape.
    fn add_container_executor_template(
        &mut self,
        task: &Value,
        pod_metadata: Option<&Value>,
    ) -> String {
        let mut executor_name = "system-container-executor".to_owned();
        let mut impl_name = "system-container-impl".to_owned();
        let has_retry = task.get("retryPolicy").is_some();
        let reference = component_ref(task);
        if has_retry
            && self
                .spec
                .component(reference)
                .is_some_and(|component| component.get("dag").is_none())
        {
            executor_name.insert_str(0, "retry-");
            impl_name.insert_str(0, "retry-");
        }
        if let Some(metadata) = pod_metadata {
            let count = |key: &str| {
                metadata
                    .get(key)
                    .and_then(Value::as_object)
                    .map_or(0, Map::len)
            };
            let prefix = format!("metadata-{}-{}-", count("annotations"), count("labels"));
            executor_name.insert_str(0, &prefix);
            impl_name.insert_str(0, &prefix);
        }
        if self.has_template(&executor_name) {
            return executor_name;
        }

        let metadata_names = pod_metadata_parameters(pod_metadata, false);
        let retry_names = retry_parameter_names(has_retry);
        let mut executor_inputs = vec![
            param(PARAM_POD_SPEC_PATCH),
            param_default(PARAM_CACHED_DECISION, "false"),
        ];
        executor_inputs.extend(metadata_names.iter().cloned());
        executor_inputs.extend(retry_names.iter().map(|name| param_default(name, "0")));
        let mut inner_arguments = vec![param_value(
            PARAM_POD_SPEC_PATCH,
            input_parameter(PARAM_POD_SPEC_PATCH),
        )];
        let passed_on = metadata_names
            .iter()
            .filter_map(|p| p["name"].as_str())
            .chain(retry_names.iter().copied());
        for name in passed_on {
            inner_arguments.push(param_value(name, input_parameter(name)));
        }
        let mut inner = argo::dag_task("executor", &impl_name, inner_arguments);
        inner.insert(
            "when".into(),
            Value::String(format!(
                "{} != true",
                input_parameter(PARAM_CACHED_DECISION)
            )),
        );
        let mut executor =
            argo::dag_template(&executor_name, executor_inputs, vec![Value::Object(inner)]);
        executor.insert("name".into(), Value::String(executor_name.clone()));
        self.template_names.insert(executor_name.clone());

        let implementation = self.container_impl_template(
            &impl_name,
            task,
            pod_metadata,
            &metadata_names,
            &retry_names,
        );
        self.template_names.insert(impl_name);
        self.templates.push(Value::Object(executor));
        self.templates.push(Value::Object(implementation));
        executor_name
    }

    fn container_impl_template(
        &self,
        name: &str,
        task: &Value,
        pod_metadata: Option<&Value>,
        metadata_names: &[Value],
        retry_names: &[&str],
    ) -> Map<String, Value> {
        let options = self.options;
        let mut launcher_args = vec!["--copy".to_owned(), LAUNCHER_PATH.to_owned()];
        if options.cache_disabled {
            launcher_args.push("--cache_disabled".into());
        }
        if let Some(level) = &options.log_level {
            launcher_args.extend(["--log_level".to_owned(), level.clone()]);
        }
        if let Some(publish) = &options.publish_logs {
            launcher_args.extend(["--publish_logs".to_owned(), publish.clone()]);
        }
        let mut inputs = vec![param(PARAM_POD_SPEC_PATCH)];
        inputs.extend(metadata_names.iter().cloned());
        inputs.extend(retry_names.iter().map(|name| param(name)));

        let mut template = argo::template(name);
        argo::input_parameters(&mut template, inputs);
        template.insert(
            "podSpecPatch".into(),
            Value::String(input_parameter(PARAM_POD_SPEC_PATCH)),
        );
        template.insert(
            "volumes".into(),
            Value::Array(
                SCRATCH_VOLUMES
                    .iter()
                    .map(|(volume, _)| json!({ "name": volume, "emptyDir": {} }))
                    .collect(),
            ),
        );
        let launcher = argo::object([
            ("name", LAUNCHER_VOLUME.into()),
            ("image", options.launcher_image.as_str().into()),
            (
                "command",
                argo::strings(options.launcher_command.iter().map(String::as_str)),
            ),
            ("args", argo::strings(launcher_args)),
            (
                "volumeMounts",
                json!([{ "name": LAUNCHER_VOLUME, "mountPath": LAUNCHER_MOUNT_PATH }]),
            ),
            (
                "resources",
                // 128Mi until 2.16.1 raised it (kubeflow/pipelines#13299).
                launcher_resources(if self.has(Feature::LauncherMemory256Mi) {
                    "256Mi"
                } else {
                    "128Mi"
                }),
            ),
        ]);
        template.insert("initContainers".into(), Value::Array(vec![launcher]));
        let mounts = SCRATCH_VOLUMES
            .iter()
            .map(|(volume, path)| json!({ "name": volume, "mountPath": path }))
            .collect();
        let user_container = argo::object([
            ("name", "".into()),
            // Always replaced by the pod spec patch; an image that never exists.
            (
                "image",
                "gcr.io/ml-pipeline/should-be-overridden-during-runtime".into(),
            ),
            ("command", json!(["should-be-overridden-during-runtime"])),
            ("volumeMounts", Value::Array(mounts)),
            ("envFrom", Value::Array(vec![metadata_env_from()])),
            ("env", Value::Array(common_envs())),
            ("resources", json!({})),
        ]);
        template.insert("container".into(), user_container);
        self.set_runtime_role(&mut template, "launcher");
        if self.uses_ca_bundle() {
            self.add_ca_bundle(&mut template);
        }
        if self.has(Feature::SecurityContexts) {
            super::security::apply_to_executor_template(
                &mut template,
                options,
                self.has(Feature::DefaultRunAs),
            );
        }
        if task.get("retryPolicy").is_some() {
            template.insert(
                "retryStrategy".into(),
                json!({
                    "limit": input_parameter(PARAM_RETRY_MAX_COUNT),
                    "backoff": {
                        "duration": input_parameter(PARAM_RETRY_BACKOFF_DURATION),
                        "factor": input_parameter(PARAM_RETRY_BACKOFF_FACTOR),
                        "maxDuration": input_parameter(PARAM_RETRY_BACKOFF_MAX_DURATION),
                    }
                }),
            );
            if self.has(Feature::RetryIndexEnv) {
                let container = argo::object_field(&mut template, "container");
                argo::array_field(container, "env").push(env_var("KFP_RETRY_INDEX", "{{retries}}"));
            }
        }
        if let Some(metadata) = pod_metadata {
            extend_pod_metadata(&mut template, metadata);
        }
        if !self.has(Feature::NoExecutorCaBundle) {
            self.add_executor_ca_bundle(&mut template);
        }
        template
    }

    /// 2.14.4's executor CA bundle: the `EXECUTOR_CABUNDLE_CONFIGMAP_NAME` config map's key
    /// mounted as a file under `EXECUTOR_CABUNDLE_MOUNTPATH`, and named by the variables
    /// Python requests, the AWS tools and OpenSSL read (gone in 2.15.0, #12382).
    fn add_executor_ca_bundle(&self, template: &mut Map<String, Value>) {
        let bundle = &self.options.executor_ca_bundle;
        if bundle.config_map_name.is_empty() || bundle.config_map_key.is_empty() {
            return;
        }
        let ca_file = format!("{}/{}", bundle.mount_path, bundle.config_map_key);
        let cert_dirs = [
            bundle.mount_path.as_str(),
            "/etc/ssl/certs",
            "/etc/pki/tls/certs",
        ];
        let volume =
            json!({ "name": EXECUTOR_CA_VOLUME, "configMap": { "name": bundle.config_map_name } });
        argo::array_field(template, "volumes").push(volume);
        let container = argo::object_field(template, "container");
        let env = argo::array_field(container, "env");
        for name in ["REQUESTS_CA_BUNDLE", "AWS_CA_BUNDLE", "SSL_CERT_FILE"] {
            env.push(env_var(name, &ca_file));
        }
        env.push(env_var("SSL_CERT_DIR", &cert_dirs.join(":")));
        argo::array_field(container, "volumeMounts").push(json!({
            "name": EXECUTOR_CA_VOLUME,
            "mountPath": ca_file,
            "subPath": bundle.config_map_key,
        }));
    }
}

fn retry_parameter_names(has_retry: bool) -> Vec<&'static str> {
    if has_retry {
        RETRY_PARAMS.to_vec()
    } else {
        Vec::new()
    }
}

/// The task's retry policy as executor arguments; the backoff durations only when set.
fn retry_parameters_with_values(task: &Value) -> Vec<Value> {
    let Some(retry) = task.get("retryPolicy") else {
        return Vec::new();
    };
    let max_count = retry
        .get("maxRetryCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let factor = retry
        .get("backoffFactor")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let mut parameters = vec![param_value(PARAM_RETRY_MAX_COUNT, max_count.to_string())];
    if let Some(duration) = retry.get("backoffDuration").and_then(Value::as_str) {
        parameters.push(param_value(
            PARAM_RETRY_BACKOFF_DURATION,
            duration_seconds(duration),
        ));
    }
    parameters.push(param_value(
        PARAM_RETRY_BACKOFF_FACTOR,
        gojson::format_float_v(factor),
    ));
    if let Some(duration) = retry.get("backoffMaxDuration").and_then(Value::as_str) {
        parameters.push(param_value(
            PARAM_RETRY_BACKOFF_MAX_DURATION,
            duration_seconds(duration),
        ));
    }
    parameters
}

/// Whole seconds of a canonical duration (`"1.500s"` is `1`), as Go's `Duration.Seconds`.
fn duration_seconds(duration: &str) -> String {
    let body = duration.trim_end_matches('s');
    let whole = body.split('.').next().unwrap_or("0");
    match whole {
        "-0" | "" => "0".to_owned(),
        whole => whole.to_owned(),
    }
}

/// Pod annotation then label parameters, keys sorted, numbered when there are several.
fn pod_metadata_parameters(pod_metadata: Option<&Value>, with_values: bool) -> Vec<Value> {
    let Some(metadata) = pod_metadata else {
        return Vec::new();
    };
    let mut parameters = Vec::new();
    for (field, key_param, value_param) in [
        (
            "annotations",
            PARAM_POD_ANNOTATION_KEY,
            PARAM_POD_ANNOTATION_VAL,
        ),
        ("labels", PARAM_POD_LABEL_KEY, PARAM_POD_LABEL_VAL),
    ] {
        let Some(entries) = metadata.get(field).and_then(Value::as_object) else {
            continue;
        };
        let numbered = entries.len() > 1;
        for (index, (key, value)) in entries.iter().enumerate() {
            let (key_name, value_name) =
                numbered_names(key_param, value_param, numbered, index + 1);
            if with_values {
                parameters.push(param_value(&key_name, key.as_str()));
                parameters.push(param_value(&value_name, value.as_str().unwrap_or("")));
            } else {
                parameters.push(param(&key_name));
                parameters.push(param(&value_name));
            }
        }
    }
    parameters
}

fn numbered_names(key: &str, value: &str, numbered: bool, index: usize) -> (String, String) {
    if numbered {
        (format!("{key}-{index}"), format!("{value}-{index}"))
    } else {
        (key.to_owned(), value.to_owned())
    }
}

/// Template metadata whose keys and values are the pod-metadata input parameters. Values
/// already there (the runtime role) win.
fn extend_pod_metadata(template: &mut Map<String, Value>, pod_metadata: &Value) {
    let template_metadata = argo::object_field(template, "metadata");
    for (field, key_param, value_param) in [
        ("labels", PARAM_POD_LABEL_KEY, PARAM_POD_LABEL_VAL),
        (
            "annotations",
            PARAM_POD_ANNOTATION_KEY,
            PARAM_POD_ANNOTATION_VAL,
        ),
    ] {
        let Some(entries) = pod_metadata.get(field).and_then(Value::as_object) else {
            continue;
        };
        let numbered = entries.len() > 1;
        let target = argo::object_field(template_metadata, field);
        for index in 1..=entries.len() {
            let (key_name, value_name) = numbered_names(key_param, value_param, numbered, index);
            target
                .entry(input_parameter(&key_name))
                .or_insert_with(|| Value::String(input_parameter(&value_name)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_whole_seconds() {
        assert_eq!(duration_seconds("0s"), "0");
        assert_eq!(duration_seconds("3600s"), "3600");
        assert_eq!(duration_seconds("1.500s"), "1");
        assert_eq!(duration_seconds("-0.500s"), "0");
        assert_eq!(duration_seconds("-2.500s"), "-2");
    }

    #[test]
    fn retry_values_follow_go_formatting() {
        let task = json!({"retryPolicy": {"maxRetryCount": 3, "backoffDuration": "0s", "backoffFactor": 2.0}});
        let values: Vec<(String, String)> = retry_parameters_with_values(&task)
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap().into(),
                    p["value"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(
            values,
            [
                ("retry-max-count".into(), "3".into()),
                ("retry-backoff-duration".into(), "0".into()),
                ("retry-backoff-factor".into(), "2".into()),
            ]
        );
    }
}
