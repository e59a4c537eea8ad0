//! What every part of the exit loop shares: the gate's state, the work handed between its
//! parts, the limits of one completion's action path, and the Workflow API.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::Api;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::Handled;
use super::claims_seen::ClaimsSeen;
use super::delivery::{Delivery, Fence};
use super::events::EventWriter;
use super::listed::ListedWorkflow;
use super::tracker::Tracker;
use crate::cluster::resources::workflow_resource;
use crate::controller::context::Context;
use crate::engine::EventKind;
use k8s_openapi::jiff::Timestamp;

use crate::exit::TombstoneCache;
use crate::exit::claim::{Claim, Claimant, FrozenBody, MarkKey};
use crate::exit::decision::ExitDecision;
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::{Mark, Plan, Rules, freeze, plan_judging, signed_mark};
use crate::exit::seen::Seen;

pub(super) enum Work {
    Event {
        kind: EventKind,
        seen: Seen,
        /// How many times this workflow was requeued to get here.
        requeues: u32,
        handled: Option<oneshot::Sender<Handled>>,
    },
    /// Read the workflow afresh and decide on that (after a `requeue`).
    Recheck {
        namespace: String,
        name: String,
        uid: String,
        requeues: u32,
    },
    /// A workflow listed when this replica became the writer: notify its completion if no
    /// replica did and the policy wants it notified. Listed just now, so not a stale copy; the
    /// action path reads it again anyway.
    CatchUp { seen: Seen },
}

impl Work {
    /// The uid that decides the shard.
    pub(super) fn uid(&self) -> &str {
        match self {
            Work::Event { seen, .. } | Work::CatchUp { seen } => seen.uid(),
            Work::Recheck { uid, .. } => uid,
        }
    }

    /// Bytes of the policy's view this work holds until it is decided.
    pub(super) fn view_bytes(&self) -> usize {
        match self {
            Work::Event { seen, .. } | Work::CatchUp { seen } => seen.view_bytes(),
            Work::Recheck { .. } => 0,
        }
    }
}

pub(super) type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The delays between attempts, and what bounds them.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Observe mode: record what would be notified, write and send nothing.
    pub observe: bool,
    /// How long a claim holds before another replica may take it over.
    pub claim_ttl: Duration,
    pub attempts: u32,
    pub retry_delay: Duration,
    pub retry_max_delay: Duration,
    pub catch_up: Duration,
    pub give_up_after: Duration,
    /// One send's deadline (`--exit-webhook-timeout`), doubled for each timeout, up to 4x.
    pub send_timeout: Duration,
    pub event_source: String,
}

/// How much longer than this replica's `--exit-claim-ttl` another holder's claim may say it
/// holds (replicas configured apart during a rollout); a claim saying more is not a claim.
pub const CLAIM_TTL_SLACK: Duration = Duration::from_secs(60);
/// Other holders' claims remembered at once.
const CLAIMS_SEEN_MAX: u64 = 200_000;
/// Completions being claimed at once per API request slot: each takes a read, a write and an
/// Event, so two keep the slots busy while a claim waits for at most a few requests.
const CLAIMING_PER_API_SLOT: usize = 2;

/// What every shard and every completion shares.
pub(super) struct Gate {
    pub ctx: Context,
    /// This replica, as its claims name it, and the key they are signed with.
    pub claimant: Claimant,
    pub mark_key: MarkKey,
    pub tombstones: TombstoneCache,
    pub tracker: Tracker,
    /// Other holders' claims, and how long each was seen unchanged.
    claims_seen: ClaimsSeen,
    pub delivery: Option<Delivery>,
    pub events: EventWriter,
    pub limits: Limits,
    /// Requests to the API server in flight at once from the action paths.
    api: Arc<Semaphore>,
    /// Completions between their claim and their send at once (see [`Gate::claim_permit`]).
    claiming: Arc<Semaphore>,
    delayed: mpsc::Sender<(Duration, Work)>,
    /// Completion tasks, run by the exit loop so that they stop with it.
    tasks: mpsc::UnboundedSender<Task>,
}

/// Who this replica is when it claims.
pub(super) struct Claims {
    pub claimant: Claimant,
    pub key: MarkKey,
}

/// Where a gate hands work it does not do itself.
pub(super) struct Queues {
    pub delayed: mpsc::Sender<(Duration, Work)>,
    pub tasks: mpsc::UnboundedSender<Task>,
}

impl Gate {
    pub fn new(
        ctx: Context,
        tombstones: TombstoneCache,
        tracker: Tracker,
        delivery: Option<Delivery>,
        limits: Limits,
        claims: Claims,
        queues: Queues,
    ) -> Self {
        Gate {
            claimant: claims.claimant,
            mark_key: claims.key,
            api: Arc::new(Semaphore::new(ctx.concurrency)),
            claiming: Arc::new(Semaphore::new(CLAIMING_PER_API_SLOT * ctx.concurrency)),
            claims_seen: ClaimsSeen::new(limits.claim_ttl * 4 + CLAIM_TTL_SLACK, CLAIMS_SEEN_MAX),
            events: EventWriter::new(ctx.client.clone()),
            ctx,
            tombstones,
            tracker,
            delivery,
            limits,
            delayed: queues.delayed,
            tasks: queues.tasks,
        }
    }

