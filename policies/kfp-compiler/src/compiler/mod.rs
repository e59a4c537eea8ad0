//! The port of `argocompiler.Compile`: state, argument store and workflow assembly. The
//! template builders live in the submodules, one per Go file.

mod container;
mod dag;
mod drivers;
mod importer;
mod security;
mod spec_patch;
mod visit;
mod workspace;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::argo::{self, ARG_COMPONENTS, ARG_IMPLEMENTATIONS, ARG_KUBERNETES};
use crate::error::CompileError;
use crate::gojson;
use crate::hash::container_hash;
use crate::options::CompileOptions;
use crate::proto::{self, Unknown, deployment, pipeline, platform};
use crate::release::Feature;

pub use visit::ROOT;
use visit::{ExecutorKind, Spec, Visit};

/// What a `PipelineJob` adds to its spec: the run's display name and runtime config.
#[derive(Clone, Copy, Default)]
pub struct JobParts<'a> {
    pub display_name: &'a str,
    /// `PipelineJob.RuntimeConfig` in protojson form.
    pub runtime_config: Option<&'a Value>,
}

/// Compiles a pipeline spec (and the platform spec document that may follow it in the IR).
pub fn compile(
    pipeline_spec: &Value,
    platform_spec: Option<&Value>,
    job: JobParts<'_>,
    options: &CompileOptions,
) -> Result<Value, CompileError> {
    // The deployment spec is a Struct in the spec; it is read once, as the typed config.
    let release = options.release;
    let mut spec = proto::canonicalize_without(
        release,
        &pipeline::PIPELINE_SPEC,
        pipeline_spec,
        Unknown::Reject,
        &["deploymentSpec"],
    )
    .map_err(CompileError::PipelineSpec)?;
    let spec_fields = spec
        .as_object_mut()
        .expect("canonical messages are objects");
    let pipeline_name = spec_fields
        .get("pipelineInfo")
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if pipeline_name.is_empty() {
        return Err(CompileError::MissingPipelineName);
    }
    let executors = match pipeline_spec
        .get("deploymentSpec")
        .or_else(|| pipeline_spec.get("deployment_spec"))
        .filter(|deployment| !deployment.is_null())
    {
        Some(deployment) => {
            let mut deployment = proto::canonicalize_for(
                release,
                &deployment::DEPLOYMENT_CONFIG,
                deployment,
                Unknown::Discard,
            )
            .map_err(CompileError::PipelineSpec)?;
            match deployment.get_mut("executors").map(Value::take) {
                Some(Value::Object(executors)) => executors,
                _ => Map::new(),
            }
        }
        None => Map::new(),
    };
    let Some(root) = spec_fields.remove("root") else {
        return Err(CompileError::MissingRoot);
    };
    let components = match spec_fields.remove("components") {
        Some(Value::Object(components)) => components,
        _ => Map::new(),
    };
    let mut spec = Spec { root, components };

    let kubernetes = match platform_spec {
        Some(document) => kubernetes_platform(document, release)?,
        None => None,
    };
    let runtime_config = runtime_config(job.runtime_config, &spec.root, options)?;

    let pipeline_config = kubernetes.as_ref().and_then(|k| k.get("pipelineConfig"));
    let pipeline_fields = workspace::spec_fields(pipeline_config, options)?;
    let visits = visit::plan(&mut spec, &executors)?;
    let mut compiler = Compiler {
        options,
        spec: &spec,
        executors: &executors,
        kubernetes_executors: kubernetes
            .as_ref()
            .and_then(|k| k.get("deploymentSpec"))
            .and_then(|d| d.get("executors"))
            .and_then(Value::as_object),
        pipeline_name: &pipeline_name,
        display_name: job.display_name,
        runtime_config: &runtime_config,
        arguments: Vec::new(),
        argument_names: BTreeSet::new(),
        templates: Vec::new(),
        template_names: BTreeSet::new(),
        component_keys: BTreeMap::new(),
        kubernetes_configs: BTreeMap::new(),
        pod_metadata: BTreeMap::new(),
    };
    for visit in &visits {
        compiler.visit(visit)?;
    }
    let mut workflow = compiler.into_workflow(pipeline_fields);
    // COMPILED_PIPELINE_SPEC_PATCH from 2.15.0 (#12317).
    if let Some(patch) = options
        .spec_patch
        .as_ref()
        .filter(|_| release.has(Feature::SpecPatch))
    {
        spec_patch::apply(&mut workflow, patch)?;
    }
    Ok(workflow)
}

/// The `kubernetes` entry of a `PlatformSpec` document, canonical.
fn kubernetes_platform(
    document: &Value,
    release: crate::Release,
) -> Result<Option<Value>, CompileError> {
    let mut platform =
        proto::canonicalize_for(release, &platform::PLATFORM_SPEC, document, Unknown::Reject)
            .map_err(CompileError::PlatformSpec)?;
    Ok(platform
        .get_mut("platforms")
        .and_then(|platforms| platforms.get_mut("kubernetes"))
        .map(Value::take))
}

