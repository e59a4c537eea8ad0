//! A stand-in for kube-scheduler: no scheduler runs on the local control plane, so every new pod
//! is bound to the kwok node through the pod's `binding` subresource, as kube-scheduler binds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};

/// Binds pods while it lives (on the runtime that started it).
pub struct Scheduler {
    bound: Arc<AtomicU64>,
}

impl Scheduler {
    /// Watches pods without a node and binds each to `node`. Call on the runtime that is to run it.
    pub fn start(client: Client, node: &str) -> Self {
        let bound = Arc::new(AtomicU64::new(0));
        let node = node.to_owned();
        let counter = bound.clone();
        tokio::spawn(async move {
            let pods: Api<Pod> = Api::all(client.clone());
            let config = watcher::Config::default().fields("spec.nodeName=");
            let mut events = watcher(pods, config).boxed();
            while let Some(event) = events.next().await {
                let pod = match event {
                    Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
                    Ok(_) => continue,
                    Err(e) => {
                        crate::log(format_args!("argo-stack: scheduler watch: {e}"));
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                if pod.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                if bind(&client, &pod, &node).await {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Scheduler { bound }
    }

    /// Pods bound so far.
    pub fn bound(&self) -> u64 {
        self.bound.load(Ordering::Relaxed)
    }
}

async fn bind(client: &Client, pod: &Pod, node: &str) -> bool {
    let namespace = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.to_owned()),
            ..Default::default()
        },
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let answer: kube::Result<serde_json::Value> = pods
        .create_subresource("binding", &name, &PostParams::default(), &binding)
        .await;
    match answer {
        Ok(_) => true,
        // Already bound (a repeated event), or gone: nothing to do.
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => false,
        Err(e) => {
            crate::log(format_args!(
                "argo-stack: binding {namespace}/{name} to {node}: {e}"
            ));
            false
        }
    }
}
