//! A stand-in for Argo's executor (`argoexec`), which runs in every pod Argo creates and reports
//! the outputs of its template. No container runs here, so for a pod that declares outputs in
//! `pipewarden.test/outputs` (a JSON object, parameter name to value) this writes, once the pod
//! has finished, what argoexec writes: the WorkflowTaskResult named after the node, owned by the
//! workflow, with the output parameters and the `workflows.argoproj.io/report-outputs-completed:
//! "true"` label Argo waits for before it marks a node with outputs Succeeded. Pods without the
//! annotation are left alone (a template with outputs then stays Running, as Argo waits).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

pub const OUTPUTS_ANNOTATION: &str = "pipewarden.test/outputs";
const WORKFLOW_LABEL: &str = "workflows.argoproj.io/workflow";
const NODE_ID_ANNOTATION: &str = "workflows.argoproj.io/node-id";
const OUTPUTS_COMPLETED_LABEL: &str = "workflows.argoproj.io/report-outputs-completed";
const INSTANCE_ID_LABEL: &str = "workflows.argoproj.io/controller-instanceid";

/// `workflowtaskresults.argoproj.io/v1alpha1`.
pub fn task_result_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "WorkflowTaskResult");
    ApiResource::from_gvk_with_plural(&gvk, "workflowtaskresults")
}

/// Reports outputs while it lives (on the runtime that started it).
pub struct Executor {
    reported: Arc<AtomicU64>,
}

impl Executor {
    /// Watches Argo's pods and reports the outputs of each finished one that declares them.
    pub fn start(client: Client) -> Self {
        let reported = Arc::new(AtomicU64::new(0));
        let counter = reported.clone();
        tokio::spawn(async move {
            let pods: Api<Pod> = Api::all(client.clone());
            let config = watcher::Config::default().labels(WORKFLOW_LABEL);
            let mut events = watcher(pods, config).boxed();
            // Pod uids already reported: a pod reports once, as argoexec's wait container exits once.
            let mut done: HashSet<String> = HashSet::new();
            while let Some(event) = events.next().await {
                let pod = match event {
                    Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
                    Ok(_) => continue,
                    Err(e) => {
                        crate::log(format_args!("argo-stack: executor watch: {e}"));
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let finished = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.as_deref())
                    .is_some_and(|p| p == "Succeeded" || p == "Failed");
                let uid = pod.uid().unwrap_or_default();
                if !finished
                    || !pod.annotations().contains_key(OUTPUTS_ANNOTATION)
                    || done.contains(&uid)
                {
                    continue;
                }
                match report(&client, &pod).await {
                    Ok(()) => {
                        done.insert(uid);
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => crate::log(format_args!(
                        "argo-stack: executor stand-in, pod {}: {e:#}",
                        pod.name_any()
                    )),
                }
            }
        });
        Executor { reported }
    }

    /// Task results written so far.
    pub fn reported(&self) -> u64 {
        self.reported.load(Ordering::Relaxed)
    }
}

/// Writes the task result of a finished pod, creating it or, after a retry re-ran the node,
/// replacing its outputs (argoexec creates, or patches one that exists).
async fn report(client: &Client, pod: &Pod) -> Result<()> {
    let namespace = pod.namespace().unwrap_or_default();
    let node_id = pod
        .annotations()
        .get(NODE_ID_ANNOTATION)
        .context("no node-id annotation")?
        .clone();
    let workflow = pod
        .labels()
        .get(WORKFLOW_LABEL)
        .context("no workflow label")?
        .clone();
    let owner = pod
        .owner_references()
        .iter()
        .find(|o| o.kind == "Workflow")
        .context("no Workflow owner")?;
    let values: serde_json::Map<String, Value> =
        serde_json::from_str(&pod.annotations()[OUTPUTS_ANNOTATION])
            .context("pipewarden.test/outputs is not a JSON object")?;
    let parameters: Vec<Value> = values
        .iter()
        .map(|(name, value)| {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            json!({"name": name, "value": value})
        })
        .collect();
    let mut labels = serde_json::Map::new();
    labels.insert(WORKFLOW_LABEL.into(), json!(workflow));
    labels.insert(OUTPUTS_COMPLETED_LABEL.into(), json!("true"));
    if let Some(instance) = pod.labels().get(INSTANCE_ID_LABEL) {
        labels.insert(INSTANCE_ID_LABEL.into(), json!(instance));
    }
    let result = json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTaskResult",
        "metadata": {
            "name": node_id,
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Workflow",
                "name": owner.name,
                "uid": owner.uid,
            }],
        },
        "outputs": {"parameters": parameters},
        "progress": "1/1",
    });
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &task_result_resource());
    let object: DynamicObject = serde_json::from_value(result.clone())?;
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            api.patch(&node_id, &PatchParams::default(), &Patch::Merge(&result))
                .await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
