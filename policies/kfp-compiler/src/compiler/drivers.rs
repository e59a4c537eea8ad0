//! What the container and DAG drivers share: flags, environment, CA bundle, and the DAG
//! driver template itself.

use serde_json::{Map, Value, json};

use super::Compiler;
use crate::argo::{self, *};
use crate::release::Feature;

const CA_BUNDLE_DIR: &str = "/kfp/certs";
const CA_CERT_PATH: &str = "/kfp/certs/ca.crt";

impl Compiler<'_> {
    /// Appends the flags every driver takes after its own; true when a CA bundle is used.
    pub(super) fn push_driver_flags(&self, args: &mut Vec<String>) -> bool {
        let options = self.options;
        let mut pairs = vec![
            ("--http_proxy", &options.proxy.http_proxy),
            ("--https_proxy", &options.proxy.https_proxy),
            ("--no_proxy", &options.proxy.no_proxy),
        ];
        if self.has(Feature::ServerAddressFlags) {
            pairs.extend([
                (
                    "--ml_pipeline_server_address",
                    &options.ml_pipeline_server.address,
                ),
                (
                    "--ml_pipeline_server_port",
                    &options.ml_pipeline_server.port,
                ),
                ("--mlmd_server_address", &options.mlmd_server.address),
                ("--mlmd_server_port", &options.mlmd_server.port),
            ]);
        }
        for (flag, value) in pairs {
            args.push(flag.to_owned());
            args.push(value.clone());
        }
        self.push_shared_flags(args)
    }

    /// Whether drivers, importer and executors mount a custom CA bundle: from 2.16.0 when
    /// a secret or config map is named (#12572); in 2.15.0 only a secret, and only with
    /// TLS on; never before.
    pub(super) fn uses_ca_bundle(&self) -> bool {
        let options = self.options;
        if self.has(Feature::CustomCaVolume) {
            options.ca_bundle.is_configured()
        } else if self.has(Feature::Tls) {
            !options.ca_bundle.secret_name.is_empty()
                && (options.ml_pipeline_tls_enabled || options.metadata_tls_enabled)
        } else {
            false
        }
    }

    /// Cache, TLS, CA and logging flags, as drivers and the importer take them.
    pub(super) fn push_shared_flags(&self, args: &mut Vec<String>) -> bool {
        let options = self.options;
        if options.cache_disabled {
            args.push("--cache_disabled".into());
        }
        if self.has(Feature::Tls) {
            if options.ml_pipeline_tls_enabled {
                args.push("--ml_pipeline_tls_enabled".into());
            }
            if options.metadata_tls_enabled {
                args.push("--metadata_tls_enabled".into());
            }
        }
        let uses_ca_bundle = self.uses_ca_bundle();
        if uses_ca_bundle {
            args.extend(["--ca_cert_path".to_owned(), CA_CERT_PATH.to_owned()]);
        }
        if let Some(level) = &options.log_level {
            args.extend(["--log_level".to_owned(), level.clone()]);
        }
        if let Some(publish) = &options.publish_logs {
            args.extend(["--publish_logs".to_owned(), publish.clone()]);
        }
        uses_ca_bundle
    }

    /// `http_proxy`/`HTTP_PROXY`, ... for each proxy value that is set.
    pub(super) fn proxy_env(&self) -> Vec<Value> {
        let proxy = &self.options.proxy;
        let mut env = Vec::new();
        for (lower, upper, value) in [
            ("http_proxy", "HTTP_PROXY", &proxy.http_proxy),
            ("https_proxy", "HTTPS_PROXY", &proxy.https_proxy),
            ("no_proxy", "NO_PROXY", &proxy.no_proxy),
        ] {
            if !value.is_empty() {
                env.push(env_var(lower, value));
                env.push(env_var(upper, value));
            }
        }
        env
    }

    pub(super) fn driver_container(&self, args: Vec<String>, env: Vec<Value>) -> Value {
        let options = self.options;
        let mut container = argo::object([
            ("name", "".into()),
            ("image", options.driver_image.as_str().into()),
            (
                "command",
                argo::strings(options.driver_command.iter().map(String::as_str)),
            ),
            ("args", argo::strings(args)),
            ("resources", driver_resources()),
        ]);
        if !env.is_empty() {
            container["env"] = Value::Array(env);
        }
        container
    }

    /// Role annotation, security defaults and CA bundle of a driver template.
    pub(super) fn finish_driver_template(
        &self,
        template: &mut Map<String, Value>,
        uses_ca_bundle: bool,
    ) {
        self.set_runtime_role(template, "driver");
        if self.has(Feature::SecurityContexts) {
            super::security::apply_to_template(template);
        }
        if uses_ca_bundle {
            self.add_ca_bundle(template);
        }
    }

    /// Mounts the custom CA bundle (secret first, else config map) at `/kfp/certs`.
    pub(super) fn add_ca_bundle(&self, template: &mut Map<String, Value>) {
        let bundle = &self.options.ca_bundle;
        if !self.has(Feature::CustomCaVolume) {
            // 2.15.0: the whole secret as volume `ca-secret`.
            if bundle.secret_name.is_empty() {
                return;
            }
            let volume =
                json!({ "name": "ca-secret", "secret": { "secretName": bundle.secret_name } });
            argo::array_field(template, "volumes").push(volume);
            let container = argo::object_field(template, "container");
            argo::array_field(container, "volumeMounts")
                .push(json!({ "name": "ca-secret", "mountPath": CA_BUNDLE_DIR }));
            return;
        }
        let key = if bundle.key_name.is_empty() {
            "ca.crt"
        } else {
            bundle.key_name.as_str()
        };
        let items = json!([{ "key": key, "path": "ca.crt" }]);
        let (source, reference) = if !bundle.secret_name.is_empty() {
            (
                "secret",
                object([
                    ("secretName", bundle.secret_name.as_str().into()),
                    ("items", items),
                ]),
            )
        } else if !bundle.config_map_name.is_empty() {
            (
                "configMap",
                object([
                    ("name", bundle.config_map_name.as_str().into()),
                    ("items", items),
                ]),
            )
        } else {
            return;
        };
        let volume = object([("name", "custom-ca".into()), (source, reference)]);
        argo::array_field(template, "volumes").push(volume);
        let container = argo::object_field(template, "container");
        argo::array_field(container, "volumeMounts")
            .push(json!({ "name": "custom-ca", "mountPath": CA_BUNDLE_DIR }));
    }

    pub(super) fn add_dag_driver_template(&mut self) -> String {
        let name = "system-dag-driver";
        if self.has_template(name) {
            return name.to_owned();
        }
        let mut args = vec![
            "--type".to_owned(),
            input_parameter(PARAM_DRIVER_TYPE),
            "--pipeline_name".to_owned(),
            self.pipeline_name.to_owned(),
            "--run_id".to_owned(),
            RUN_ID.to_owned(),
            "--run_name".to_owned(),
            RUN_NAME.to_owned(),
            "--run_display_name".to_owned(),
            self.display_name.to_owned(),
        ];
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
            ("--runtime_config", input_parameter(PARAM_RUNTIME_CONFIG)),
            ("--iteration_index", input_parameter(PARAM_ITERATION_INDEX)),
            ("--execution_id_path", output_path(PARAM_EXECUTION_ID)),
            ("--iteration_count_path", output_path(PARAM_ITERATION_COUNT)),
            ("--condition_path", output_path(PARAM_CONDITION)),
        ] {
            args.push(flag.to_owned());
            args.push(parameter);
        }
        let uses_ca_bundle = self.push_driver_flags(&mut args);

        let mut template = argo::template(name);
        argo::input_parameters(
            &mut template,
            vec![
                param(PARAM_COMPONENT),
                param_default(PARAM_RUNTIME_CONFIG, ""),
                param_default(PARAM_TASK, ""),
                param_default(PARAM_TASK_NAME, ""),
                param_default(PARAM_PARENT_DAG_ID, "0"),
                param_default(PARAM_ITERATION_INDEX, "-1"),
                param_default(PARAM_DRIVER_TYPE, "DAG"),
            ],
        );
        template.insert(
            "outputs".into(),
            json!({ "parameters": [
                { "name": PARAM_EXECUTION_ID, "valueFrom": { "path": "/tmp/outputs/execution-id" } },
                { "name": PARAM_ITERATION_COUNT,
                  "valueFrom": { "path": "/tmp/outputs/iteration-count", "default": "0" } },
                { "name": PARAM_CONDITION,
                  "valueFrom": { "path": "/tmp/outputs/condition", "default": "true" } },
            ]}),
        );
        let env = self.proxy_env();
        template.insert("container".into(), self.driver_container(args, env));
        self.finish_driver_template(&mut template, uses_ca_bundle);
        self.push_template(template);
        name.to_owned()
    }
}
