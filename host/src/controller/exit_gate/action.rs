//! Exit processing for one completion, with its own budget of attempts.
//!
//! One attempt runs what is left of the action path: a fresh read that confirms the completion,
//! the claim (`pending/<key>`, with a resourceVersion precondition), the `ExitNotification`
//! Event, the delivery to the sink, the `sent/<key>` mark. A step that fails ends the attempt; the
//! next one comes after a capped, jittered backoff and redoes only what is not done yet (a
//! delivered notification is never sent again by this replica). When the attempts run out
//! the completion is given up: `failed/<key>`, an `ExitNotificationFailed` Event, a metric.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};

use super::delivery::{DeliveryError, Fence};
use super::gate::{Gate, workflows};
use super::listed::ListedWorkflow;
use super::sink::SinkError;
use super::tracker::{Begin, Final};
use crate::exit::claim::{Claim, FrozenBody};
use crate::exit::decision::Step;
use crate::exit::event::WorkflowFacts;
use crate::exit::notification::{
    Mark, Notification, Plan, event_note, finished_before, frozen_notification, reasons,
};
use crate::exit::outcome::Outcome;
use crate::exit::retry::jittered;
use crate::exit::seen::Seen;
use crate::metrics::Metrics;

/// Reads and writes per step within one attempt before it counts as failed: a workflow that
/// keeps changing under us (409) is read again at once, not after a backoff.
const CONFLICT_ATTEMPTS: u32 = 5;
/// Attempts that find the workflow gone, with no DELETE event to say how it ended, before the
/// completion is left alone.
const GONE_ATTEMPTS: u32 = 3;

/// Where a completion came from.
pub enum Origin {
    /// A watch event, a listing, or the sweep: confirmed by a fresh read.
    Seen,
    /// A DELETE event: its final object stands for the live one.
    Deleted(Box<Final>),
}

/// Takes the completion `seen` for processing, unless it is under way or settled. Returns the
/// outcome known at once (`in-flight`, or the settled outcome); None once a task was started,
/// whose outcome `waiter` hears.
pub async fn submit(
    gate: &Arc<Gate>,
    seen: WorkflowFacts,
    origin: Origin,
    waiter: Option<tokio::sync::oneshot::Sender<Outcome>>,
) -> Option<Outcome> {
    let key = seen.completion_key();
    match gate.tracker.begin(&key, waiter).await {
        // Settled by this replica already: the metric counted that outcome once.
        Begin::Settled(outcome) => Some(outcome.seen_again()),
        Begin::InFlight => {
            if let Origin::Deleted(final_object) = origin {
                gate.tracker.attach_final(&key, *final_object);
            }
            Some(Outcome::InFlight)
        }
        Begin::New(slot) => {
            let gate_for_task = gate.clone();
            gate.spawn(async move {
                let _slot = slot;
                process(&gate_for_task, seen, origin).await;
            });
            None
        }
    }
}

/// What one completion's attempts have done so far.
struct Run {
    seen: WorkflowFacts,
    key: String,
    /// The completion as claimed (or found claimed, or as the final object showed it).
    claimed: Option<Claimed>,
    deleted: Option<Final>,
    event_recorded: bool,
    delivered: bool,
    attempts: u32,
    gone: u32,
    /// Deliveries that timed out: later ones wait longer (up to 4x) for a slow receiver.
    timeouts: u32,
    /// What a delivery must still hold when it leaves the queue: the deadline of the claim
    /// this process last wrote (its own clock) and the leadership it was written under.
    fence: Option<Fence>,
}

struct Claimed {
    facts: WorkflowFacts,
    /// The resourceVersion the mark was last written or read at; none for a deleted workflow.
    resource_version: Option<String>,
    notification: Arc<Notification>,
}

/// Why an attempt ended early.
struct Failure {
    step: Step,
    error: String,
    /// Not worth asking again soon (a 4xx from the receiver): wait the longest delay.
    slow_down: bool,
}

impl Failure {
    fn new(step: Step, error: impl std::fmt::Display) -> Failure {
        Failure {
            step,
            error: error.to_string(),
            slow_down: false,
        }
    }
}

