//! DAG components, tasks and ParallelFor iterators (Go's `dag.go`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Compiler, ROOT, component_ref, condition, dependent_tasks, is_exit_task};
use crate::argo::{self, *};
use crate::error::CompileError;
use crate::gojson;
use crate::release::Feature;

/// Where a task sits: its parent DAG's execution, and for loop bodies the iteration.
#[derive(Default)]
pub(super) struct TaskInputs<'a> {
    pub parent_dag_id: String,
    pub iteration_index: Option<String>,
    /// Exit handler template to hook to this task.
    pub exit_template: &'a str,
    /// Task name the driver resolves inputs under, when not the Argo task's own.
    pub task_name: Option<&'a str>,
}

/// What a DAG driver task hands to the tasks after it.
pub(super) struct DagDriverOutputs {
    pub execution_id: String,
    pub iteration_count: String,
    pub condition: String,
}

#[derive(Default)]
pub(super) struct DagDriverInputs<'a> {
    pub parent_dag_id: &'a str,
    pub component: &'a str,
    pub task: &'a str,
    pub task_name: &'a str,
    pub runtime_config: Option<&'a Value>,
    pub iteration_index: Option<&'a str>,
}

impl Compiler<'_> {
    pub(super) fn dag(&mut self, name: &str, component: &Value) -> Result<(), CompileError> {
        let key = self.component_key(name);
        self.save_argument(&format!("{ARG_COMPONENTS}{key}"), component);
        let empty = Map::new();
        let tasks = component
            .get("dag")
            .and_then(|dag| dag.get("tasks"))
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let parent_dag_id = input_parameter(PARAM_PARENT_DAG_ID);

        // Exit tasks first: they become lifecycle hooks of the tasks they depend on.
        let mut exit_template_of: BTreeMap<&str, String> = BTreeMap::new();
        for (task_name, task) in tasks {
            if task.get("artifactIterator").is_some() {
                return Err(CompileError::Unsupported(
                    "artifact iterator not implemented yet".into(),
                ));
            }
            if !is_exit_task(task) {
                continue;
            }
            let hook_tasks = self.task(
                task_name,
                task,
                TaskInputs {
                    parent_dag_id: parent_dag_id.clone(),
                    ..TaskInputs::default()
                },
            )?;
            let exit_name = format!("exit-hook-{name}-{task_name}");
            for dependency in dependent_tasks(task) {
                exit_template_of.insert(dependency, exit_name.clone());
            }
            let template =
                argo::dag_template(&exit_name, vec![param(PARAM_PARENT_DAG_ID)], hook_tasks);
            self.add_template(template, &exit_name)
                .map_err(|e| e.context("DAG"))?;
        }

        let mut dag_tasks = Vec::new();
        for (task_name, task) in tasks {
            if is_exit_task(task) {
                continue;
            }
            let exit_template = exit_template_of
                .get(task_name.as_str())
                .map_or("", String::as_str);
            dag_tasks.extend(self.task(
                task_name,
                task,
                TaskInputs {
                    parent_dag_id: parent_dag_id.clone(),
                    exit_template,
                    ..TaskInputs::default()
                },
            )?);
        }
        if dag_tasks.is_empty() {
            return Err(CompileError::Invalid(format!(
                "DAG {name} must contain one or more non-exit tasks"
            )));
        }
        let template = argo::dag_template(name, vec![param(PARAM_PARENT_DAG_ID)], dag_tasks);
        self.add_template(template, name)
            .map_err(|e| e.context("DAG"))?;
        if name == ROOT {
            self.add_entrypoint()?;
        }
        Ok(())
    }

    /// The entrypoint: the root DAG driver, then the root DAG.
    fn add_entrypoint(&mut self) -> Result<(), CompileError> {
        let driver_name = format!("{ROOT}-driver");
        let component = self.use_component_spec(ROOT)?;
        let runtime_config = self.runtime_config;
        let (driver, outputs) = self.dag_driver_task(
            &driver_name,
            DagDriverInputs {
                component: &component,
                runtime_config: Some(runtime_config),
                ..DagDriverInputs::default()
            },
        );
        let mut root = self.dag_task(ROOT, ROOT, &outputs.execution_id, "", "", "");
        root.insert("depends".into(), Value::String(depends(&[&driver_name])));
        let mut entrypoint = argo::template(ENTRYPOINT);
        entrypoint.insert(
            "dag".into(),
            argo::object([(
                "tasks",
                Value::Array(vec![Value::Object(driver), Value::Object(root)]),
            )]),
        );
        self.add_template(entrypoint, ENTRYPOINT)?;
        Ok(())
    }

    /// The Argo tasks for one pipeline task.
    pub(super) fn task(
        &mut self,
        name: &str,
        task: &Value,
        inputs: TaskInputs<'_>,
    ) -> Result<Vec<Value>, CompileError> {
        self.task_inner(name, task, inputs)
            .map_err(|e| e.context(format!("compiling task {name:?}")))
    }

    fn task_inner(
        &mut self,
        name: &str,
        task: &Value,
        inputs: TaskInputs<'_>,
    ) -> Result<Vec<Value>, CompileError> {
        let component_name = component_ref(task);
        let spec = self.spec;
        let Some(component) = spec.component(component_name) else {
            return Err(CompileError::Invalid(format!(
                "component spec for {component_name:?} not found"
            )));
        };
        let component_placeholder = self.use_component_spec(component_name)?;
        let task_json = gojson::to_string(task);
        let is_iterator = inputs.iteration_index.is_none()
            && (task.get("parameterIterator").is_some() || task.get("artifactIterator").is_some());
        if is_iterator {
            return self
                .iterator_task(name, task, &task_json, &inputs.parent_dag_id)
                .map_err(|e| e.context("iterator task"));
        }
        let effective_task_name = inputs.task_name.unwrap_or(name);
        let runs_after_upstream = inputs.iteration_index.is_none() && !is_exit_task(task);

        if component.get("dag").is_some() {
            let driver_name = format!("{name}-driver");
            let (mut driver, outputs) = self.dag_driver_task(
                &driver_name,
                DagDriverInputs {
                    parent_dag_id: &inputs.parent_dag_id,
                    component: &component_placeholder,
                    task: &task_json,
                    iteration_index: inputs.iteration_index.as_deref(),
                    task_name: effective_task_name,
                    runtime_config: None,
                },
            );
            if runs_after_upstream {
                set_nonempty(&mut driver, "depends", depends(&dependent_tasks(task)));
            }
            let mut dag = self.dag_task(
                name,
                component_name,
                &outputs.execution_id,
                inputs.exit_template,
                &inputs.parent_dag_id,
                &outputs.condition,
            );
            dag.insert("depends".into(), Value::String(depends(&[&driver_name])));
            if !condition(task).is_empty() {
                dag.insert(
                    "when".into(),
                    Value::String(format!("{} != false", outputs.condition)),
                );
            }
            return Ok(vec![Value::Object(driver), Value::Object(dag)]);
        }

        let Some(label) = component.get("executorLabel").and_then(Value::as_str) else {
            return Err(CompileError::Invalid(
                "unsupported component implementation kind: <nil>".into(),
            ));
        };
        let Some(executor) = self.executors.get(label) else {
            return Err(CompileError::Invalid(format!(
                "executor with label {label:?} not found"
            )));
        };
        if let Some(container) = executor.get("container") {
            return self.container_tasks(
                name,
                task,
                &inputs,
                &component_placeholder,
                &task_json,
                container,
                runs_after_upstream,
            );
        }
        if let Some(importer) = executor.get("importer") {
            if !condition(task).is_empty() {
                return Err(CompileError::Unsupported(
                    "triggerPolicy.condition on importer task is not supported".into(),
                ));
            }
            // `system-importer-workspace` from 2.15.0 (#12353).
            let download = self.has(Feature::ImporterWorkspace)
                && importer.get("downloadToWorkspace") == Some(&Value::Bool(true));
            let importer =
                self.importer_task(name, task, &task_json, &inputs.parent_dag_id, download)?;
            return Ok(vec![Value::Object(importer)]);
        }
        Err(if executor.get("resolver").is_some() {
            CompileError::Unsupported("resolver executors not implemented".into())
        } else if executor.get("customJob").is_some() {
            CompileError::Unsupported(
                "custom job executors is Google Cloud only, it's not supported".into(),
            )
        } else {
            CompileError::Invalid("unknown executor spec type: <nil>".into())
        })
    }

    /// A ParallelFor: an iterator template whose driver counts the items, running one
    /// iteration template per item.
    fn iterator_task(
        &mut self,
        name: &str,
        task: &Value,
        task_json: &str,
        parent_dag_id: &str,
    ) -> Result<Vec<Value>, CompileError> {
        let component_name = component_ref(task);
        let iterator_tasks = self
            .iteration_item_tasks(task, task_json, parent_dag_id, name)
            .map_err(|e| e.context("iterationItem task"))?;
        let mut loop_template =
            argo::dag_template("", vec![param(PARAM_PARENT_DAG_ID)], iterator_tasks);
        let parallelism = task
            .get("iteratorPolicy")
            .and_then(|p| p.get("parallelismLimit"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if parallelism > 0 {
            loop_template.insert("parallelism".into(), json!(parallelism));
        }
        let loop_name =
            self.add_template(loop_template, &format!("{component_name}-{name}-iterator"))?;
        let mut iterator = argo::dag_task(
            name,
            &loop_name,
            vec![param_value(PARAM_PARENT_DAG_ID, parent_dag_id)],
        );
        set_nonempty(&mut iterator, "depends", depends(&dependent_tasks(task)));
        Ok(vec![Value::Object(iterator)])
    }

    fn iteration_item_tasks(
        &mut self,
        task: &Value,
        task_json: &str,
        parent_dag_id: &str,
        parallel_for_task: &str,
    ) -> Result<Vec<Value>, CompileError> {
        let component_name = component_ref(task);
        let component = self.use_component_spec(component_name)?;
        let driver_name = "iteration-driver";
        // From 2.16.0 the iteration driver and the tasks of each iteration resolve inputs
        // under the ParallelFor task's name (#12808); before, the iteration driver has no
        // task name and an iteration's task is `iteration-item`.
        let parallel_for_task = if self.has(Feature::IterationTaskName) {
            Some(parallel_for_task)
        } else {
            None
        };
        let (driver, outputs) = self.dag_driver_task(
            driver_name,
            DagDriverInputs {
                component: &component,
                parent_dag_id,
                task: task_json,
                task_name: parallel_for_task.unwrap_or(""),
                ..DagDriverInputs::default()
            },
        );
        let iteration_tasks = self.task(
            "iteration-item",
            task,
            TaskInputs {
                parent_dag_id: input_parameter(PARAM_PARENT_DAG_ID),
                iteration_index: Some(input_parameter(PARAM_ITERATION_INDEX)),
                task_name: parallel_for_task,
                ..TaskInputs::default()
            },
        )?;
        let iterations_template = argo::dag_template(
            "",
            vec![param(PARAM_PARENT_DAG_ID), param(PARAM_ITERATION_INDEX)],
            iteration_tasks,
        );
        let iterations_name =
            self.add_template(iterations_template, &format!("{component_name}-iteration"))?;
        let mut iterations = argo::dag_task(
            "iteration-iterations",
            &iterations_name,
            vec![
                param_value(PARAM_PARENT_DAG_ID, outputs.execution_id),
                param_value(PARAM_ITERATION_INDEX, LOOP_ITEM),
            ],
        );
        iterations.insert("depends".into(), Value::String(depends(&[driver_name])));
        if !condition(task).is_empty() {
            iterations.insert(
                "when".into(),
                Value::String(format!("{} != false", outputs.condition)),
            );
        }
        iterations.insert(
            "withSequence".into(),
            json!({ "count": outputs.iteration_count }),
        );
        Ok(vec![Value::Object(driver), Value::Object(iterations)])
    }

    pub(super) fn dag_driver_task(
        &mut self,
        name: &str,
        inputs: DagDriverInputs<'_>,
    ) -> (Map<String, Value>, DagDriverOutputs) {
        let mut parameters = vec![param_value(PARAM_COMPONENT, inputs.component)];
        if let Some(index) = inputs.iteration_index {
            parameters.push(param_value(PARAM_ITERATION_INDEX, index));
        }
        if !inputs.parent_dag_id.is_empty() {
            parameters.push(param_value(PARAM_PARENT_DAG_ID, inputs.parent_dag_id));
        }
        if let Some(config) = inputs.runtime_config {
            parameters.push(param_value(PARAM_RUNTIME_CONFIG, gojson::to_string(config)));
            parameters.push(param_value(PARAM_DRIVER_TYPE, "ROOT_DAG"));
        }
        if !inputs.task.is_empty() {
            parameters.push(param_value(PARAM_TASK, inputs.task));
        }
        // Before 2.16.0 a DAG inside a ParallelFor iteration got no task name (#12808).
        if !inputs.task_name.is_empty()
            && (self.has(Feature::IterationTaskName) || inputs.task_name != "iteration-item")
        {
            parameters.push(param_value(PARAM_TASK_NAME, inputs.task_name));
        }
        let template = self.add_dag_driver_template();
        let task = argo::dag_task(name, &template, parameters);
        let outputs = DagDriverOutputs {
            execution_id: task_output_parameter(name, PARAM_EXECUTION_ID),
            iteration_count: task_output_parameter(name, PARAM_ITERATION_COUNT),
            condition: task_output_parameter(name, PARAM_CONDITION),
        };
        (task, outputs)
    }

    /// The task running a DAG component's template.
    fn dag_task(
        &self,
        name: &str,
        component_name: &str,
        parent_dag_id: &str,
        exit_template: &str,
        hook_parent_dag_id: &str,
        condition: &str,
    ) -> Map<String, Value> {
        let mut task = argo::dag_task(
            name,
            component_name,
            vec![
                param_value(PARAM_PARENT_DAG_ID, parent_dag_id),
                param_value(PARAM_CONDITION, condition),
            ],
        );
        argo::add_exit_hook(&mut task, exit_template, hook_parent_dag_id);
        task
    }
}
