//! Metrics of the policy: its loads, and each call's latency, failures and retries by export.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use super::labels::{ExportLabel, OutcomeLabel, PolicyErrorLabels};
use crate::engine::{Export, PolicyError, PolicyErrorKind, RetryObserver};

metric_group! {
    pub struct PolicyMetrics {
        /// Policy call failures by export and error kind.
        pub errors: Family<PolicyErrorLabels, Counter> = "policy_errors",
        /// Policy call latency by export, in seconds.
        pub call_seconds: Family<ExportLabel, Histogram> = "policy_call_seconds"
            with Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_01, 4.0, 10))
            }),
        /// Policy loads by outcome: loaded, refused.
        pub loads: Family<OutcomeLabel, Counter> = "policy_loads",
        /// Policy calls tried once more after missing their deadline, by export.
        pub timeouts_retried: Family<ExportLabel, Counter> = "policy_timeouts_retried",
    }
}

impl PolicyMetrics {
    pub fn error(&self, error: &PolicyError) {
        self.failed(error.export(), error.kind());
    }

    pub fn failed(&self, export: Export, kind: PolicyErrorKind) {
        self.errors
            .get_or_create(&PolicyErrorLabels {
                export: export.name().to_string(),
                kind,
            })
            .inc();
    }

    /// Counts each policy call retried after a timeout under its export.
    pub fn retry_observer(&self) -> RetryObserver {
        let retried = self.timeouts_retried.clone();
        RetryObserver::new(move |export| {
            retried
                .get_or_create(&ExportLabel {
                    export: export.name().to_string(),
                })
                .inc();
        })
    }

    pub(super) fn start_at_zero(&self) {
        super::zero(&self.loads, &["loaded", "refused"]);
        for export in Export::ALL {
            let export = export.name().to_string();
            drop(self.call_seconds.get_or_create(&ExportLabel {
                export: export.clone(),
            }));
            for kind in PolicyErrorKind::ALL {
                drop(self.errors.get_or_create(&PolicyErrorLabels {
                    export: export.clone(),
                    kind,
                }));
            }
        }
    }
}
