//! The order in which KFP's visitor meets components, and the edits it makes on the way.
//!
//! Go walks the spec depth first from `root`, tasks in name order, each component once,
//! children before their DAG. On the way down a task without a retry policy inherits the one
//! of the task that refers to its DAG (first visit only); when a DAG is reached, every task
//! gets the producers of its inputs added to `dependentTasks`. Both edits show up in the
//! stored component and task JSON. They only touch the component being visited, so they are
//! applied here, before anything is written, and the visits are replayed in order after.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::CompileError;

pub const ROOT: &str = "root";

/// The pipeline's components, root kept apart: a component named `root` is never visited.
pub struct Spec {
    pub root: Value,
    pub components: Map<String, Value>,
}

impl Spec {
    pub fn component(&self, name: &str) -> Option<&Value> {
        self.components.get(name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutorKind {
    Container,
    Importer,
}

pub enum Visit {
    Executor {
        name: String,
        label: String,
        kind: ExecutorKind,
    },
    Dag {
        name: String,
    },
}

/// Visits in Go's order, with `spec` edited as Go edits it.
pub fn plan(spec: &mut Spec, executors: &Map<String, Value>) -> Result<Vec<Visit>, CompileError> {
    let mut walk = Walk {
        spec,
        executors,
        visited: BTreeSet::new(),
        visits: Vec::new(),
    };
    walk.visit(ROOT, true, None)?;
    Ok(walk.visits)
}

struct Walk<'a> {
    spec: &'a mut Spec,
    executors: &'a Map<String, Value>,
    visited: BTreeSet<String>,
    visits: Vec<Visit>,
}

impl Walk<'_> {
    fn component_mut(&mut self, name: &str, is_root: bool) -> Option<&mut Value> {
        if is_root {
            Some(&mut self.spec.root)
        } else {
            self.spec.components.get_mut(name)
        }
    }

    fn task_mut(
        &mut self,
        component: &str,
        is_root: bool,
        task: &str,
    ) -> Option<&mut Map<String, Value>> {
        self.component_mut(component, is_root)?
            .get_mut("dag")?
            .get_mut("tasks")?
            .get_mut(task)?
            .as_object_mut()
    }

    fn visit(
        &mut self,
        name: &str,
        is_root: bool,
        inherited_retry: Option<Value>,
    ) -> Result<(), CompileError> {
        if !self.visited.insert(name.to_owned()) {
            return Ok(());
        }
        let Some(component) = self.component_mut(name, is_root) else {
            return Ok(());
        };
        if let Some(label) = component
            .get("executorLabel")
            .and_then(Value::as_str)
            .filter(|label| !label.is_empty())
        {
            let label = label.to_owned();
            let Some(executor) = self.executors.get(&label) else {
                return Err(CompileError::UnknownExecutor {
                    component: name.to_owned(),
                    label,
                });
            };
            let kind = if executor.get("container").is_some() {
                ExecutorKind::Container
            } else if executor.get("importer").is_some() {
                ExecutorKind::Importer
            } else {
                return Err(CompileError::Unsupported(format!(
                    "error processing component name={name:?}: executor(label={label:?}): \
                     non-container and non-importer executor not implemented"
                )));
            };
            self.visits.push(Visit::Executor {
                name: name.to_owned(),
                label,
                kind,
            });
            return Ok(());
        }
        let task_names: Vec<String> = match component.get("dag") {
            Some(dag) => dag
                .get("tasks")
                .and_then(Value::as_object)
                .map(|tasks| tasks.keys().cloned().collect())
                .unwrap_or_default(),
            None => {
                return Err(CompileError::Invalid(format!(
                    "error processing component name={name:?}: unknown component implementation"
                )));
            }
        };
        for task_name in &task_names {
            let Some(task) = self.task_mut(name, is_root, task_name) else {
                continue;
            };
            let reference = task
                .get("componentRef")
                .and_then(|r| r.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if reference.is_empty() {
                let display = task
                    .get("taskInfo")
                    .and_then(|i| i.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                return Err(CompileError::Invalid(format!(
                    "error processing component name={name:?}: component ref name is empty for \
                     task name={display:?}"
                )));
            }
            if !self.spec.components.contains_key(&reference) {
                return Err(CompileError::UnknownComponent {
                    component: name.to_owned(),
                    reference,
                });
            }
            let task = self
                .task_mut(name, is_root, task_name)
                .expect("task looked up above");
            if !task.contains_key("retryPolicy")
                && let Some(retry) = &inherited_retry
            {
                task.insert("retryPolicy".into(), retry.clone());
            }
            let retry = task.get("retryPolicy").cloned();
            self.visit(&reference, false, retry)?;
        }
        if let Some(component) = self.component_mut(name, is_root) {
            add_implicit_dependencies(component)
                .map_err(|e| e.context(format!("compiling DAG {name:?}")))?;
        }
        self.visits.push(Visit::Dag {
            name: name.to_owned(),
        });
        Ok(())
    }
}

/// Adds each task's input producers to its `dependentTasks`, after the listed ones.
fn add_implicit_dependencies(component: &mut Value) -> Result<(), CompileError> {
    let Some(tasks) = component
        .get_mut("dag")
        .and_then(|dag| dag.get_mut("tasks"))
        .and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    let names: BTreeSet<String> = tasks.keys().cloned().collect();
    for task in tasks.values_mut() {
        let producers = producers(task);
        if producers.is_empty() {
            continue;
        }
        let Some(task) = task.as_object_mut() else {
            continue;
        };
        for producer in producers {
            if !names.contains(&producer) {
                return Err(CompileError::Invalid(format!(
                    "failed to add implicit deps: unknown producer task {producer:?} in DAG"
                )));
            }
            let dependent = task
                .entry("dependentTasks")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = dependent
                && !list.iter().any(|d| d.as_str() == Some(&producer))
            {
                list.push(Value::String(producer));
            }
        }
    }
    Ok(())
}

/// Producer tasks of a task's parameter inputs, then of its artifact inputs. Go iterates
/// these maps in random order; here they go in name order.
fn producers(task: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let kinds = [
        ("/inputs/parameters", "taskOutputParameter"),
        ("/inputs/artifacts", "taskOutputArtifact"),
    ];
    for (path, kind) in kinds {
        for input in task
            .pointer(path)
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|inputs| inputs.values())
        {
            if let Some(source) = input.get(kind) {
                let producer = source
                    .get("producerTask")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                out.push(producer.to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Spec {
        let root = json!({"dag": {"tasks": {
            "b": {"componentRef": {"name": "comp-sub"}, "retryPolicy": {"maxRetryCount": 2}},
            "a": {"componentRef": {"name": "comp-leaf"}}
        }}});
        let components = json!({
            "comp-leaf": {"executorLabel": "exec-leaf"},
            "comp-sub": {"dag": {"tasks": {
                "x": {"componentRef": {"name": "comp-leaf"}},
                "y": {"componentRef": {"name": "comp-leaf"},
                      "inputs": {"parameters": {"p": {"taskOutputParameter": {"producerTask": "x"}}}}}
            }}}
        });
        Spec {
            root,
            components: components.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn visits_children_first_in_name_order_and_applies_go_edits() {
        let mut spec = spec();
        let executors = json!({"exec-leaf": {"container": {"image": "a"}}});
        let visits = plan(&mut spec, executors.as_object().unwrap()).unwrap();
        let order: Vec<&str> = visits
            .iter()
            .map(|v| match v {
                Visit::Executor { name, .. } | Visit::Dag { name } => name.as_str(),
            })
            .collect();
        assert_eq!(order, ["comp-leaf", "comp-sub", "root"]);
        let sub = &spec.components["comp-sub"]["dag"]["tasks"];
        assert_eq!(sub["x"]["retryPolicy"], json!({"maxRetryCount": 2}));
        assert_eq!(sub["y"]["dependentTasks"], json!(["x"]));
    }

    #[test]
    fn unknown_references_and_producers_are_errors() {
        let mut spec = spec();
        spec.components.remove("comp-leaf");
        let executors = json!({});
        let err = plan(&mut spec, executors.as_object().unwrap())
            .err()
            .unwrap();
        assert!(
            matches!(err, CompileError::UnknownComponent { .. }),
            "{err}"
        );

        let mut spec = spec_with_bad_producer();
        let executors = json!({"exec-leaf": {"container": {}}});
        let err = plan(&mut spec, executors.as_object().unwrap())
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("unknown producer task \"nope\""),
            "{err}"
        );
    }

    fn spec_with_bad_producer() -> Spec {
        let mut spec = spec();
        spec.root["dag"]["tasks"]["a"]["inputs"] =
            json!({"artifacts": {"d": {"taskOutputArtifact": {"producerTask": "nope"}}}});
        spec
    }
}
