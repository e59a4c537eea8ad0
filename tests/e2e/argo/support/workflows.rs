//! Workflows as users submit them to Argo: seed 001's shape (an exit handler whose only step runs
//! when `{{workflow.status}} != Succeeded`), the same without an exit handler, and one from a
//! WorkflowTemplate; how each ends is chosen by workflow parameters that the templates copy into
//! the kwok annotations (see `pipewarden_tests::argo`). Plus reading back what Argo made of them.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::resources::workflow_resource;
use serde_json::{Value, json};

/// How long Argo may take to finish a workflow, or anything else the tests wait for.
pub const WAIT: Duration = Duration::from_secs(240);

/// The label every workflow the tests submit carries (its value: the test's shape).
pub const SHAPE_LABEL: &str = "pipewarden.test/shape";

/// How a workflow is to end, by what its main container and Argo's wait container exit with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// main exits 0: Succeeded.
    Succeed,
    /// main exits 1: Failed.
    Fail,
    /// Argo's wait container exits 1 (as when it cannot save outputs): Error.
    Error,
}

impl Outcome {
    /// The phase Argo gives the workflow.
    pub fn phase(self) -> &'static str {
        match self {
            Outcome::Succeed => "Succeeded",
            Outcome::Fail => "Failed",
            Outcome::Error => "Error",
        }
    }

    /// Workflow parameters choosing this outcome.
    pub fn parameters(self) -> Value {
        let (main, wait) = match self {
            Outcome::Succeed => ("0", "0"),
            Outcome::Fail => ("1", "0"),
            Outcome::Error => ("0", "1"),
        };
        json!([
            {"name": "main-exit-code", "value": main},
            {"name": "wait-exit-code", "value": wait},
        ])
    }
}

pub fn workflows(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &workflow_resource())
}

/// `workflowtemplates.argoproj.io/v1alpha1`.
pub fn workflow_template_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "WorkflowTemplate");
    ApiResource::from_gvk_with_plural(&gvk, "workflowtemplates")
}

fn container(args: &str) -> Value {
    json!({
        "image": "quay.io/pch/whalesay:latest",
        "command": ["cowsay"],
        "args": [args],
        "resources": {"limits": {"memory": "32Mi", "cpu": "100m"}},
    })
}

/// The entrypoint's pod annotations: kwok exits its containers with the chosen codes.
fn exit_code_annotations() -> Value {
    json!({
        "pipewarden.test/main-exit-code": "{{workflow.parameters.main-exit-code}}",
        "pipewarden.test/wait-exit-code": "{{workflow.parameters.wait-exit-code}}",
    })
}

/// Seed 001's exit handler: a step that runs only when the workflow did not succeed.
fn exit_handler_templates() -> Vec<Value> {
    vec![
        json!({"name": "ohnoes", "container": container("oh noes")}),
        json!({"name": "exit-handler", "steps": [[{
            "name": "ohnoes",
            "when": "{{workflow.status}} != Succeeded",
            "template": "ohnoes",
        }]]}),
    ]
}

/// The spec of seed 001's workflow (with `exit_handler`), or the same without `onExit`. Pods are
/// garbage-collected as they complete, as in the seed's story.
pub fn seed_001_spec(exit_handler: bool, outcome: Outcome) -> Value {
    let mut templates = vec![json!({
        "name": "entrypoint",
        "metadata": {"annotations": exit_code_annotations()},
        "container": container("hello world"),
    })];
    let mut spec = json!({
        "entrypoint": "entrypoint",
        "podGC": {"strategy": "OnPodCompletion"},
        "arguments": {"parameters": outcome.parameters()},
    });
    if exit_handler {
        templates.extend(exit_handler_templates());
        spec["onExit"] = json!("exit-handler");
    }
    spec["templates"] = json!(templates);
    spec
}

/// A workflow named `name` with `spec`, labelled with its shape.
pub fn workflow(name: &str, shape: &str, spec: Value) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name, "labels": {SHAPE_LABEL: shape}},
        "spec": spec,
    }))?)
}

pub async fn create(api: &Api<DynamicObject>, workflow: &DynamicObject) -> Result<DynamicObject> {
    api.create(&PostParams::default(), workflow)
        .await
        .with_context(|| format!("creating workflow {}", workflow.name_any()))
}

/// A WorkflowTemplate with seed 001's exit handler whose entrypoint passes an output parameter
/// from one step to the next (the executor stand-in reports it; Argo waits for it).
pub async fn create_template(client: &Client, namespace: &str, name: &str) -> Result<()> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &workflow_template_resource());
    let mut produce = json!({
        "name": "produce",
        "metadata": {"annotations": {"pipewarden.test/outputs": r#"{"verdict":"go"}"#}},
        "container": container("verdict"),
        "outputs": {"parameters": [{"name": "verdict", "valueFrom": {"path": "/tmp/verdict"}}]},
    });
    produce["container"]["args"] = json!(["go"]);
    let template = json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTemplate",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": "main",
            "onExit": "exit-handler",
            "podGC": {"strategy": "OnPodCompletion"},
            "arguments": {"parameters": Outcome::Succeed.parameters()},
            "templates": [
                {"name": "main", "steps": [
                    [{"name": "produce", "template": "produce"}],
                    [{"name": "consume", "template": "entrypoint",
                      "when": "{{steps.produce.outputs.parameters.verdict}} == go"}],
                ]},
                produce,
                {"name": "entrypoint",
                 "metadata": {"annotations": exit_code_annotations()},
                 "container": container("consumed")},
                exit_handler_templates()[0],
                exit_handler_templates()[1],
            ],
        },
    });
    let object: DynamicObject = serde_json::from_value(template)?;
    api.create(&PostParams::default(), &object)
        .await
        .context("creating the WorkflowTemplate")?;
    Ok(())
}

