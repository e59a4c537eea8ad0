//! `status.phase` of an Argo Workflow.

/// Argo's workflow phases; `New` is the empty phase of a workflow no controller touched yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    New,
    Pending,
    Running,
    Succeeded,
    Failed,
    Error,
    /// A value Argo does not write; never complete.
    Unknown,
}

impl Phase {
    pub fn parse(phase: &str) -> Phase {
        match phase {
            "" => Phase::New,
            "Pending" => Phase::Pending,
            "Running" => Phase::Running,
            "Succeeded" => Phase::Succeeded,
            "Failed" => Phase::Failed,
            "Error" => Phase::Error,
            _ => Phase::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::New => "",
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Error => "Error",
            Phase::Unknown => "Unknown",
        }
    }

    /// Succeeded, Failed or Error: Argo will not run the workflow further (until `argo retry`).
    /// The `workflows.argoproj.io/completed` label follows the phase; alone it is not completion.
    pub fn is_complete(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed | Phase::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_succeeded_failed_and_error_are_complete() {
        assert_eq!(Phase::parse(""), Phase::New);
        for done in ["Succeeded", "Failed", "Error"] {
            assert!(Phase::parse(done).is_complete(), "{done}");
            assert_eq!(Phase::parse(done).as_str(), done);
        }
        for open in ["", "Pending", "Running", "Exploded", "succeeded"] {
            assert!(!Phase::parse(open).is_complete(), "{open}");
        }
    }
}
