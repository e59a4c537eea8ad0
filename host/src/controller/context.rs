//! What the loops share: the client, the policy, metrics, readiness and who may write.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Recorder, Reporter};
use tokio::sync::watch;

use super::health::Readiness;
use crate::cluster::policy_handle::PolicyHandle;
use crate::metrics::Metrics;

/// How long a watch may fail before readiness fails, unless told otherwise.
const DEFAULT_WATCH_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct Context {
    pub client: kube::Client,
    pub policy: PolicyHandle,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    pub recorder: Arc<Recorder>,
    /// Namespaces to watch; empty means all.
    pub namespaces: Vec<String>,
    /// Decisions and writes in flight at once, per loop.
    pub concurrency: usize,
    /// True while this replica may write (holds the lease, or runs without election).
    pub may_write: watch::Receiver<bool>,
    /// The API server's URL, named in connection errors.
    pub api_server: Arc<str>,
    /// Which SWFs and Workflows this replica handles.
    pub shard: crate::config::Shard,
    /// This replica's name (its pod), as its Lease and claims name it.
    pub identity: Arc<str>,
    /// This replica's pod, when its name is known: where Events about the controller go.
    pub own_pod: Option<ObjectReference>,
    /// What the settings source and the KFP API said about the install (`swf::serving`).
    pub install: Arc<watch::Sender<crate::swf::serving::InstallFacts>>,
    /// Every watch's lists take turns (`watch_health`).
    pub list_turns: super::list_turns::ListTurns,
}

impl Context {
    pub fn new(
        client: kube::Client,
        policy: PolicyHandle,
        metrics: Arc<Metrics>,
        namespaces: Vec<String>,
        concurrency: usize,
        may_write: watch::Receiver<bool>,
    ) -> Self {
        let reporter = Reporter {
            controller: "pipewarden".into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Context {
            recorder: Arc::new(Recorder::new(client.clone(), reporter)),
            client,
            policy,
            metrics,
            readiness: Arc::new(Readiness::new(DEFAULT_WATCH_GRACE)),
            namespaces,
            concurrency: concurrency.max(1),
            may_write,
            api_server: "(unknown URL)".into(),
            shard: crate::config::Shard::default(),
            identity: std::env::var("POD_NAME")
                .unwrap_or_else(|_| format!("pipewarden-{}", std::process::id()))
                .into(),
            own_pod: None,
            install: Arc::new(watch::Sender::new(Default::default())),
            list_turns: super::list_turns::list_turns(),
        }
    }

    /// Events about the controller itself go to `pod`.
    pub fn with_own_pod(mut self, pod: Option<ObjectReference>) -> Self {
        self.own_pod = pod;
        self
    }

    /// Names this replica `identity` in its claims.
    pub fn with_identity(mut self, identity: &str) -> Self {
        self.identity = identity.into();
        self
    }

    /// Names `url` as the API server in connection errors.
    pub fn with_api_server(mut self, url: &str) -> Self {
        self.api_server = url.into();
        self
    }

    /// `/readyz` fails once a loop's watch has been failing for longer than `grace`.
    pub fn with_watch_grace(mut self, grace: std::time::Duration) -> Self {
        self.readiness = Arc::new(Readiness::new(grace));
        self
    }

    /// Handles only the objects of `shard`.
    pub fn with_shard(mut self, shard: crate::config::Shard) -> Self {
        self.shard = shard;
        self
    }

    pub fn may_write(&self) -> bool {
        *self.may_write.borrow()
    }
}