enum Ended {
    Done(Outcome),
    Failed(Failure),
}

async fn process(gate: &Arc<Gate>, seen: WorkflowFacts, origin: Origin) {
    let metrics = &gate.ctx.metrics;
    metrics.exit.in_flight.inc();
    let started = Instant::now();
    let key = seen.completion_key();
    let mut run = Run {
        key: key.clone(),
        seen,
        claimed: None,
        deleted: match origin {
            Origin::Deleted(final_object) => Some(*final_object),
            Origin::Seen => None,
        },
        event_recorded: false,
        delivered: false,
        attempts: 0,
        gone: 0,
        timeouts: 0,
        fence: None,
    };
    let outcome = loop {
        // Observe mode never gets here (`entry`); should it, nothing is claimed or sent.
        if !gate.may_act() {
            break Outcome::NotLeader;
        }
        run.attempts += 1;
        let failure = match attempt(gate, &mut run).await {
            Ended::Done(outcome) => break outcome,
            Ended::Failed(failure) => failure,
        };
        metrics.exit.step_failed(failure.step);
        tracing::warn!(
            key,
            attempt = run.attempts,
            of = gate.limits.attempts,
            step = failure.step.label(),
            error = failure.error,
            "exit notification attempt failed"
        );
        if run.gone >= GONE_ATTEMPTS {
            tracing::warn!(
                key,
                "the workflow is gone and no DELETE event showed how it ended; not notifying"
            );
            break Outcome::Gone;
        }
        if run.attempts >= gate.limits.attempts {
            if run.delivered {
                // Delivered; only the mark is missing. The sweep writes it later.
                tracing::warn!(key, "delivered, but cannot mark it sent; the sweep will");
                break Outcome::Sent;
            }
            let reason = format!(
                "not delivered after {} attempts; last: {} failed: {}",
                run.attempts, failure.step, failure.error
            );
            break give_up(gate, &mut run, &reason).await;
        }
        let delay = if failure.slow_down {
            gate.limits.retry_max_delay
        } else {
            jittered(
                run.attempts - 1,
                gate.limits.retry_delay,
                gate.limits.retry_max_delay,
            )
        };
        tokio::time::sleep(delay).await;
    };
    if outcome == Outcome::Sent {
        metrics
            .exit
            .notification_seconds
            .observe(started.elapsed().as_secs_f64());
    }
    Metrics::count(&metrics.exit.notifications, outcome.label());
    metrics.exit.in_flight.dec();
    gate.tracker.finish(&key, outcome);
}

async fn attempt(gate: &Gate, run: &mut Run) -> Ended {
    // Until delivered, every attempt confirms and renews the claim: during the backoff another
    // replica may have taken over one that expired.
    if !run.delivered && run.deleted.is_none() && run.attempts > 1 {
        run.claimed = None;
    }
    // Claiming, up to the Event, is bounded by the API budget: with thousands of completions
    // at once (a catch-up), unbounded claims would queue for the API behind each other and
    // run out before their sends left (each then fenced, retried, fenced again).
    let claiming = gate.claim_permit().await;
    if run.claimed.is_none() {
        match confirm_and_claim(gate, run).await {
            Ok(None) => {}
            Ok(Some(outcome)) => return Ended::Done(outcome),
            Err(failure) => return Ended::Failed(failure),
        }
    }
    let Some(claimed) = &run.claimed else {
        unreachable!("claimed above");
    };
    if !run.event_recorded {
        let note = event_note(&claimed.facts);
        if let Err(error) = gate
            .events
            .record(
                &claimed.facts,
                reasons::NOTIFIED,
                claimed.facts.phase_text != "Succeeded",
                note,
            )
            .await
        {
            return Ended::Failed(Failure::new(Step::Event, error));
        }
        run.event_recorded = true;
    }
    drop(claiming);
    if let Some(delivery) = &gate.delivery
        && !run.delivered
    {
        // A receiver that timed out goes to the slow lane, with a longer timeout; one that
        // failed fast (an error status, a refused connection) stays in the fresh lane, so that
        // it never waits behind receivers that hang.
        let slow = run.timeouts > 0;
        let timeout = gate.limits.send_timeout * 2u32.pow(run.timeouts.min(2));
        let Some(fence) = run.fence.clone() else {
            unreachable!("a fence is set with every claim");
        };
        match delivery
            .deliver(claimed.notification.clone(), slow, timeout, fence)
            .await
        {
            Ok(()) => run.delivered = true,
            Err(error) => {
                if matches!(error, DeliveryError::Sink(SinkError::Timeout(_))) {
                    run.timeouts += 1;
                }
                let slow_down = matches!(error, DeliveryError::Sink(SinkError::Permanent(_)));
                return Ended::Failed(Failure {
                    slow_down,
                    ..Failure::new(Step::Deliver, error)
                });
            }
        }
    }
    if run.deleted.is_none()
        && let Err(failure) = mark_sent(gate, run).await
    {
        return Ended::Failed(failure);
    }
    Ended::Done(Outcome::Sent)
}

