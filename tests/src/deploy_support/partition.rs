//! A client whose connection to the API server can be cut: while cut, every request waits
//! forever, as across a network partition where nothing answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::intercept::{Intercept, Verdict};
use anyhow::Result;
use kube::client::ClientBuilder;

#[derive(Clone, Default)]
pub struct Partition {
    cut: Arc<AtomicBool>,
    /// Lease requests sent through while not cut.
    lease_requests: Arc<AtomicUsize>,
}

impl Partition {
    /// A client for `config` that goes through this partition.
    pub fn client(&self, config: kube::Config) -> Result<kube::Client> {
        let partition = self.clone();
        let layer = Intercept::new(move |request| {
            if partition.cut.load(Ordering::SeqCst) {
                return Verdict::Hang;
            }
            if request.uri().path().contains("/leases/") {
                partition.lease_requests.fetch_add(1, Ordering::SeqCst);
            }
            Verdict::Pass
        });
        Ok(ClientBuilder::try_from(config)?.with_layer(&layer).build())
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }

    pub fn lease_requests(&self) -> usize {
        self.lease_requests.load(Ordering::SeqCst)
    }
}
