//! The policy in force and its settings, swappable while the loops run.

use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;

use crate::engine::{Export, Policy, PolicyError};
use crate::metrics::{ExportLabel, Metrics};

/// The policy the loops hold: the component; in the crate's own tests, the default policy as
/// the component or compiled natively, so the loops' step tests run before `make policies`.
#[cfg(not(test))]
pub type LoopPolicy = Policy;
#[cfg(test)]
pub type LoopPolicy = crate::testing::DefaultPolicy;

/// A policy that passed `validate-settings` with these settings.
pub struct LoadedPolicy {
    pub policy: LoopPolicy,
    pub settings: String,
}

impl LoadedPolicy {
    pub fn new(policy: Policy, settings: String) -> Self {
        // Identity outside the crate's tests.
        #[allow(clippy::useless_conversion)]
        let policy = policy.into();
        LoadedPolicy { policy, settings }
    }
}

#[derive(Clone)]
pub struct PolicyHandle {
    current: Arc<ArcSwap<LoadedPolicy>>,
    metrics: Arc<Metrics>,
}

impl PolicyHandle {
    pub fn new(loaded: LoadedPolicy, metrics: Arc<Metrics>) -> Self {
        metrics
            .info
            .set_policy(loaded.policy.digest(), crate::engine::WORLD);
        PolicyHandle {
            current: Arc::new(ArcSwap::from_pointee(loaded)),
            metrics,
        }
    }

    pub fn current(&self) -> Arc<LoadedPolicy> {
        self.current.load_full()
    }

    /// Put a validated policy in force; calls already running finish on the old one.
    pub fn swap(&self, loaded: LoadedPolicy) {
        let digest = loaded.policy.digest();
        self.metrics.info.set_policy(digest, crate::engine::WORLD);
        self.current.store(Arc::new(loaded));
    }

    /// Run a policy decision off the async runtime (a guest may run up to its deadline), timing
    /// it and counting its failure under the export and error kind.
    pub async fn call<R, F>(&self, export: Export, decide: F) -> Result<R, PolicyError>
    where
        F: FnOnce(&LoadedPolicy) -> Result<R, PolicyError> + Send + 'static,
        R: Send + 'static,
    {
        let loaded = self.current();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || decide(&loaded))
            .await
            .unwrap_or_else(|join_error| {
                Err(PolicyError::Trap {
                    export,
                    message: format!("host task failed: {join_error}"),
                })
            });
        self.metrics
            .policy
            .call_seconds
            .get_or_create(&ExportLabel {
                export: export.name().to_string(),
            })
            .observe(started.elapsed().as_secs_f64());
        if let Err(error) = &result {
            self.metrics.policy.error(error);
        }
        result
    }
}