/// Confirms the completion against the live workflow (or the final object of a deleted one)
/// and claims it. `Ok(None)`: claimed, go on; `Ok(Some)`: nothing (more) to do.
async fn confirm_and_claim(gate: &Gate, run: &mut Run) -> Result<Option<Outcome>, Failure> {
    if run.deleted.is_none() {
        run.deleted = gate.tracker.final_object(&run.key);
    }
    if let Some(final_object) = run.deleted.clone() {
        return from_final(gate, run, &final_object).await;
    }
    let api = workflows(&gate.ctx, &run.seen.namespace);
    for _ in 0..CONFLICT_ATTEMPTS {
        let live = {
            let _permit = gate.api_permit().await;
            read(&api, &run.seen.name).await
        };
        let live = match live {
            Ok(Some(live)) => live,
            Ok(None) => {
                run.gone += 1;
                return Err(Failure::new(
                    Step::Read,
                    "the workflow is gone; waiting for its DELETE event",
                ));
            }
            Err(error) => return Err(Failure::new(Step::Read, error)),
        };
        let Seen {
            facts: current,
            mark,
            claim,
            ..
        } = live;
        if current.uid != run.seen.uid {
            run.gone += 1;
            return Err(Failure::new(
                Step::Read,
                format!(
                    "the workflow was re-created (uid {}); waiting for the old one's DELETE event",
                    current.uid
                ),
            ));
        }
        let plan = gate.plan(&run.seen, &current, mark.as_ref(), claim.as_ref());
        let resource_version = current.resource_version.clone();
        // The body as the first claim froze it (a claim the controller wrote), else as now.
        let frozen = gate.frozen_body(&run.key, claim.as_ref(), &current);
        match plan {
            Plan::AlreadySent => return Ok(Some(Outcome::AlreadyNotified)),
            Plan::AlreadySettled(outcome) => return Ok(Some(outcome)),
            Plan::Unconfirmed(reason) => return Ok(Some(unconfirmed(run, &reason))),
            Plan::TooOld => {
                // The Event first (a second create is a no-op), then the mark that settles it.
                let outcome = report_too_old(gate, &current).await?;
                let mark = Mark::Skipped(run.key.clone());
                let seal = gate.seal(&mark);
                let name = &run.seen.name;
                match write_mark(gate, &api, name, &mark, &resource_version, seal.as_ref()).await {
                    Ok(_) => return Ok(Some(outcome)),
                    Err(kube::Error::Api(status)) if status.is_conflict() => continue,
                    Err(error) => return Err(Failure::new(Step::Claim, error)),
                }
            }
            Plan::ClaimedElsewhere { holder, until } => {
                tracing::info!(
                    key = run.key,
                    holder,
                    until = %until,
                    "claimed by another replica, which delivers; not delivering"
                );
                return Ok(Some(Outcome::ClaimedElsewhere));
            }
            Plan::Resend | Plan::TakeOver
                if finished_before(&current, Timestamp::now(), gate.limits.give_up_after) =>
            {
                run.claimed = Some(claimed(gate, current, Some(resource_version), &frozen));
                let reason = format!(
                    "claimed, but finished more than {:?} ago (--exit-give-up-after)",
                    gate.limits.give_up_after
                );
                return Ok(Some(give_up(gate, run, &reason).await));
            }
            // Our own claim, holding for more than half its time still by this process's
            // clock: nothing to write.
            Plan::Resend
                if run
                    .fence
                    .as_ref()
                    .is_some_and(|fence| fence.holds_for(gate.limits.claim_ttl / 2)) =>
            {
                run.claimed = Some(claimed(gate, current, Some(resource_version), &frozen));
                return Ok(None);
            }
            // Claimed anew (or renewed, or taken over), with this replica as the holder.
            Plan::Resend | Plan::TakeOver | Plan::Claim => {
                if !gate.may_act() {
                    return Ok(Some(Outcome::NotLeader));
                }
                if plan == Plan::TakeOver {
                    tracing::info!(key = run.key, "taking over a claim that expired");
                }
                let mark = Mark::Pending(run.key.clone());
                // Counted from before the write: the claim holds at least this long.
                let fence = gate.fence();
                let claim = gate.claim(&run.key, frozen.clone());
                let name = &run.seen.name;
                match write_mark(gate, &api, name, &mark, &resource_version, Some(&claim)).await {
                    Ok(written) => {
                        let rv = written.unwrap_or(resource_version);
                        run.claimed = Some(claimed(gate, current, Some(rv), &frozen));
                        run.fence = Some(fence);
                        return Ok(None);
                    }
                    Err(kube::Error::Api(status)) if status.is_conflict() => continue,
                    Err(error) => return Err(Failure::new(Step::Claim, error)),
                }
            }
        }
    }
    Err(Failure::new(
        Step::Claim,
        "the workflow kept changing under the claim",
    ))
}

