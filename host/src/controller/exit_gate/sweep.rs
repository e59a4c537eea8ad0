//! The periodic sweep of pending claims: completions claimed (`pending/<key>`) that no attempt
//! of this replica is working on (their replica stopped, leadership moved, or this replica
//! settled them but could not write the outcome) are taken up again without a restart.

use std::sync::Arc;
use std::time::Duration;

use super::action::{self, Origin};
use super::gate::Gate;
use super::watch;
use crate::exit::notification::Mark;
use crate::exit::outcome::Outcome;

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

async fn sweep_once(gate: &Arc<Gate>) {
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
        let (facts, Some(Mark::Pending(key))) = (seen.facts, seen.mark) else {
            continue;
        };
        if gate.tracker.is_in_flight(&key) {
            continue;
        }
        match gate.tracker.settled(&key) {
            // Given up, but the failed mark was not written: write it now.
            Some(Outcome::GaveUp) => action::record_give_up_mark(gate, &facts).await,
            // Delivered, but the sent mark was not written: write it now.
            Some(Outcome::Sent) => action::settle_mark(gate, &facts, Mark::Sent(key.clone())).await,
            Some(_) => {}
            None if !(facts.complete && facts.is_completion_key(&key)) => {
                action::report_superseded(gate, &facts, &key).await;
            }
            None => {
                gate.ctx.metrics.exit_swept.inc();
                tracing::info!(key, "sweep: taking up a pending exit notification");
                action::submit(gate, facts, Origin::Seen, None).await;
            }
        }
    }
}
