//! The periodic sweep of pending claims: completions claimed (`pending/<key>`) that no attempt
//! of this replica is working on (their replica stopped, leadership moved, or this replica
//! settled them but could not write the outcome) are taken up again without a restart.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::action::{self, Origin};
use super::gate::Gate;
use super::watch;
use crate::engine::{Eligibility, Export};
use crate::exit::gate;
use crate::exit::notification::Mark;
use crate::exit::outcome::Outcome;
use crate::exit::seen::SeenWorkflow;

/// Runs until the exit loop stops; sweeps every `every` while this replica may write.
pub(super) async fn run(gate: Arc<Gate>, every: Duration) -> anyhow::Result<()> {
    let mut ticker = tokio::time::interval(every.max(Duration::from_secs(1)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate; the start-up listing already sees every pending claim.
    ticker.tick().await;
    loop {
        ticker.tick().await;
        if gate.ctx.may_write() {
            sweep_once(&gate).await;
        }
    }
}

pub(super) async fn sweep_once(gate: &Arc<Gate>) {
    let pending = match watch::list_pending(&gate.ctx).await {
        Ok(pending) => pending,
        Err(error) => {
            tracing::warn!(%error, "cannot list pending exit notifications; sweeping later");
            return;
        }
    };
    for seen in pending {
        if !gate.ctx.shard.owns(seen.uid()) {
            continue;
        }
        let Some(Mark::Pending(key)) = seen.mark.clone() else {
            continue;
        };
        if gate.tracker.is_in_flight(&key) {
            continue;
        }
        // Only the controller's own claims count: with a mark key, one without its signature
        // is a label someone else set.
        let claim = seen
            .claim
            .as_ref()
            .filter(|claim| gate.mark_key.verifies(claim, &key));
        if gate.mark_key.is_set() && claim.is_none() {
            tracing::debug!(key, "a pending mark the controller did not sign; ignored");
            continue;
        }
        // A claim another replica holds is its own to deliver.
        if claim.is_some_and(|claim| !gate.holds(Some(claim)) && claim.holds_at(Timestamp::now())) {
            continue;
        }
        let facts = &seen.facts;
        match gate.tracker.settled(&key) {
            // Given up, but the failed mark was not written: write it now.
            Some(Outcome::GaveUp) => action::record_give_up_mark(gate, facts).await,
            // Delivered, but the sent mark was not written: write it now.
            Some(Outcome::Sent) => action::settle_mark(gate, facts, Mark::Sent(key.clone())).await,
            Some(_) => {}
            None if !(facts.complete && facts.is_completion_key(&key)) => {
                action::report_superseded(gate, facts, &key).await;
            }
            None => take_up(gate, seen, &key).await,
        }
    }
}

/// A pending claim no attempt works on, decided as the watch path decides a completion (the
/// policy's exit eligibility, then the action path's catch-up and claim rules) before it is
/// delivered: a mark alone never sends a notification.
async fn take_up(gate: &Arc<Gate>, seen: SeenWorkflow, key: &str) {
    let decided = gate
        .ctx
        .policy
        .call(Export::ExitEligibility, move |loaded| {
            gate::assess_listed(&loaded.policy, &seen.facts, &seen.raw).map(|e| (e, seen))
        })
        .await;
    match decided {
        Ok((Eligibility::Process, seen)) => {
            gate.ctx.metrics.exit_swept.inc();
            tracing::info!(key, "sweep: taking up a pending exit notification");
            action::submit(gate, seen.facts, Origin::Seen, None).await;
        }
        Ok((eligibility, _)) => {
            let (decision, reason) = gate::eligibility_parts(&eligibility);
            tracing::info!(key, decision, reason, "sweep: a pending mark not taken up");
        }
        Err(error) => tracing::warn!(key, %error, "sweep: exit-eligibility failed"),
    }
}