    /// Hands `work` back to the loop after `after`; never waits (a worker must not block on
    /// its own loop), so beyond the queue's capacity the work is dropped and counted.
    pub fn schedule(&self, after: Duration, work: Work) {
        if self.delayed.try_send((after, work)).is_err() {
            tracing::warn!("delayed exit work queue full; dropping a re-check");
            self.ctx.metrics.exit.decided(ExitDecision::DelayDropped);
        }
    }

    /// Runs `task` beside the shards, as long as the exit loop runs.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let _ = self.tasks.send(Box::pin(task));
    }

    /// What plans are decided against now.
    pub fn rules(&self) -> Rules<'_> {
        Rules {
            claimant: &self.claimant,
            key: &self.mark_key,
            now: Timestamp::now(),
            catch_up: self.limits.catch_up,
        }
    }

    /// A claim by this replica on the completion `key`, from now, carrying the body's
    /// frozen parts.
    pub fn claim(&self, key: &str, body: FrozenBody) -> Claim {
        Claim::with_body(
            &self.claimant,
            Timestamp::now(),
            self.limits.claim_ttl,
            key,
            Some(body),
            &self.mark_key,
        )
    }

    /// The signed record a settled `mark` is written with (none without a mark key).
    pub fn seal(&self, mark: &Mark) -> Option<Claim> {
        Claim::seal(
            &self.claimant,
            Timestamp::now(),
            mark.key(),
            mark.state(),
            &self.mark_key,
        )
    }

    /// Whether `mark` on the completion `key`, with `record` beside it, is one the controller
    /// wrote (see [`signed_mark`]).
    pub fn signed(&self, mark: &Mark, record: Option<&Claim>, key: &str) -> bool {
        signed_mark(mark, record, &self.mark_key, key)
    }

    /// The body's changeable parts for the completion `key`: as a claim the controller wrote
    /// froze them (verified, with a mark key), else as `current` shows them now.
    pub fn frozen_body(
        &self,
        key: &str,
        claim: Option<&Claim>,
        current: &WorkflowFacts,
    ) -> FrozenBody {
        claim
            .filter(|claim| self.mark_key.verifies(claim, key))
            .and_then(|claim| claim.body.clone())
            .unwrap_or_else(|| freeze(current))
    }

    /// Whether another holder's `claim` on the completion `key` still holds: seen unchanged
    /// for less than its time to live, by this replica's clock (see `claims_seen`).
    pub fn claim_holds(&self, key: &str, claim: &Claim) -> bool {
        let unchanged_for = self.claims_seen.unchanged_for(key, claim);
        claim.holds_seen(unchanged_for, self.limits.claim_ttl + CLAIM_TTL_SLACK)
    }

    /// Notes `claim` as seen on the completion `key` now (its age is counted from its first
    /// sighting).
    pub fn note_claim(&self, key: &str, claim: &Claim) {
        self.claims_seen.unchanged_for(key, claim);
    }

    /// What to do about the completion `seen` given what was read of it just now.
    pub fn plan(
        &self,
        seen: &WorkflowFacts,
        current: &WorkflowFacts,
        mark: Option<&Mark>,
        claim: Option<&Claim>,
    ) -> Plan {
        let key = seen.completion_key();
        let holds = |claim: &Claim| self.claim_holds(&key, claim);
        plan_judging(seen, current, mark, claim, holds, &self.rules())
    }

    /// The fence of a claim written from now: its deadline by this process's clock, and the
    /// leadership as it is now.
    pub fn fence(&self) -> Fence {
        Fence::new(
            Instant::now() + self.limits.claim_ttl,
            self.ctx.may_write.clone(),
        )
    }

    /// Whether this replica holds `claim` (a verified claim by this very process).
    pub fn holds(&self, claim: Option<&Claim>) -> bool {
        claim.is_some_and(|claim| claim.is_claim() && claim.is_by(&self.claimant))
    }

    /// Whether this replica may claim, mark and deliver: it may write, and does not observe.
    pub fn may_act(&self) -> bool {
        self.ctx.may_write() && !self.limits.observe
    }

    /// A place among the completions being claimed: held from the claim's read to its Event,
    /// so that a claim's time goes to its send, not to waiting behind other claims.
    pub async fn claim_permit(&self) -> OwnedSemaphorePermit {
        self.claiming
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }

    /// A place among the API requests the action paths may have in flight.
    pub async fn api_permit(&self) -> OwnedSemaphorePermit {
        self.api
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }
}

/// The workflows of `namespace`, read (and answered after a write) without their node
/// bookkeeping.
pub(super) fn workflows(ctx: &Context, namespace: &str) -> Api<ListedWorkflow> {
    Api::namespaced_with(ctx.client.clone(), namespace, &workflow_resource())
}

/// One API for all namespaces, or one per configured namespace; workflows read without their
/// node bookkeeping.
pub(super) fn scopes(ctx: &Context) -> Vec<Api<ListedWorkflow>> {
    if ctx.namespaces.is_empty() {
        vec![Api::all_with(ctx.client.clone(), &workflow_resource())]
    } else {
        ctx.namespaces
            .iter()
            .map(|namespace| workflows(ctx, namespace))
            .collect()
    }
}