/// The job's runtime config with the root's defaults filled in, as the root driver gets it.
fn runtime_config(
    input: Option<&Value>,
    root: &Value,
    options: &CompileOptions,
) -> Result<Value, CompileError> {
    let mut config = match input {
        Some(input) => proto::canonicalize_for(
            options.release,
            &pipeline::RUNTIME_CONFIG,
            input,
            Unknown::Reject,
        )
        .map_err(CompileError::PipelineJob)?,
        None => json!({}),
    };
    let config_fields = config
        .as_object_mut()
        .expect("canonical messages are objects");
    let mut values = match config_fields.remove("parameterValues") {
        Some(Value::Object(values)) => values,
        _ => Map::new(),
    };
    let parameters = root
        .pointer("/inputDefinitions/parameters")
        .and_then(Value::as_object);
    for (name, parameter) in parameters.into_iter().flatten() {
        if values.contains_key(name) {
            continue;
        }
        if let Some(default) = parameter.get("defaultValue") {
            values.insert(name.clone(), default.clone());
        } else if parameter.get("isOptional") == Some(&Value::Bool(true)) {
            values.insert(name.clone(), Value::Null);
        }
    }
    if !values.is_empty() {
        config_fields.insert("parameterValues".into(), Value::Object(values));
    }
    if let Some(root) = options.pipeline_root.as_ref().filter(|r| !r.is_empty()) {
        config_fields.insert("gcsOutputDirectory".into(), Value::String(root.clone()));
    }
    Ok(config)
}

struct Compiler<'a> {
    options: &'a CompileOptions,
    spec: &'a Spec,
    executors: &'a Map<String, Value>,
    kubernetes_executors: Option<&'a Map<String, Value>>,
    pipeline_name: &'a str,
    display_name: &'a str,
    runtime_config: &'a Value,
    /// `spec.arguments.parameters`, in the order Go appends them.
    arguments: Vec<Value>,
    argument_names: BTreeSet<String>,
    templates: Vec<Value>,
    template_names: BTreeSet<String>,
    /// Component name to its argument key (`root`, a container hash, or the name).
    component_keys: BTreeMap<String, String>,
    /// Stored Kubernetes executor configs by component name.
    kubernetes_configs: BTreeMap<String, Value>,
    /// Pod metadata of each component's Kubernetes config, once parsed.
    pod_metadata: BTreeMap<String, Option<Value>>,
}

impl<'a> Compiler<'a> {
    /// Whether the release compiled for behaves as `feature` describes.
    fn has(&self, feature: Feature) -> bool {
        self.options.release.has(feature)
    }

    /// The runtime-role annotation (2.17.0 on, kubeflow/pipelines#13441).
    fn set_runtime_role(&self, template: &mut Map<String, Value>, role: &str) {
        if self.has(Feature::RuntimeRole) {
            argo::set_runtime_role(template, role);
        }
    }

    fn visit(&mut self, visit: &Visit) -> Result<(), CompileError> {
        match visit {
            Visit::Executor { name, label, kind } => {
                let component = self.planned_component(name);
                if let Some(config) = self.kubernetes_executors.and_then(|k| k.get(label)) {
                    self.kubernetes_configs.insert(name.clone(), config.clone());
                    self.save_argument(&format!("{ARG_KUBERNETES}{name}"), config);
                }
                let executor = &self.executors[label];
                let implementation = match kind {
                    ExecutorKind::Container => &executor["container"],
                    ExecutorKind::Importer => &executor["importer"],
                };
                let key = self.component_key(name);
                self.save_argument(&format!("{ARG_COMPONENTS}{key}"), component);
                self.save_argument(&format!("{ARG_IMPLEMENTATIONS}{key}"), implementation);
                Ok(())
            }
            Visit::Dag { name } => {
                let component = self.planned_component(name);
                self.dag(name, component)
                    .map_err(|e| e.context(format!("compiling DAG {name:?}")))
            }
        }
    }

