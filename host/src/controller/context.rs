//! What the loops share: the client, the policy, metrics, readiness and who may write.

use std::sync::Arc;

use kube::runtime::events::{Recorder, Reporter};
use tokio::sync::watch;

use super::health::Readiness;
use super::metrics::Metrics;
use super::policy_handle::PolicyHandle;

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
            readiness: Arc::new(Readiness::default()),
            namespaces,
            concurrency: concurrency.max(1),
            may_write,
        }
    }

    pub fn may_write(&self) -> bool {
        *self.may_write.borrow()
    }
}
