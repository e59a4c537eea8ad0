//! Importer components: one launcher-run pod that registers an existing artifact (Go's
//! `importer.go`).

use serde_json::{Map, Value, json};

use super::{Compiler, component_ref};
use crate::argo::{self, *};
use crate::error::CompileError;
use crate::release::Feature;

const WORKSPACE_VOLUME: &str = "kfp-workspace";
const WORKSPACE_MOUNT_PATH: &str = "/kfp-workspace";

impl Compiler<'_> {
    pub(super) fn importer_task(
        &mut self,
        name: &str,
        task: &Value,
        task_json: &str,
        parent_dag_id: &str,
        download_to_workspace: bool,
    ) -> Result<Map<String, Value>, CompileError> {
        let component = self.use_component_spec(component_ref(task))?;
        let importer = self.use_component_impl(component_ref(task))?;
        let template = self.add_importer_template(download_to_workspace);
        Ok(argo::dag_task(
            name,
            &template,
            vec![
                param_value(PARAM_TASK, task_json),
                param_value(PARAM_COMPONENT, component),
                param_value(PARAM_IMPORTER, importer),
                param_value(PARAM_PARENT_DAG_ID, parent_dag_id),
            ],
        ))
    }

    fn add_importer_template(&mut self, download_to_workspace: bool) -> String {
        let name = if download_to_workspace {
            "system-importer-workspace"
        } else {
            "system-importer"
        };
        if self.has_template(name) {
            return name.to_owned();
        }
        let options = self.options;
        let mut args = vec![
            "--executor_type".to_owned(),
            "importer".to_owned(),
            "--task_spec".to_owned(),
            input_parameter(PARAM_TASK),
            "--component_spec".to_owned(),
            input_parameter(PARAM_COMPONENT),
            "--importer_spec".to_owned(),
            input_parameter(PARAM_IMPORTER),
            "--pipeline_name".to_owned(),
            self.pipeline_name.to_owned(),
            "--run_id".to_owned(),
            RUN_ID.to_owned(),
            "--parent_dag_id".to_owned(),
            input_parameter(PARAM_PARENT_DAG_ID),
            "--pod_name".to_owned(),
            "$(KFP_POD_NAME)".to_owned(),
            "--pod_uid".to_owned(),
            "$(KFP_POD_UID)".to_owned(),
        ];
        // Literals from 2.15.0 (#12428); 2.14.4 read them from `metadata-grpc-configmap`.
        let (address, port) = if self.has(Feature::ServerAddressFlags) {
            (
                options.mlmd_server.address.clone(),
                options.mlmd_server.port.clone(),
            )
        } else {
            (
                "$(METADATA_GRPC_SERVICE_HOST)".to_owned(),
                "$(METADATA_GRPC_SERVICE_PORT)".to_owned(),
            )
        };
        args.extend(["--mlmd_server_address".to_owned(), address]);
        args.extend(["--mlmd_server_port".to_owned(), port]);
        let uses_ca_bundle = self.push_shared_flags(&mut args);

        let mut template = argo::template(name);
        argo::input_parameters(
            &mut template,
            vec![
                param(PARAM_TASK),
                param(PARAM_COMPONENT),
                param(PARAM_IMPORTER),
                param(PARAM_PARENT_DAG_ID),
            ],
        );
        let mut container = argo::object([
            ("name", "".into()),
            ("image", options.launcher_image.as_str().into()),
            (
                "command",
                argo::strings(options.launcher_command.iter().map(String::as_str)),
            ),
            ("args", argo::strings(args)),
            ("envFrom", Value::Array(vec![metadata_env_from()])),
            ("env", Value::Array(common_envs())),
            ("resources", driver_resources()),
        ]);
        if download_to_workspace {
            container["volumeMounts"] =
                json!([{ "name": WORKSPACE_VOLUME, "mountPath": WORKSPACE_MOUNT_PATH }]);
            template.insert(
                "volumes".into(),
                json!([{
                    "name": WORKSPACE_VOLUME,
                    "persistentVolumeClaim": { "claimName": format!("{RUN_NAME}-{WORKSPACE_VOLUME}") }
                }]),
            );
        }
        template.insert("container".into(), container);
        self.set_runtime_role(&mut template, "launcher");
        if uses_ca_bundle {
            self.add_ca_bundle(&mut template);
        }
        if self.has(Feature::SecurityContexts) {
            super::security::apply_to_template(&mut template);
        }
        self.push_template(template);
        name.to_owned()
    }
}