    /// A visited component: `root` is the spec's root (a component named `root` is never
    /// visited), any other name one of its components.
    fn planned_component(&self, name: &str) -> &'a Value {
        let spec = self.spec;
        if name == ROOT {
            &spec.root
        } else {
            spec.component(name).expect("planned components exist")
        }
    }

    /// Go's `hashComponentContainer`: the container hash for container executors, else the
    /// component name.
    fn component_key(&mut self, name: &str) -> String {
        if name == ROOT {
            return ROOT.to_owned();
        }
        if let Some(key) = self.component_keys.get(name) {
            return key.clone();
        }
        let container = self
            .spec
            .component(name)
            .and_then(|c| c.get("executorLabel"))
            .and_then(Value::as_str)
            .and_then(|label| self.executors.get(label))
            .and_then(|executor| executor.get("container"));
        let key = container.map_or_else(|| name.to_owned(), container_hash);
        self.component_keys.insert(name.to_owned(), key.clone());
        key
    }

    /// Stores `message` as a workflow argument unless one of that name exists already.
    fn save_argument(&mut self, name: &str, message: &Value) {
        if self.argument_names.insert(name.to_owned()) {
            self.arguments
                .push(argo::param_value(name, gojson::to_string(message)));
        }
    }

    fn argument_placeholder(&self, name: &str) -> Result<String, CompileError> {
        if self.argument_names.contains(name) {
            Ok(argo::workflow_parameter(name))
        } else {
            Err(CompileError::Invalid(format!(
                "using component spec: failed to find workflow parameter {name:?}"
            )))
        }
    }

    fn use_component_spec(&mut self, name: &str) -> Result<String, CompileError> {
        let key = self.component_key(name);
        self.argument_placeholder(&format!("{ARG_COMPONENTS}{key}"))
    }

    fn use_component_impl(&mut self, name: &str) -> Result<String, CompileError> {
        let key = self.component_key(name);
        self.argument_placeholder(&format!("{ARG_IMPLEMENTATIONS}{key}"))
    }

    /// The Kubernetes config placeholder, empty when the component has none.
    fn use_kubernetes_impl(&self, name: &str) -> String {
        self.argument_placeholder(&format!("{ARG_KUBERNETES}{name}"))
            .unwrap_or_default()
    }

    /// Adds a DAG-like template; its name must be new.
    fn add_template(
        &mut self,
        mut template: Map<String, Value>,
        name: &str,
    ) -> Result<String, CompileError> {
        template.insert("name".into(), Value::String(name.to_owned()));
        if !self.template_names.insert(name.to_owned()) {
            return Err(CompileError::Invalid(format!(
                "template name={name:?}: template already exists"
            )));
        }
        self.templates.push(Value::Object(template));
        Ok(name.to_owned())
    }

    /// Adds a shared system template under its own name.
    fn push_template(&mut self, template: Map<String, Value>) {
        if let Some(name) = template.get("name").and_then(Value::as_str) {
            self.template_names.insert(name.to_owned());
        }
        self.templates.push(Value::Object(template));
    }

    fn has_template(&self, name: &str) -> bool {
        self.template_names.contains(name)
    }

    fn into_workflow(self, pipeline_fields: Map<String, Value>) -> Value {
        let generate_name = format!(
            "{}-",
            self.pipeline_name
                .rsplit('/')
                .next()
                .unwrap_or(self.pipeline_name)
        );
        // Workflow-level defaults from 2.16.0 (#12782); before, only PIPELINE_RUN_AS_USER.
        let mut security_context = if self.options.release.has(Feature::SecurityContexts) {
            json!({
                "runAsNonRoot": true,
                "seccompProfile": { "type": "RuntimeDefault" }
            })
        } else {
            json!({})
        };
        if let Some(user) = self.options.pipeline_run_as_user {
            security_context["runAsUser"] = json!(user);
        }
        let mut spec = Map::new();
        spec.insert(
            "arguments".into(),
            if self.arguments.is_empty() {
                json!({})
            } else {
                argo::object([("parameters", Value::Array(self.arguments))])
            },
        );
        spec.insert("entrypoint".into(), argo::ENTRYPOINT.into());
        spec.insert(
            "podMetadata".into(),
            json!({
                "annotations": { "pipelines.kubeflow.org/v2_component": "true" },
                "labels": { "pipelines.kubeflow.org/v2_component": "true" }
            }),
        );
        if security_context.as_object().is_some_and(|c| !c.is_empty()) {
            spec.insert("securityContext".into(), security_context);
        }
        spec.insert(
            "serviceAccountName".into(),
            self.options.service_account.as_str().into(),
        );
        if !self.templates.is_empty() {
            spec.insert("templates".into(), Value::Array(self.templates));
        }
        spec.extend(pipeline_fields);
        let mut metadata = argo::object([("generateName", generate_name.into())]);
        if !self.options.release.has(Feature::ArgoV4) {
            // Kubernetes before 0.35 writes a zero `metav1.Time` as null.
            metadata["creationTimestamp"] = Value::Null;
        }
        argo::object([
            ("apiVersion", "argoproj.io/v1alpha1".into()),
            ("kind", "Workflow".into()),
            ("metadata", metadata),
            ("spec", Value::Object(spec)),
            ("status", json!({ "startedAt": null, "finishedAt": null })),
        ])
    }
}

/// The trigger strategy name of a task (`TRIGGER_STRATEGY_UNSPECIFIED` when unset).
fn strategy(task: &Value) -> &str {
    task.get("triggerPolicy")
        .and_then(|p| p.get("strategy"))
        .and_then(Value::as_str)
        .unwrap_or(pipeline::TRIGGER_STRATEGY[0])
}

fn is_exit_task(task: &Value) -> bool {
    strategy(task) == "ALL_UPSTREAM_TASKS_COMPLETED"
}

fn condition(task: &Value) -> &str {
    task.get("triggerPolicy")
        .and_then(|p| p.get("condition"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn dependent_tasks(task: &Value) -> Vec<&str> {
    task.get("dependentTasks")
        .and_then(Value::as_array)
        .map(|deps| deps.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn component_ref(task: &Value) -> &str {
    task.get("componentRef")
        .and_then(|r| r.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}
