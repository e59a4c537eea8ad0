//! A Workflow as the exit gate reads it, once, where it enters: the facts the host needs, the
//! mark it carries and, for the policy, its view of the object. The controller keeps [`Seen`]
//! (never the object: a workflow's `status.nodes` alone can be hundreds of KiB); the CLI's
//! planner, which holds the listing anyway, reads [`SeenWorkflow`].

use serde_json::Value;

use super::claim::Claim;
use super::event::{WorkflowFacts, labels_of, policy_view};
use super::notification::Mark;
use crate::engine::{EventKind, WorkflowEvent};

/// What the exit gate keeps of a workflow it saw: its facts, mark and claim, and what the
/// policy is shown (labels and [`policy_view`]), until the policy has decided.
#[derive(Clone, Debug)]
pub struct Seen {
    pub facts: WorkflowFacts,
    pub mark: Option<Mark>,
    pub claim: Option<Claim>,
    labels: Vec<(String, String)>,
    view: String,
}

impl Seen {
    /// None if the object lacks a name or uid: such an object cannot be reasoned about.
    pub fn of(workflow: &Value) -> Option<Seen> {
        Some(Seen {
            facts: WorkflowFacts::read(workflow)?,
            mark: Mark::read(workflow),
            claim: Claim::read(workflow),
            labels: labels_of(workflow),
            view: policy_view(workflow),
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

    /// Bytes held for the policy's view: what [`Seen::take_event`] hands over.
    pub fn view_bytes(&self) -> usize {
        self.view.len()
            + self
                .labels
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }

    /// The event for the policy; the view and labels move into it (the policy decides once).
    pub fn take_event(&mut self, kind: EventKind) -> WorkflowEvent {
        let labels = std::mem::take(&mut self.labels);
        let view = std::mem::take(&mut self.view);
        self.facts.event_from(kind, labels, view)
    }
}

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

    /// A workflow whose node bookkeeping is large, with a 1 MiB message and annotation: what
    /// is kept is the facts, the mark and a view without the nodes, each tenant string cut.
    #[test]
    fn what_is_kept_of_a_workflow_is_bounded_whatever_its_size() {
        let nodes: serde_json::Map<String, Value> = (0..300)
            .map(|i| {
                (
                    format!("n{i}"),
                    json!({"id": format!("n{i}"), "message": "x".repeat(500)}),
                )
            })
            .collect();
        let huge = "m".repeat(1 << 20);
        let raw = json!({
            "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "labels": {"team": "a"},
                "annotations": {"pipewarden.io/exit-notification": "sent/u1/a/b/Failed",
                                "note": huge}},
            "spec": {"onExit": "notify"},
            "status": {"phase": "Failed", "startedAt": "a", "finishedAt": "b",
                       "message": huge, "nodes": nodes}
        });
        assert!(raw.to_string().len() > 2 << 20);
        let mut seen = Seen::of(&raw).unwrap();
        assert!(seen.own_mark().is_some());
        let message = seen.facts.message.clone().unwrap();
        assert!(message.len() < 4200 && message.ends_with("more bytes not copied]"));
        assert!(seen.view_bytes() < 10_000, "{}", seen.view_bytes());
        let event = seen.take_event(EventKind::Modified);
        let view: Value = serde_json::from_str(&event.workflow).unwrap();
        assert!(view["status"].get("nodes").is_none());
        assert_eq!(view["spec"]["onExit"], "notify");
        assert!(
            view["metadata"]["annotations"]["note"]
                .as_str()
                .unwrap()
                .len()
                < 4200
        );
        assert_eq!(event.labels, [("team".to_owned(), "a".to_owned())]);
        assert_eq!(seen.view_bytes(), 0, "moved into the event");
    }

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