pub fn phase(workflow: &DynamicObject) -> &str {
    workflow.data["status"]["phase"]
        .as_str()
        .unwrap_or_default()
}

pub fn is_complete(workflow: &DynamicObject) -> bool {
    matches!(phase(workflow), "Succeeded" | "Failed" | "Error")
        && workflow.data["status"]["finishedAt"].is_string()
}

/// The completion key pipewarden documents, from Argo's status:
/// `<uid>/<startedAt>/<finishedAt>/<phase>`, then `/<run>` from the run the gate counted
/// (`pipewarden.io/exit-run`) when it is past the first.
pub fn completion_key(workflow: &DynamicObject) -> Result<String> {
    ensure!(
        is_complete(workflow),
        "{} is not complete",
        workflow.name_any()
    );
    let status = &workflow.data["status"];
    let mut key = format!(
        "{}/{}/{}/{}",
        workflow.uid().unwrap_or_default(),
        status["startedAt"].as_str().unwrap_or_default(),
        status["finishedAt"].as_str().unwrap_or_default(),
        phase(workflow)
    );
    if let Some(run) = run_counted(workflow).filter(|run| *run > 1) {
        key.push_str(&format!("/{run}"));
    }
    Ok(key)
}

/// The run pipewarden counted on the workflow (`pipewarden.io/exit-run`), if any.
pub fn run_counted(workflow: &DynamicObject) -> Option<u32> {
    workflow
        .annotations()
        .get("pipewarden.io/exit-run")
        .and_then(|run| run.parse().ok())
}

/// Waits until each of `names` is complete and returns them, by name. Prints progress.
pub async fn wait_complete(
    api: &Api<DynamicObject>,
    names: &[String],
) -> Result<BTreeMap<String, DynamicObject>> {
    let started = std::time::Instant::now();
    let last_report = std::sync::atomic::AtomicU64::new(0);
    pipewarden_tests::wait::until(
        &format!("Argo to complete {} workflows", names.len()),
        WAIT,
        || async {
            let listed = api.list(&ListParams::default()).await?;
            let done: BTreeMap<String, DynamicObject> = listed
                .items
                .into_iter()
                .filter(|w| names.contains(&w.name_any()) && is_complete(w))
                .map(|w| (w.name_any(), w))
                .collect();
            let seconds = started.elapsed().as_secs();
            let period = seconds / 15;
            if last_report.fetch_max(period, std::sync::atomic::Ordering::Relaxed) < period {
                pipewarden_tests::log(format_args!(
                    "argo: {}/{} workflows complete after {seconds}s",
                    done.len(),
                    names.len()
                ));
            }
            Ok((done.len() == names.len()).then_some(done))
        },
    )
    .await
}

/// Waits until workflow `name` completes a run other than the one that started at `not_started`.
pub async fn wait_next_completion(
    api: &Api<DynamicObject>,
    name: &str,
    not_started: &str,
) -> Result<DynamicObject> {
    pipewarden_tests::wait::until(&format!("Argo to complete {name} again"), WAIT, || async {
        let live = api.get(name).await?;
        let rerun = live.data["status"]["startedAt"].as_str() != Some(not_started);
        Ok((rerun && is_complete(&live)).then_some(live))
    })
    .await
}

/// Deletes `name` and waits until it is gone.
pub async fn delete(api: &Api<DynamicObject>, name: &str) -> Result<()> {
    api.delete(name, &DeleteParams::default()).await?;
    pipewarden_tests::wait::until(&format!("{name} to be gone"), WAIT, || async {
        Ok(api.get_opt(name).await?.is_none().then_some(()))
    })
    .await
}

/// Argo's nodes of a workflow by display name: (phase, node).
pub fn nodes_named<'a>(workflow: &'a DynamicObject, display_name: &str) -> Vec<&'a Value> {
    workflow.data["status"]["nodes"]
        .as_object()
        .into_iter()
        .flat_map(|nodes| nodes.values())
        .filter(|node| node["displayName"] == display_name)
        .collect()
}

/// What Argo recorded for the exit handler's `when`-guarded step: `Succeeded` when it ran,
/// `Skipped` when its condition was false; fails if Argo never reached the exit handler.
pub fn exit_step_phase(workflow: &DynamicObject) -> Result<String> {
    let steps = nodes_named(workflow, "ohnoes");
    match steps.as_slice() {
        [step] => Ok(step["phase"].as_str().unwrap_or_default().to_owned()),
        [] => bail!("{}: Argo did not run its exit handler", workflow.name_any()),
        _ => bail!(
            "{}: {} exit-handler steps",
            workflow.name_any(),
            steps.len()
        ),
    }
}
