//! Rebuilding the IR from a workflow compiled by KFP 2.x.
//!
//! KFP stores each visited component spec, executor and Kubernetes executor config as JSON in
//! the workflow: as `spec.arguments.parameters` named `components-<key>`,
//! `implementations-<key>` and `kubernetes-<component>` since 2.3, as metadata annotations
//! `pipelines.kubeflow.org/components-<component>` (and so on) in 2.0 to 2.2. The key is the
//! component name, `root`, or (2.3 on) the SHA-256 of the container, so the driver tasks,
//! which name both the task's component and the stored spec they use, tie names to keys.

mod platform;
mod stores;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::argo::{ARG_COMPONENTS, ARG_IMPLEMENTATIONS, ARG_KUBERNETES};
pub use stores::Layout;
use stores::Stores;

/// The IR a compiled workflow carries, ready to compile again ([`RecoveredIr::pipeline_job`]
/// or [`crate::compile_job`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveredIr {
    /// `PipelineSpec` (protojson): `pipelineInfo.name`, `root`, the components the pipeline
    /// uses and their executors, in the form the compiler stored them.
    pub pipeline_spec: Value,
    /// `PlatformSpec` document (`{"platforms": {"kubernetes": ...}}`) when the workflow has
    /// Kubernetes executor configs or pipeline-level settings.
    pub platform_spec: Option<Value>,
    /// The run's `RuntimeConfig` (protojson), as the root driver gets it.
    pub runtime_config: Option<Value>,
    /// The run's display name (`--run_display_name`, written since KFP 2.5).
    pub display_name: String,
    /// Where the IR was stored.
    pub layout: Layout,
}

impl RecoveredIr {
    /// A `PipelineJob` for [`crate::compile_job`].
    pub fn pipeline_job(&self) -> Value {
        let mut job = Map::new();
        job.insert("pipelineSpec".into(), self.pipeline_spec.clone());
        if !self.display_name.is_empty() {
            job.insert(
                "displayName".into(),
                Value::String(self.display_name.clone()),
            );
        }
        if let Some(config) = &self.runtime_config {
            job.insert("runtimeConfig".into(), config.clone());
        }
        Value::Object(job)
    }
}

/// Why a workflow gave no IR back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecoverError {
    /// Not an Argo `Workflow` object at all.
    #[error("not an Argo Workflow: {0}")]
    NotAWorkflow(String),
    /// A KFP v1 pipeline: compiled by the v1 SDK, it carries no v2 IR.
    #[error("a KFP v1 pipeline workflow: it carries no v2 pipeline spec to recover")]
    KfpV1,
    /// A workflow KFP did not compile.
    #[error("not compiled by KFP v2: {0}")]
    NotKfp(String),
    /// A KFP v2 workflow whose stored IR is incomplete or unreadable.
    #[error("KFP v2 workflow with a damaged IR: {0}")]
    Damaged(String),
}

/// The pipeline spec, platform spec, runtime config and display name stored in a workflow
/// compiled by KFP 2.0 or later. `workflow` may also be the JSON text of one (as a
/// ScheduledWorkflow embeds it).
pub fn recover_ir(workflow: &Value) -> Result<RecoveredIr, RecoverError> {
    if let Value::String(text) = workflow {
        let parsed: Value = serde_json::from_str(text)
            .map_err(|e| RecoverError::NotAWorkflow(format!("a string that is not JSON: {e}")))?;
        return recover_ir(&parsed);
    }
    check_is_workflow(workflow)?;
    let stores = Stores::collect(workflow);
    if !stores.has(&format!("{ARG_COMPONENTS}root")) {
        return Err(not_v2_reason(workflow));
    }
    let references = stores::references(workflow, &stores);
    let mut spec = Map::new();
    let pipeline_name = pipeline_name(workflow)?;
    spec.insert(
        "pipelineInfo".into(),
        crate::argo::object([("name", pipeline_name.into())]),
    );

    let root = stores.json(&format!("{ARG_COMPONENTS}root"))?;
    let mut walk = Walk {
        stores: &stores,
        references: &references,
        components: Map::new(),
        executors: Map::new(),
        kubernetes_executors: Map::new(),
        labels_in_use: BTreeMap::new(),
        // Go marks root visited first, so a component named `root` is never visited.
        seen: BTreeSet::from(["root".to_owned()]),
    };
    for child in referenced_components(&root) {
        walk.visit(child)?;
    }
    let Walk {
        components,
        executors,
        kubernetes_executors,
        ..
    } = walk;
    spec.insert("root".into(), root);
    if !components.is_empty() {
        spec.insert("components".into(), Value::Object(components));
    }
    spec.insert(
        "deploymentSpec".into(),
        crate::argo::object([("executors", Value::Object(executors))]),
    );

    let platform_spec = platform::platform_spec(workflow, kubernetes_executors);
    Ok(RecoveredIr {
        pipeline_spec: Value::Object(spec),
        platform_spec,
        runtime_config: runtime_config(workflow)?,
        display_name: flag_value(workflow, "--run_display_name").unwrap_or_default(),
        layout: stores.layout(),
    })
}

