//! A Workflow as the exit gate reads it, once, where it enters: the facts the host needs, the
//! mark it carries and the object itself (for the policy, and for a DELETE's final word).

use serde_json::Value;

use super::claim::Claim;
use super::event::WorkflowFacts;
use super::notification::Mark;

#[derive(Clone, Debug)]
pub struct SeenWorkflow {
    pub facts: WorkflowFacts,
    pub mark: Option<Mark>,
    /// Who claimed the completion beside a pending mark.
    pub claim: Option<Claim>,
    pub raw: Value,
}

impl SeenWorkflow {
    /// None if the object lacks a name or uid: such an object cannot be reasoned about.
    pub fn read(raw: Value) -> Option<SeenWorkflow> {
        let facts = WorkflowFacts::read(&raw)?;
        Some(SeenWorkflow {
            mark: Mark::read(&raw),
            claim: Claim::read(&raw),
            facts,
            raw,
        })
    }

    pub fn uid(&self) -> &str {
        &self.facts.uid
    }

    /// The mark, if it names this workflow's current completion.
    pub fn own_mark(&self) -> Option<&Mark> {
        self.mark
            .as_ref()
            .filter(|mark| self.facts.is_completion_key(mark.key()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_facts_and_mark_once_and_keeps_the_object() {
        let raw = json!({
            "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "annotations": {"pipewarden.io/exit-notification": "sent/u1/a/b/Succeeded"}},
            "status": {"phase": "Succeeded", "startedAt": "a", "finishedAt": "b"}
        });
        let seen = SeenWorkflow::read(raw.clone()).unwrap();
        assert_eq!(seen.uid(), "u1");
        assert_eq!(seen.mark, Some(Mark::Sent("u1/a/b/Succeeded".into())));
        assert!(seen.own_mark().is_some());
        assert_eq!(seen.raw, raw);
        assert!(SeenWorkflow::read(json!({"metadata": {"name": "w"}})).is_none());
    }
}
