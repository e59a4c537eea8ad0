//! What one namespace's policy report says, as an OpenReports `Report`
//! (`openreports.io/v1alpha1`, github.com/openreports/reports-api v0.2.1,
//! `config/crd/openreports.io_reports.yaml`): a result per SWF that differs from its render or
//! cannot be served, and per completion observe mode recorded; a summary over all the
//! namespace's SWFs. Pure: the writer hands in the facts and writes what this returns.

use serde_json::{Value, json};

use crate::metrics::completions::ObservedCompletion;
use crate::metrics::fleet::SwfFact;
use crate::swf::fleet::{SwfState, Tally};

pub const GROUP: &str = "openreports.io";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "Report";
pub const PLURAL: &str = "reports";
/// The label every report pipewarden writes carries (and lists them by).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "pipewarden");
/// Results left out of a report past `--reports-max-results`.
pub const NOT_LISTED_ANNOTATION: &str = "pipewarden.io/results-not-listed";
const SOURCE: &str = "pipewarden";
const SWF_POLICY: &str = "pipewarden/swf-render";
const EXIT_POLICY: &str = "pipewarden/exit-notification";

/// What a report is made of.
pub struct Inputs<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    /// The target the SWFs are rendered for.
    pub target: Option<&'a str>,
    /// The namespace's SWFs by state.
    pub tally: Tally,
    /// `(name, fact)` of each SWF finding.
    pub swfs: &'a [(Box<str>, SwfFact)],
    pub observed: &'a [ObservedCompletion],
    pub max_results: usize,
}

/// OpenReports' result, and its severity, for an SWF state that is a finding.
fn result_of(state: SwfState) -> (&'static str, &'static str) {
    match state {
        SwfState::NotAdopted => ("fail", "high"),
        SwfState::WouldRebuild => ("fail", "medium"),
        SwfState::UnsupportedTarget => ("error", "high"),
        SwfState::Failed => ("error", "medium"),
        // Reference-only and v1 SWFs are KFP's to compile; nothing to rebuild.
        _ => ("skip", "info"),
    }
}

/// Listed first: what stops a schedule from firing, then what cannot be served, then what a
/// rebuild would change, then the rest.
fn rank(state: SwfState) -> u8 {
    match state {
        SwfState::NotAdopted => 0,
        SwfState::Failed => 1,
        SwfState::UnsupportedTarget => 2,
        SwfState::WouldRebuild => 3,
        _ => 4,
    }
}

/// The report, or None when it has nothing to say (no finding): then it should not exist.
pub fn report(inputs: &Inputs<'_>) -> Option<Value> {
    if inputs.swfs.is_empty() && inputs.observed.is_empty() {
        return None;
    }
    let mut summary = [
        ("pass", 0u64),
        ("fail", 0),
        ("warn", 0),
        ("error", 0),
        ("skip", 0),
    ];
    let mut bump = |result: &str| {
        if let Some(slot) = summary.iter_mut().find(|(name, _)| *name == result) {
            slot.1 += 1;
        }
    };
    for (state, count) in SwfState::ALL.iter().map(|s| (*s, inputs.tally.get(*s))) {
        let result = if state.is_finding() {
            result_of(state).0
        } else {
            "pass"
        };
        for _ in 0..count {
            bump(result);
        }
    }
    for _ in inputs.observed {
        bump("warn");
    }
    let mut swfs: Vec<&(Box<str>, SwfFact)> = inputs.swfs.iter().collect();
    swfs.sort_by_key(|(name, fact)| (rank(fact.state), name.clone()));
    let target = inputs.target.unwrap_or("unknown");
    let mut results: Vec<Value> = swfs
        .iter()
        .map(|(name, fact)| swf_result(inputs.namespace, name, fact, target))
        .collect();
    results.extend(
        inputs
            .observed
            .iter()
            .map(|observed| completion_result(inputs.namespace, observed)),
    );
    let not_listed = results.len().saturating_sub(inputs.max_results);
    results.truncate(inputs.max_results);
    let mut metadata = json!({
        "name": inputs.name,
        "namespace": inputs.namespace,
        "labels": {MANAGED_BY.0: MANAGED_BY.1},
    });
    if not_listed > 0 {
        metadata["annotations"] = json!({NOT_LISTED_ANNOTATION: not_listed.to_string()});
    }
    let summary: serde_json::Map<String, Value> = summary
        .iter()
        .map(|(name, count)| ((*name).to_owned(), json!(count)))
        .collect();
    Some(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": metadata,
        "source": SOURCE,
        "summary": summary,
        "results": results,
    }))
}