/// A deleted workflow: its final object is the last word. Nothing can be marked on it; its
/// mark says whether anyone delivered already.
async fn from_final(
    gate: &Gate,
    run: &mut Run,
    final_object: &Final,
) -> Result<Option<Outcome>, Failure> {
    let plan = gate.plan(
        &run.seen,
        &final_object.facts,
        final_object.mark.as_ref(),
        final_object.claim.as_ref(),
    );
    match plan {
        Plan::AlreadySent => Ok(Some(Outcome::AlreadyNotified)),
        Plan::AlreadySettled(outcome) => Ok(Some(outcome)),
        Plan::Unconfirmed(reason) => Ok(Some(unconfirmed(run, &reason))),
        Plan::TooOld => report_too_old(gate, &final_object.facts).await.map(Some),
        // Its holder saw the DELETE too and delivers from the final object.
        Plan::ClaimedElsewhere { .. } => Ok(Some(Outcome::ClaimedElsewhere)),
        Plan::Resend | Plan::TakeOver | Plan::Claim => {
            tracing::info!(
                key = run.key,
                "deleted before it was notified; notifying from its final object"
            );
            let frozen =
                gate.frozen_body(&run.key, final_object.claim.as_ref(), &final_object.facts);
            run.claimed = Some(claimed(gate, final_object.facts.clone(), None, &frozen));
            // Nothing can be claimed on a deleted workflow: the leadership fences it.
            run.fence = Some(gate.fence());
            Ok(None)
        }
    }
}

fn claimed(
    gate: &Gate,
    facts: WorkflowFacts,
    resource_version: Option<String>,
    frozen: &FrozenBody,
) -> Claimed {
    let sent = frozen_notification(&facts, Some(frozen), &gate.limits.event_source);
    Claimed {
        notification: Arc::new(sent),
        facts,
        resource_version,
    }
}

fn unconfirmed(run: &Run, reason: &str) -> Outcome {
    tracing::info!(
        workflow = run.seen.name,
        uid = run.seen.uid,
        rv = run.seen.resource_version,
        reason,
        "completion not confirmed by the API server; not notifying"
    );
    Outcome::Unconfirmed
}

