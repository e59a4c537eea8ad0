//! The exit gate's closed label sets: what it decided about a workflow event, and which step
//! of the action path failed.

use crate::engine::Eligibility;

/// What the gate decided about one workflow event: the policy's eligibility, or why there was
/// none. The `outcome` label of `pipewarden_exit_decisions`.
#[derive(Clone, Copy, Debug, Default, Hash, PartialEq, Eq)]
pub enum ExitDecision {
    #[default]
    Process,
    Skip,
    RejectStale,
    Requeue,
    /// The policy failed.
    Error,
    /// The workflow had no name or uid.
    Malformed,
    /// A re-check was not scheduled (the delay queue was full).
    DelayDropped,
    /// A marked workflow running again had its run counted.
    RunCounted,
}

impl ExitDecision {
    pub const ALL: [ExitDecision; 8] = [
        ExitDecision::Process,
        ExitDecision::Skip,
        ExitDecision::RejectStale,
        ExitDecision::Requeue,
        ExitDecision::Error,
        ExitDecision::Malformed,
        ExitDecision::DelayDropped,
        ExitDecision::RunCounted,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ExitDecision::Process => "process",
            ExitDecision::Skip => "skip",
            ExitDecision::RejectStale => "reject-stale",
            ExitDecision::Requeue => "requeue",
            ExitDecision::Error => "error",
            ExitDecision::Malformed => "malformed",
            ExitDecision::DelayDropped => "delay-dropped",
            ExitDecision::RunCounted => "run-counted",
        }
    }

    /// The decision of an eligibility, and its reason.
    pub fn of(eligibility: &Eligibility) -> (ExitDecision, &str) {
        match eligibility {
            Eligibility::Process => (ExitDecision::Process, ""),
            Eligibility::Skip(reason) => (ExitDecision::Skip, reason),
            Eligibility::RejectStale(reason) => (ExitDecision::RejectStale, reason),
            Eligibility::Requeue(reason) => (ExitDecision::Requeue, reason),
        }
    }
}

/// A step of the exit action path: the `step` label of `pipewarden_exit_attempt_failures`.
#[derive(Clone, Copy, Debug, Default, Hash, PartialEq, Eq)]
pub enum Step {
    /// Reading the live workflow.
    #[default]
    Read,
    /// Writing the claim annotation.
    Claim,
    /// Recording its Kubernetes Event.
    Event,
    /// Sending it to the sink.
    Deliver,
    /// Writing the notified mark.
    Mark,
}

impl Step {
    pub const ALL: [Step; 5] = [
        Step::Read,
        Step::Claim,
        Step::Event,
        Step::Deliver,
        Step::Mark,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Step::Read => "read",
            Step::Claim => "claim",
            Step::Event => "event",
            Step::Deliver => "deliver",
            Step::Mark => "mark",
        }
    }
}