fn swf_result(namespace: &str, name: &str, fact: &SwfFact, target: &str) -> Value {
    let (result, severity) = result_of(fact.state);
    let message = match fact.state {
        SwfState::WouldRebuild => format!(
            "Differs from what KFP {target}'s API server would write, and nothing rebuilds it \
             (rebuild policy disable): {}",
            fact.detail.as_deref().unwrap_or("-")
        ),
        _ => fact.detail.as_deref().unwrap_or("-").to_owned(),
    };
    json!({
        "source": SOURCE,
        "policy": SWF_POLICY,
        "rule": fact.state.label(),
        "category": "KFP upgrade",
        "result": result,
        "severity": severity,
        "scored": true,
        "message": message,
        "timestamp": {"seconds": fact.since, "nanos": 0},
        "resources": [{
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "ScheduledWorkflow",
            "namespace": namespace,
            "name": name,
            "uid": &*fact.uid,
        }],
        "properties": {"target": target, "state": fact.state.label()},
    })
}

fn completion_result(namespace: &str, observed: &ObservedCompletion) -> Value {
    json!({
        "source": SOURCE,
        "policy": EXIT_POLICY,
        "rule": "observed",
        "category": "Exit notifications",
        "result": "warn",
        "severity": "info",
        "scored": false,
        "message": format!(
            "Workflow {} at {} would be notified; observe mode (--exit-mode=observe) sent \
             nothing",
            observed.phase, observed.finished_at
        ),
        "timestamp": {"seconds": observed.since, "nanos": 0},
        "resources": [{
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Workflow",
            "namespace": namespace,
            "name": &*observed.name,
            "uid": &*observed.uid,
        }],
        "properties": {"phase": &*observed.phase, "finishedAt": &*observed.finished_at},
    })
}

/// The report's name: one per namespace, and per shard when the SWFs are sharded.
pub fn name(shard: crate::config::Shard) -> String {
    if shard.count <= 1 {
        "pipewarden".to_owned()
    } else {
        format!("pipewarden-shard-{}-of-{}", shard.index, shard.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(state: SwfState, detail: &str) -> SwfFact {
        SwfFact {
            uid: "u".into(),
            state,
            detail: Some(detail.into()),
            since: 1_700_000_000,
        }
    }

    #[test]
    fn a_report_lists_problems_first_counts_every_swf_and_cuts_past_the_limit() {
        let mut tally = Tally::default();
        for state in [
            SwfState::UpToDate,
            SwfState::UpToDate,
            SwfState::WouldRebuild,
            SwfState::NotAdopted,
            SwfState::NotRebuildable,
        ] {
            tally.add(state);
        }
        let swfs = vec![
            (
                "b".into(),
                fact(SwfState::WouldRebuild, "16 field(s) differ"),
            ),
            ("c".into(), fact(SwfState::NotRebuildable, "reference-only")),
            ("z".into(), fact(SwfState::NotAdopted, "not adopted")),
        ];
        let observed = vec![ObservedCompletion {
            name: "wf".into(),
            uid: "w1".into(),
            phase: "Succeeded".into(),
            finished_at: "2026-12-04T10:00:00Z".into(),
            since: 1_700_000_100,
        }];
        let inputs = Inputs {
            name: "pipewarden",
            namespace: "team-a",
            target: Some("2.17.0"),
            tally,
            swfs: &swfs,
            observed: &observed,
            max_results: 3,
        };
        let report = report(&inputs).unwrap();
        assert_eq!(
            report["summary"],
            json!({"pass": 2, "fail": 2, "warn": 1, "error": 0, "skip": 1})
        );
        let rules: Vec<&str> = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rule"].as_str().unwrap())
            .collect();
        assert_eq!(rules, ["not-adopted", "would-rebuild", "not-rebuildable"]);
        assert_eq!(
            report["metadata"]["annotations"][NOT_LISTED_ANNOTATION],
            "1"
        );
        assert_eq!(report["results"][1]["resources"][0]["name"], "b");
        assert!(
            report["results"][1]["message"]
                .as_str()
                .unwrap()
                .contains("KFP 2.17.0")
        );
        let empty = Inputs {
            swfs: &[],
            observed: &[],
            ..inputs
        };
        assert!(super::report(&empty).is_none(), "nothing to say: no report");
    }
}
