//! What `plan` counts while it streams: every SWF by namespace and state (the states and
//! numbers of `pipewarden_swfs`), every completed workflow in the window by plan, and every
//! completed workflow in scope by the state its mark says (`pipewarden_exit_completions`).
//! Printed first, whatever `--only` lists.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::rows::{SwfRow, WorkflowRow};
use crate::metrics::completions::CompletionState;
use crate::swf::fleet::{SwfState, Tally};

#[derive(Debug, Default)]
pub struct Summary {
    /// namespace -> its SWFs by state.
    pub swfs: BTreeMap<String, Tally>,
    /// SWFs whose outcome left no state (deleted while planned).
    pub swfs_gone: u64,
    /// SWFs that would be written.
    pub swf_writes: u64,
    /// Completed workflows within `--workflows-since`, by plan.
    pub workflows: BTreeMap<String, u64>,
    /// Completed workflows that finished before `--workflows-since`: counted, not listed.
    pub older_workflows: u64,
    pub workflow_writes: u64,
    /// Every completed workflow in scope by its mark's state (`unmarked` without one).
    pub completions: BTreeMap<&'static str, u64>,
}

impl Summary {
    pub fn swf(&mut self, row: &SwfRow) {
        match row.state {
            Some(state) => self
                .swfs
                .entry(row.namespace().to_owned())
                .or_default()
                .add(state),
            None => self.swfs_gone += 1,
        }
        self.swf_writes += u64::from(row.writes());
    }

    pub fn workflow(&mut self, row: &WorkflowRow) {
        *self.workflows.entry(row.plan.clone()).or_default() += 1;
        self.workflow_writes += u64::from(row.writes());
    }

    pub fn completion(&mut self, state: Option<CompletionState>) {
        let label = state.map_or("unmarked", CompletionState::label);
        *self.completions.entry(label).or_default() += 1;
    }

    /// Every SWF, by state.
    pub fn all_swfs(&self) -> Tally {
        let mut all = Tally::default();
        for tally in self.swfs.values() {
            all.merge(tally);
        }
        all
    }

    pub fn swf_count(&self) -> u64 {
        self.all_swfs().total()
    }

    /// Whether anything would be written: `--exit-code` exits 1 then.
    pub fn writes(&self) -> bool {
        self.swf_writes + self.workflow_writes > 0
    }

    /// The states some SWF is in, in the gauge's order: the summary table's columns.
    pub fn states_seen(&self) -> Vec<SwfState> {
        let all = self.all_swfs();
        SwfState::ALL
            .into_iter()
            .filter(|state| all.get(*state) > 0)
            .collect()
    }

    /// The summary as `-o json|jsonl|yaml` carry it.
    pub fn to_value(&self) -> Value {
        let states = |tally: &Tally| -> serde_json::Map<String, Value> {
            tally
                .counts()
                .map(|(label, count)| (label.to_owned(), json!(count)))
                .collect()
        };
        let namespaces: Vec<Value> = self
            .swfs
            .iter()
            .map(|(namespace, tally)| {
                json!({"namespace": namespace, "total": tally.total(), "states": states(tally)})
            })
            .collect();
        let all = self.all_swfs();
        json!({
            "swfs": {
                "total": all.total(),
                "would_write": self.swf_writes,
                "states": states(&all),
                "namespaces": namespaces,
            },
            "workflows": {
                "total": self.workflows.values().sum::<u64>(),
                "would_write": self.workflow_writes,
                "plans": self.workflows,
                "finished_earlier": self.older_workflows,
            },
            "completions": self.completions,
        })
    }
}

/// `{"kind": ..., fields of value}`: one JSON Lines record.
pub fn record(kind: &str, value: &impl Serialize) -> serde_json::Result<Value> {
    let mut value = serde_json::to_value(value)?;
    if let Value::Object(fields) = &mut value {
        fields.insert("kind".into(), json!(kind));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(swf: &str, plan: &str, state: SwfState) -> SwfRow {
        SwfRow {
            swf: swf.into(),
            plan: plan.into(),
            state: Some(state),
            changes: vec![],
            reason: String::new(),
            diff: vec![],
        }
    }

    #[test]
    fn counts_by_namespace_and_state_and_says_whether_anything_writes() {
        let mut summary = Summary::default();
        summary.swf(&row("a/x", "would rebuild", SwfState::WouldRebuild));
        summary.swf(&row("a/y", "up to date", SwfState::UpToDate));
        summary.swf(&row("b/z", "not rebuildable", SwfState::NotRebuildable));
        summary.completion(Some(CompletionState::Notified));
        summary.completion(None);
        assert!(summary.writes());
        assert_eq!(summary.swf_count(), 3);
        assert_eq!(
            summary.states_seen(),
            [
                SwfState::UpToDate,
                SwfState::WouldRebuild,
                SwfState::NotRebuildable
            ]
        );
        let value = summary.to_value();
        assert_eq!(value["swfs"]["namespaces"][0]["namespace"], "a");
        assert_eq!(value["swfs"]["states"]["would-rebuild"], 1);
        assert_eq!(value["completions"]["unmarked"], 1);
    }
}
