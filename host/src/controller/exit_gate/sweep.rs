//! The periodic sweep of pending claims: completions claimed (`pending/<key>`) that no attempt
//! of this replica is working on (their replica stopped, leadership moved, or this replica
//! settled them but could not write the outcome) are taken up again without a restart. In
//! observe mode the same claims (left by a controller that notified, before a rollback) are
//! reported through the same entry as every other completion, and nothing is written.

use std::sync::Arc;
use std::time::Duration;

use super::action::{self, Origin};
use super::entry::enter;
use super::gate::Gate;
use super::watch;
use crate::engine::{Eligibility, EventKind, Export};
use crate::exit::judge;
use crate::exit::notification::{Mark, NOTIFICATION_LABEL};
use crate::exit::outcome::Outcome;
use crate::exit::seen::Seen;

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

/// Workflows carrying a pending claim (by the mark's label), page by page: each page is
/// handled before the next is read.
pub(super) async fn sweep_once(gate: &Arc<Gate>) {
    let mut pages = watch::Pages::new(&gate.ctx, &format!("{NOTIFICATION_LABEL}=pending"));
    while let Some(page) = pages.next().await {
        match page {
            Ok(items) => {
                for object in items {
                    if let Some(seen) = watch::as_seen(object) {
                        sweep_one(gate, seen).await;
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot list pending exit notifications; sweeping later");
            }
        }
    }
}

async fn sweep_one(gate: &Arc<Gate>, seen: Seen) {
    if !gate.ctx.shard.owns(seen.uid()) {
        return;
    }
    let Some(Mark::Pending(key)) = seen.mark.clone() else {
        return;
    };
    if gate.tracker.is_in_flight(&key) {
        return;
    }
    // Only the controller's own claims count: with a mark key, one without its signature
    // is a label someone else set.
    let claim = seen
        .claim
        .as_ref()
        .filter(|claim| claim.is_claim() && gate.mark_key.verifies(claim, &key));
    if gate.mark_key.is_set() && claim.is_none() {
        tracing::debug!(key, "a pending mark the controller did not sign; ignored");
        return;
    }
    // A claim another replica holds is its own to deliver (observe mode reports it).
    if !gate.limits.observe
        && claim.is_some_and(|claim| !gate.holds(Some(claim)) && gate.claim_holds(&key, claim))
    {
        return;
    }
    let facts = &seen.facts;
    if gate.limits.observe {
        // Marks are this replica's to finish only when it notifies: report, write nothing.
        match gate.tracker.settled(&key) {
            Some(_) => {}
            None if !(facts.complete && facts.is_completion_key(&key)) => tracing::info!(
                key,
                "observe: a pending claim whose workflow moved on; nothing recorded"
            ),
            None => take_up(gate, seen, &key).await,
        }
        return;
    }
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

/// A pending claim no attempt works on, decided as the watch path decides a completion (the
/// policy's exit eligibility, then the action path's catch-up and claim rules) before it is
/// delivered: a mark alone never sends a notification.
async fn take_up(gate: &Arc<Gate>, mut seen: Seen, key: &str) {
    let event = seen.take_event(EventKind::Relisted);
    let decided = gate
        .ctx
        .policy
        .call(Export::ExitEligibility, move |loaded| {
            loaded
                .policy
                .exit_eligibility(&event, None)
                .map(|e| (e, seen))
        })
        .await;
    match decided {
        Ok((Eligibility::Process, seen)) => {
            gate.ctx.metrics.exit.swept.inc();
            tracing::info!(key, "sweep: taking up a pending exit notification");
            enter(gate, &seen, Origin::Seen, None).await;
        }
        Ok((eligibility, _)) => {
            let (decision, reason) = judge::eligibility_parts(&eligibility);
            tracing::info!(
                key,
                decision = decision.label(),
                reason,
                "sweep: a pending mark not taken up"
            );
        }
        Err(error) => tracing::warn!(key, %error, "sweep: exit-eligibility failed"),
    }
}