/// A completion first seen after the catch-up window: reported, not notified.
async fn report_too_old(gate: &Gate, current: &WorkflowFacts) -> Result<Outcome, Failure> {
    record_too_old(gate, current)
        .await
        .map_err(|error| Failure::new(Step::Event, error))
}

/// The ExitNotificationSkipped Event of a completion first seen after the catch-up window.
pub(super) async fn record_too_old(gate: &Gate, current: &WorkflowFacts) -> kube::Result<Outcome> {
    let note = format!(
        "Workflow {} at {}, more than {:?} before it was first seen (--exit-catchup-window); \
         not notified ({})",
        current.phase_text,
        current.finished_at.as_deref().unwrap_or("-"),
        gate.limits.catch_up,
        current.completion_key()
    );
    tracing::info!(key = current.completion_key(), "{note}");
    gate.events
        .record(current, reasons::SKIPPED, false, note)
        .await?;
    Ok(Outcome::SkippedOld)
}

/// Marks the claimed completion sent, re-reading on conflict as long as the claim is ours.
async fn mark_sent(gate: &Gate, run: &mut Run) -> Result<(), Failure> {
    let Some(claimed) = &mut run.claimed else {
        return Ok(());
    };
    let api = workflows(&gate.ctx, &claimed.facts.namespace);
    let mark = Mark::Sent(run.key.clone());
    let seal = gate.seal(&mark);
    for _ in 0..CONFLICT_ATTEMPTS {
        let resource_version = claimed.resource_version.clone().unwrap_or_default();
        match write_mark(
            gate,
            &api,
            &claimed.facts.name,
            &mark,
            &resource_version,
            seal.as_ref(),
        )
        .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.is_conflict() => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(error) => return Err(Failure::new(Step::Mark, error)),
        }
        let fresh = {
            let _permit = gate.api_permit().await;
            read(&api, &claimed.facts.name).await
        };
        match fresh {
            Ok(Some(fresh)) => match &fresh.mark {
                Some(Mark::Pending(key)) if *key == run.key && gate.holds(fresh.claim.as_ref()) => {
                    claimed.resource_version = Some(fresh.facts.resource_version);
                }
                Some(found @ Mark::Sent(key))
                    if *key == run.key && gate.signed(found, fresh.claim.as_ref(), &run.key) =>
                {
                    return Ok(());
                }
                // A settled mark the controller did not sign replaced the claim: delivered, so
                // the signed sent mark goes over it.
                Some(found)
                    if found.key() == run.key
                        && !matches!(found, Mark::Pending(_))
                        && !gate.signed(found, fresh.claim.as_ref(), &run.key) =>
                {
                    claimed.resource_version = Some(fresh.facts.resource_version);
                }
                _ => {
                    tracing::warn!(
                        key = run.key,
                        "the claim changed under us after delivery; not marking"
                    );
                    return Ok(());
                }
            },
            Ok(None) => return Ok(()),
            Err(error) => return Err(Failure::new(Step::Mark, error)),
        }
    }
    Err(Failure::new(
        Step::Mark,
        "the workflow kept changing under the mark",
    ))
}

/// Gives the completion up: `failed/<key>` on the workflow (when it still shows this
/// completion), an `ExitNotificationFailed` Event, the metric. Each write is tried once more
/// by the sweep while the workflow still shows a pending claim.
async fn give_up(gate: &Gate, run: &mut Run, reason: &str) -> Outcome {
    gate.ctx.metrics.exit.gave_up.inc();
    tracing::warn!(key = run.key, reason, "giving up on an exit notification");
    let facts = run
        .claimed
        .as_ref()
        .map(|claimed| claimed.facts.clone())
        .unwrap_or_else(|| run.seen.clone());
    if run.deleted.is_none() {
        record_give_up_mark(gate, &facts).await;
    }
    let note = format!("Exit notification {} not delivered: {reason}", run.key);
    if let Err(error) = gate
        .events
        .record(&facts, reasons::GAVE_UP, true, note)
        .await
    {
        tracing::warn!(key = run.key, %error, "cannot record the ExitNotificationFailed Event");
    }
    Outcome::GaveUp
}