/// Components in the compiler's visiting order (depth first, tasks by name), so the first
/// of several components sharing a stored spec is the one that spec belongs to.
struct Walk<'a> {
    stores: &'a Stores,
    references: &'a stores::References,
    components: Map<String, Value>,
    executors: Map<String, Value>,
    kubernetes_executors: Map<String, Value>,
    labels_in_use: BTreeMap<String, (Value, Option<Value>)>,
    seen: BTreeSet<String>,
}

impl Walk<'_> {
    fn visit(&mut self, name: String) -> Result<(), RecoverError> {
        if !self.seen.insert(name.clone()) {
            return Ok(());
        }
        let key = self
            .references
            .component_key(&name)
            .unwrap_or_else(|| format!("{ARG_COMPONENTS}{name}"));
        let mut component = self.stores.json(&key).map_err(|_| {
            RecoverError::Damaged(format!("no stored spec for component {name:?} ({key})"))
        })?;
        if let Some(label) = component.get("executorLabel").and_then(Value::as_str) {
            let implementation = self
                .references
                .implementation_key(&name)
                .unwrap_or_else(|| format!("{ARG_IMPLEMENTATIONS}{name}"));
            let executor = executor(
                self.stores,
                &implementation,
                self.references.is_importer(&name),
            )?;
            let kubernetes = self.stores.json(&format!("{ARG_KUBERNETES}{name}")).ok();
            let label = unique_label(
                label,
                &name,
                &executor,
                &kubernetes,
                &mut self.labels_in_use,
            );
            component["executorLabel"] = Value::String(label.clone());
            self.executors.insert(label.clone(), executor);
            if let Some(config) = kubernetes {
                self.kubernetes_executors.insert(label, config);
            }
        } else {
            for child in referenced_components(&component) {
                self.visit(child)?;
            }
        }
        self.components.insert(name, component);
        Ok(())
    }
}

fn check_is_workflow(workflow: &Value) -> Result<(), RecoverError> {
    let Value::Object(object) = workflow else {
        return Err(RecoverError::NotAWorkflow("not a JSON object".into()));
    };
    match object.get("kind").and_then(Value::as_str) {
        None | Some("Workflow") => {}
        Some("ScheduledWorkflow") => {
            return Err(RecoverError::NotAWorkflow(
                "a ScheduledWorkflow: pass the workflow it embeds in spec.workflow.spec \
                 (a reference-only ScheduledWorkflow embeds none)"
                    .into(),
            ));
        }
        Some(kind) => return Err(RecoverError::NotAWorkflow(format!("kind is {kind:?}"))),
    }
    if !object.get("spec").is_some_and(Value::is_object) {
        return Err(RecoverError::NotAWorkflow("no spec".into()));
    }
    Ok(())
}

