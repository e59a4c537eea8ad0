//! The evidence that Argo ran an exit handler's step: the pod it creates for it. Pods are
//! garbage-collected as they complete, so a watch started before the workflows records every
//! exit-handler pod Argo ever created, per workflow.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};

const WORKFLOW_LABEL: &str = "workflows.argoproj.io/workflow";
const NODE_NAME_ANNOTATION: &str = "workflows.argoproj.io/node-name";

/// Exit-handler pods (uids) seen in one namespace, per workflow name.
#[derive(Clone, Default)]
pub struct ExitPods(Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>);

impl ExitPods {
    /// Watches `namespace` from now on (on the caller's runtime) and waits until the watch runs.
    pub async fn watch(client: &Client, namespace: &str) -> Result<ExitPods> {
        let seen = ExitPods::default();
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let config = watcher::Config::default().labels(WORKFLOW_LABEL);
        let mut events = watcher(pods, config).boxed();
        let record = seen.clone();
        let (ready, started) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut ready = Some(ready);
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::InitDone) => {
                        if let Some(ready) = ready.take() {
                            let _ = ready.send(());
                        }
                    }
                    Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                        record.note(&pod)
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        tokio::time::timeout(super::WAIT, started).await??;
        Ok(seen)
    }

    fn note(&self, pod: &Pod) {
        let Some(node) = pod.annotations().get(NODE_NAME_ANNOTATION) else {
            return;
        };
        if !node.contains(".onExit") {
            return;
        }
        let workflow = pod
            .labels()
            .get(WORKFLOW_LABEL)
            .cloned()
            .unwrap_or_default();
        self.0
            .lock()
            .expect("exit pods")
            .entry(workflow)
            .or_default()
            // By uid: a retry re-creates the exit handler's pod under the same name.
            .insert(pod.uid().unwrap_or_default());
    }

    /// Exit-handler pods per workflow name (workflows without one are absent).
    pub fn per_workflow(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.0.lock().expect("exit pods").clone()
    }

    /// Exit-handler pods of `workflow`.
    pub fn of(&self, workflow: &str) -> usize {
        self.per_workflow().get(workflow).map_or(0, BTreeSet::len)
    }
}