/// `failed/<key>` on the live workflow, if it still shows this completion unsettled.
pub(super) async fn record_give_up_mark(gate: &Gate, facts: &WorkflowFacts) {
    settle_mark(gate, facts, Mark::Failed(facts.completion_key())).await;
}

/// Writes `mark` (sent or failed) on the live workflow if it still shows the completion
/// `facts` with a pending claim or none; one try, conflicts read again.
pub(super) async fn settle_mark(gate: &Gate, facts: &WorkflowFacts, mark: Mark) {
    if !gate.may_act() {
        return;
    }
    let key = facts.completion_key();
    let api = workflows(&gate.ctx, &facts.namespace);
    for _ in 0..CONFLICT_ATTEMPTS {
        let live = {
            let _permit = gate.api_permit().await;
            read(&api, &facts.name).await
        };
        let Ok(Some(live)) = live else {
            return;
        };
        let current = &live.facts;
        if current.uid != facts.uid || current.completion_key() != key {
            return;
        }
        // Settled already, by a mark the controller signed (one it did not sign is written over).
        if live.own_mark().is_some_and(|found| {
            !matches!(found, Mark::Pending(_)) && gate.signed(found, live.claim.as_ref(), &key)
        }) {
            return;
        }
        // A pending claim another replica holds is that replica's to settle.
        if matches!(live.own_mark(), Some(Mark::Pending(_))) && !gate.holds(live.claim.as_ref()) {
            return;
        }
        match write_mark(
            gate,
            &api,
            &facts.name,
            &mark,
            &current.resource_version,
            gate.seal(&mark).as_ref(),
        )
        .await
        {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.is_conflict() => continue,
            Err(error) => {
                tracing::warn!(key, %error, state = mark.state(), "cannot mark the exit notification");
                return;
            }
        }
    }
}

/// A claim left pending whose workflow moved on (retried, or running again) before it was
/// delivered: reported as given up, nothing written to the workflow.
pub(super) async fn report_superseded(gate: &Gate, live: &WorkflowFacts, claimed_key: &str) {
    gate.ctx.metrics.exit.gave_up.inc();
    Metrics::count(
        &gate.ctx.metrics.exit.notifications,
        Outcome::Superseded.label(),
    );
    let note = format!(
        "Exit notification {claimed_key} was claimed but not delivered before the workflow \
         moved on (now {} {}); not notified",
        live.phase_text,
        live.completion_key()
    );
    tracing::warn!(key = claimed_key, "{note}");
    let mut facts = live.clone();
    // Named after the claimed completion, so that it is recorded once.
    if let [_, started, finished, phase, ..] = claimed_key.split('/').collect::<Vec<_>>()[..] {
        facts.started_at = Some(started.to_string());
        facts.finished_at = Some(finished.to_string());
        facts.phase_text = phase.to_string();
    }
    if let Err(error) = gate
        .events
        .record(&facts, reasons::GAVE_UP, true, note)
        .await
    {
        tracing::warn!(key = claimed_key, %error, "cannot record the ExitNotificationFailed Event");
    }
    gate.tracker.settle(claimed_key, Outcome::Superseded);
}

/// The workflow `name` as the gate keeps it (the object itself is dropped here); None when it
/// is gone (or, which the API server never serves, has no name or uid).
pub(super) async fn read(api: &Api<ListedWorkflow>, name: &str) -> kube::Result<Option<Seen>> {
    Ok(api
        .get_opt(name)
        .await?
        .and_then(|object| Seen::of(&object.into_value())))
}

/// Sets `mark` (with `record` beside it: a pending mark's claim, a settled mark's signed
/// record) on the workflow, only if it is still at `resource_version`; returns the
/// resourceVersion written.
async fn write_mark(
    gate: &Gate,
    api: &Api<ListedWorkflow>,
    name: &str,
    mark: &Mark,
    resource_version: &str,
    record: Option<&Claim>,
) -> kube::Result<Option<String>> {
    let _permit = gate.api_permit().await;
    let written = api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&mark.patch(resource_version, record)),
        )
        .await?;
    Ok(written.metadata.resource_version)
}