/// Why a workflow without `components-root` is not a KFP v2 compile.
fn not_v2_reason(workflow: &Value) -> RecoverError {
    let annotations = workflow
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let has_annotation = |key: &str| annotations.is_some_and(|a| a.contains_key(key));
    let templates = workflow
        .pointer("/spec/templates")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let v1_template = templates.iter().any(|template| {
        let annotations = template
            .pointer("/metadata/annotations")
            .and_then(Value::as_object);
        annotations.is_some_and(|a| {
            a.contains_key("pipelines.kubeflow.org/component_spec")
                || a.contains_key("pipelines.kubeflow.org/component_ref")
        })
    });
    if has_annotation("pipelines.kubeflow.org/pipeline_spec") || v1_template {
        return RecoverError::KfpV1;
    }
    let v2_marker = workflow
        .pointer("/spec/podMetadata/labels/pipelines.kubeflow.org~1v2_component")
        .is_some()
        || templates.iter().any(|t| {
            matches!(
                t.get("name").and_then(Value::as_str),
                Some("system-container-driver" | "system-dag-driver")
            )
        });
    if v2_marker {
        RecoverError::Damaged("no components-root argument or annotation".into())
    } else {
        RecoverError::NotKfp("no KFP component specs among its arguments or annotations".into())
    }
}

/// Component names the tasks of a DAG component refer to, in task name order.
fn referenced_components(component: &Value) -> Vec<String> {
    component
        .pointer("/dag/tasks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|tasks| tasks.values())
        .filter_map(|task| task.pointer("/componentRef/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

fn executor(stores: &Stores, key: &str, is_importer: Option<bool>) -> Result<Value, RecoverError> {
    let implementation = stores
        .json(key)
        .map_err(|_| RecoverError::Damaged(format!("no stored executor {key}")))?;
    // Before 2.3 there may be no driver task to say which kind it is; the fields tell.
    let importer = is_importer.unwrap_or_else(|| {
        implementation.get("artifactUri").is_some() || implementation.get("typeSchema").is_some()
    });
    let kind = if importer { "importer" } else { "container" };
    Ok(crate::argo::object([(kind, implementation)]))
}

/// The executor label a component gets back. Components with identical containers share one
/// stored spec, so a later one comes back with the first one's label; when its executor or
/// Kubernetes config differs, it gets a label of its own (`exec-` and its name).
fn unique_label(
    stored: &str,
    component: &str,
    executor: &Value,
    kubernetes: &Option<Value>,
    in_use: &mut BTreeMap<String, (Value, Option<Value>)>,
) -> String {
    let fits =
        |label: &str, in_use: &BTreeMap<String, (Value, Option<Value>)>| match in_use.get(label) {
            None => true,
            Some((used_executor, used_kubernetes)) => {
                used_executor == executor && used_kubernetes == kubernetes
            }
        };
    let mut label = stored.to_owned();
    if !fits(&label, in_use) {
        let base = format!(
            "exec-{}",
            component.strip_prefix("comp-").unwrap_or(component)
        );
        label = base.clone();
        let mut n = 2;
        while !fits(&label, in_use) {
            label = format!("{base}-{n}");
            n += 1;
        }
    }
    in_use.insert(label.clone(), (executor.clone(), kubernetes.clone()));
    label
}

fn pipeline_name(workflow: &Value) -> Result<String, RecoverError> {
    if let Some(name) = flag_value(workflow, "--pipeline_name").filter(|n| !n.is_empty()) {
        return Ok(name);
    }
    workflow
        .pointer("/metadata/generateName")
        .and_then(Value::as_str)
        .map(|name| name.strip_suffix('-').unwrap_or(name).to_owned())
        .filter(|name| !name.is_empty())
        .ok_or_else(|| RecoverError::Damaged("no --pipeline_name flag and no generateName".into()))
}

/// The value after `flag` in the first template container that takes it.
fn flag_value(workflow: &Value, flag: &str) -> Option<String> {
    workflow
        .pointer("/spec/templates")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|t| t.pointer("/container/args").and_then(Value::as_array))
        .find_map(|args| {
            let position = args.iter().position(|a| a == flag)?;
            args.get(position + 1)?.as_str().map(str::to_owned)
        })
}

/// The root driver's `runtime-config` argument.
fn runtime_config(workflow: &Value) -> Result<Option<Value>, RecoverError> {
    for task in stores::dag_tasks(workflow) {
        let parameters = task
            .pointer("/arguments/parameters")
            .and_then(Value::as_array);
        let config = parameters
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "runtime-config")
            .and_then(|p| p.get("value"))
            .and_then(Value::as_str);
        if let Some(text) = config {
            return serde_json::from_str(text)
                .map(Some)
                .map_err(|e| RecoverError::Damaged(format!("runtime-config is not JSON: {e}")));
        }
    }
    Ok(None)
}
