//! Argo's own reaction time, from a pod watch: when a workflow's main pod was first seen done
//! (Succeeded or Failed, as kwok ends it) and when the pod of its exit handler's step was first
//! seen (Argo created it). The difference is how long Argo took to start the exit handler.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};

use crate::sightings;

const WORKFLOW_LABEL: &str = "workflows.argoproj.io/workflow";
const NODE_NAME_ANNOTATION: &str = "workflows.argoproj.io/node-name";

#[derive(Default, Clone, Copy)]
struct Seen {
    main_done: Option<Instant>,
    exit_pod: Option<Instant>,
}

/// First sightings per workflow name.
#[derive(Clone, Default)]
pub struct PodTimes(Arc<Mutex<BTreeMap<String, Seen>>>);

impl PodTimes {
    /// Watches `namespace` from now on and waits until the watch runs.
    pub async fn watch(client: &Client, namespace: &str) -> Result<PodTimes> {
        let times = PodTimes::default();
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let record = times.clone();
        let config = watcher::Config::default().labels(WORKFLOW_LABEL);
        sightings::watch(pods, config, move |pod, at| record.note(pod, at)).await?;
        Ok(times)
    }

    fn note(&self, pod: &Pod, at: Instant) {
        let (Some(workflow), Some(node)) = (
            pod.labels().get(WORKFLOW_LABEL),
            pod.annotations().get(NODE_NAME_ANNOTATION),
        ) else {
            return;
        };
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let mut all = self.0.lock().expect("pod times");
        let seen = all.entry(workflow.clone()).or_default();
        if node.contains(".onExit") {
            seen.exit_pod.get_or_insert(at);
        } else if matches!(phase, Some("Succeeded" | "Failed")) {
            seen.main_done.get_or_insert(at);
        }
    }

    /// Per workflow of `names` that ran an exit-handler pod: main pod done -> exit-handler pod
    /// created.
    pub fn exit_handler_delays(&self, names: &[String]) -> Vec<Duration> {
        let all = self.0.lock().expect("pod times");
        names
            .iter()
            .filter_map(|name| {
                let seen = all.get(name)?;
                Some(seen.exit_pod?.saturating_duration_since(seen.main_done?))
            })
            .collect()
    }
}
