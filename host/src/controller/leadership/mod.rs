//! Leader election on a Lease: only the holder writes. Standbys run their loops (caches stay
//! warm) with `may_write` false. A leader that cannot renew within the renew deadline drops
//! `may_write` at once, before any standby can take over: every round is bounded by that
//! deadline, so an API server that stops answering cannot keep a stale leader writing.

pub mod rules;

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::sync::watch;

use crate::cluster::api_error::describe_any;
use crate::config::LeaderArgs;
use crate::metrics::Metrics;
use rules::{LeaseView, Observed, Step, next_step, renew_deadline, retry_period, round_timeout};

pub struct Elector {
    api: Api<Lease>,
    name: String,
    me: String,
    duration: Duration,
    may_write: watch::Sender<bool>,
    metrics: std::sync::Arc<Metrics>,
    /// When the last successful renewal was sent (not answered): the conservative start.
    last_renewal: Option<Instant>,
    /// The API server's URL, for errors.
    api_server: std::sync::Arc<str>,
    /// The Lease record as last read, and since when (this replica's clock) it is unchanged.
    observed: Observed<LeaseView>,
}

impl Elector {
    pub fn new(
        client: kube::Client,
        args: &LeaderArgs,
        may_write: watch::Sender<bool>,
        metrics: std::sync::Arc<Metrics>,
        api_server: std::sync::Arc<str>,
    ) -> Self {
        Elector {
            api: Api::namespaced(client, &args.lease_namespace),
            name: args.lease_name.clone(),
            me: args.identity(),
            duration: Duration::from_secs(args.lease_duration_seconds.max(3)),
            may_write,
            metrics,
            last_renewal: None,
            api_server,
            observed: Observed::new(),
        }
    }

    /// Acquire and renew forever; `may_write` follows the outcome.
    pub async fn run(mut self) -> anyhow::Result<()> {
        tracing::info!(lease = %self.name, identity = %self.me, "leader election started");
        loop {
            let leading_for = self
                .last_renewal
                .filter(|_| self.leading())
                .map(|at| at.elapsed());
            let budget = round_timeout(self.duration, leading_for);
            match tokio::time::timeout(budget, self.try_hold()).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::warn!(
                    error = describe_any(&error, &self.api_server),
                    "lease request failed"
                ),
                Err(_) => tracing::warn!(?budget, "lease request unanswered in time"),
            }
            // Whatever happened, a leader past its renew deadline stops writing now.
            self.enforce_deadline();
            let wait = retry_period(self.duration);
            let deadline = self
                .last_renewal
                .map(|at| at + renew_deadline(self.duration));
            let sleep_until = match deadline {
                Some(deadline) if self.leading() => deadline.min(Instant::now() + wait),
                _ => Instant::now() + wait,
            };
            tokio::time::sleep_until(sleep_until.into()).await;
            self.enforce_deadline();
        }
    }

    fn leading(&self) -> bool {
        *self.may_write.borrow()
    }

    /// One round of acquire-or-renew.
    async fn try_hold(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        let current = self.api.get_opt(&self.name).await?;
        let now = Timestamp::now();
        let view = current.as_ref().map(view_of);
        let unchanged_for = self.observed.see(view.clone(), Instant::now());
        let step = next_step(view.as_ref(), &self.me, unchanged_for);
        let written = match (&step, current) {
            (Step::Create, _) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.claim(now, &LeaseSpec::default(), false)),
                };
                self.api
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            (Step::Renew | Step::TakeOver, Some(mut lease)) => {
                let previous = lease.spec.take().unwrap_or_default();
                lease.spec = Some(self.claim(now, &previous, step == Step::TakeOver));
                // The Lease carries its resourceVersion: a concurrent writer makes this a 409.
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            (Step::Follow { holder }, _) => {
                if self.leading() {
                    tracing::warn!(%holder, "another replica holds the lease; not writing");
                }
                self.set_leader(false);
                return Ok(());
            }
            // Deleted between the read and the write: the next round creates it.
            (_, None) => return Ok(()),
        };
        match written {
            Ok(()) => {
                // Counted from before the read: the Lease's renewTime is no older than this.
                self.last_renewal = Some(started);
                if step == Step::TakeOver || step == Step::Create {
                    tracing::info!(identity = %self.me, "acquired the lease; this replica writes");
                }
                self.set_leader(true);
                Ok(())
            }
            // Another replica wrote first; the next round reads who holds it.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    fn claim(&self, now: Timestamp, previous: &LeaseSpec, take_over: bool) -> LeaseSpec {
        let acquired = match (&previous.acquire_time, take_over) {
            (Some(at), false) => at.clone(),
            _ => MicroTime(now),
        };
        LeaseSpec {
            holder_identity: Some(self.me.clone()),
            lease_duration_seconds: Some(self.duration.as_secs() as i32),
            acquire_time: Some(acquired),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(previous.lease_transitions.unwrap_or(0) + i32::from(take_over)),
            ..LeaseSpec::default()
        }
    }

    fn enforce_deadline(&mut self) {
        let expired = self
            .last_renewal
            .is_none_or(|at| at.elapsed() >= renew_deadline(self.duration));
        if expired && self.leading() {
            tracing::warn!(identity = %self.me, "lease not renewed in time; writes stopped");
            self.set_leader(false);
        }
    }

    fn set_leader(&self, leader: bool) {
        self.may_write
            .send_if_modified(|current| std::mem::replace(current, leader) != leader);
        self.metrics.info.leader.set(i64::from(leader));
    }

    /// Give the lease up (on graceful shutdown, once nothing writes any more), so a standby
    /// takes over without waiting for it to expire. Bounded by the lease duration.
    pub async fn release(client: kube::Client, args: &LeaderArgs) -> anyhow::Result<()> {
        let limit = Duration::from_secs(args.lease_duration_seconds.max(3));
        tokio::time::timeout(limit, Self::clear_holder(client, args))
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {limit:?}"))?
    }

    async fn clear_holder(client: kube::Client, args: &LeaderArgs) -> anyhow::Result<()> {
        let api: Api<Lease> = Api::namespaced(client, &args.lease_namespace);
        let Some(mut lease) = api.get_opt(&args.lease_name).await? else {
            return Ok(());
        };
        let me = args.identity();
        let Some(spec) = lease
            .spec
            .as_mut()
            .filter(|s| s.holder_identity.as_deref() == Some(me.as_str()))
        else {
            return Ok(());
        };
        spec.holder_identity = None;
        api.replace(&args.lease_name, &PostParams::default(), &lease)
            .await?;
        tracing::info!(identity = %me, "released the lease");
        Ok(())
    }
}

fn view_of(lease: &Lease) -> LeaseView {
    let spec = lease.spec.clone().unwrap_or_default();
    LeaseView {
        holder: spec.holder_identity,
        renewed_at: spec.renew_time.map(|t| t.0),
        duration: Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64),
    }
}
