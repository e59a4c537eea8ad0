//! How the exit gate handled one completion: the one list of outcomes, with the label each
//! carries in metrics, logs, test hooks and `pipewarden eval`.

use std::fmt;

/// How a completion was handled (`pipewarden_exit_notifications{outcome}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Delivered (and marked `sent/<key>`, or deleted before it could be marked).
    Sent,
    /// Delivered earlier: this replica or another, this run or an earlier one.
    AlreadyNotified,
    /// Given up earlier (`failed/<key>`).
    AlreadyFailed,
    /// Reported as too old earlier (`skipped/<key>`).
    AlreadySkipped,
    /// Finished before the catch-up window when first seen: reported, not notified.
    SkippedOld,
    /// The live workflow does not show the completion the event showed.
    Unconfirmed,
    /// Gone, with no DELETE event to say how it ended.
    Gone,
    /// The attempts ran out.
    GaveUp,
    /// Claimed, but the workflow moved on (a retry) before it was delivered.
    Superseded,
    /// This replica may not write (not the leader).
    NotLeader,
    /// Another replica holds a fresh claim on it: that one delivers.
    ClaimedElsewhere,
    /// Observe mode: it would have been notified; recorded, nothing written or sent.
    Observed,
    /// Observe mode: reported earlier by this replica.
    AlreadyObserved,
    /// Another event of the same completion is being processed; it answers for both.
    InFlight,
    /// The exit loop stopped before the outcome was known.
    Stopped,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Sent => "sent",
            Outcome::AlreadyNotified => "already-notified",
            Outcome::AlreadyFailed => "already-failed",
            Outcome::AlreadySkipped => "already-skipped",
            Outcome::SkippedOld => "skipped-old",
            Outcome::Unconfirmed => "unconfirmed",
            Outcome::Gone => "gone",
            Outcome::GaveUp => "gave-up",
            Outcome::Superseded => "superseded",
            Outcome::NotLeader => "not-leader",
            Outcome::ClaimedElsewhere => "claimed-elsewhere",
            Outcome::Observed => "observed",
            Outcome::AlreadyObserved => "already-observed",
            Outcome::InFlight => "in-flight",
            Outcome::Stopped => "stopped",
        }
    }

    /// Whether the completion is done with for good (remembered, never retried by this
    /// replica). An unconfirmed copy, a workflow gone without a trace, or leadership lost
    /// leave the completion to whoever sees it next.
    pub fn settles(self) -> bool {
        !matches!(
            self,
            Outcome::Unconfirmed
                | Outcome::Gone
                | Outcome::NotLeader
                | Outcome::ClaimedElsewhere
                | Outcome::InFlight
                | Outcome::Stopped
        )
    }

    /// What a later event of a completion this replica settled with `self` is told.
    pub fn seen_again(self) -> Outcome {
        match self {
            Outcome::Sent => Outcome::AlreadyNotified,
            Outcome::GaveUp | Outcome::Superseded => Outcome::AlreadyFailed,
            Outcome::SkippedOld => Outcome::AlreadySkipped,
            Outcome::Observed => Outcome::AlreadyObserved,
            other => other,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_completion_seen_again_is_already_handled() {
        assert_eq!(Outcome::Sent.seen_again(), Outcome::AlreadyNotified);
        assert_eq!(Outcome::GaveUp.seen_again(), Outcome::AlreadyFailed);
        assert_eq!(Outcome::Superseded.seen_again(), Outcome::AlreadyFailed);
        assert_eq!(Outcome::SkippedOld.seen_again(), Outcome::AlreadySkipped);
        assert_eq!(Outcome::Observed.seen_again(), Outcome::AlreadyObserved);
        assert_eq!(Outcome::AlreadyFailed.seen_again(), Outcome::AlreadyFailed);
        assert!(!Outcome::NotLeader.settles());
        assert!(Outcome::AlreadySkipped.settles());
    }
}
