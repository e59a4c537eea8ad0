//! A client whose connection to the API server can be cut: while cut, every request waits
//! forever, as across a network partition where nothing answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use anyhow::Result;
use http::{Request, Response};
use kube::client::{Body, ClientBuilder, DynBody};
use tower::{BoxError, Layer, Service};

#[derive(Clone, Default)]
pub struct Partition {
    cut: Arc<AtomicBool>,
    /// Lease requests sent through while not cut.
    lease_requests: Arc<AtomicUsize>,
}

impl Partition {
    /// A client for `config` that goes through this partition.
    pub fn client(&self, config: kube::Config) -> Result<kube::Client> {
        Ok(ClientBuilder::try_from(config)?.with_layer(self).build())
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

impl<S> Layer<S> for Partition {
    type Service = Partitioned<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Partitioned {
            inner,
            partition: self.clone(),
        }
    }
}

pub struct Partitioned<S> {
    inner: S,
    partition: Partition,
}

type Answer = Response<Box<DynBody>>;

impl<S> Service<Request<Body>> for Partitioned<S>
where
    S: Service<Request<Body>, Response = Answer, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if self.partition.cut.load(Ordering::SeqCst) {
            return Box::pin(futures::future::pending());
        }
        if request.uri().path().contains("/leases/") {
            self.partition.lease_requests.fetch_add(1, Ordering::SeqCst);
        }
        Box::pin(self.inner.call(request))
    }
}
