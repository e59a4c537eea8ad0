//! The one way a completion reaches the action path, whatever showed it: a watch event, a
//! re-check, the catch-up listing of a new leader, the sweep of pending claims, or a DELETE's
//! final object. Every one passes the same checks, in the same order: this replica may write,
//! the object does not show the completion settled (by a mark the controller signed, with a
//! mark key), and then the mode decides. In observe
//! mode nothing reaches `action` (which claims, marks and sends): `observe` reports instead.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::action::{self, Origin};
use super::gate::Gate;
use super::observe::observe;
use crate::exit::notification::Mark;
use crate::exit::outcome::Outcome;
use crate::exit::seen::Seen;
use crate::metrics::Metrics;

/// Hands a completion the policy let through on: to `observe` in observe mode, to the action
/// path otherwise, unless this replica may not write or the object already shows it settled.
/// Returns the outcome known at once; None when an action task was started, whose outcome
/// `waiter` hears.
pub(super) async fn enter(
    gate: &Arc<Gate>,
    seen: &Seen,
    origin: Origin,
    waiter: Option<oneshot::Sender<Outcome>>,
) -> Option<Outcome> {
    // A standby watches claims age too, so that it can judge them once it leads.
    if let (Some(Mark::Pending(key)), Some(claim)) = (seen.own_mark(), &seen.claim) {
        gate.note_claim(key, claim);
    }
    let known = if !gate.ctx.may_write() {
        Some(Outcome::NotLeader)
    } else {
        // A mark the controller did not sign (with a mark key) settles nothing: the action
        // path judges the completion as unmarked.
        let key = seen.facts.completion_key();
        let signed = seen
            .own_mark()
            .filter(|mark| gate.signed(mark, seen.claim.as_ref(), &key));
        match signed {
            Some(Mark::Sent(_)) => Some(Outcome::AlreadyNotified),
            Some(Mark::Failed(_)) => Some(Outcome::AlreadyFailed),
            Some(Mark::Skipped(_)) => Some(Outcome::AlreadySkipped),
            Some(Mark::Pending(_)) | None if gate.limits.observe => {
                Some(observe(gate, &seen.facts, origin).await)
            }
            Some(Mark::Pending(_)) | None => {
                action::submit(gate, seen.facts.clone(), origin, waiter).await
            }
        }
    };
    if let Some(outcome) = known {
        Metrics::count(&gate.ctx.metrics.exit.notifications, outcome.label());
        if outcome == Outcome::Observed {
            gate.ctx.metrics.completions.observed(&seen.facts);
        }
    }
    known
}
