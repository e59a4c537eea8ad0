//! Plan rows from the default policy's own decisions on the repository's SWF fixtures and on
//! workflows in each state the exit gate tells apart.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::*;
use crate::engine::{Eligibility, RebuildPolicy};
use crate::exit::claim::{Claimant, MarkKey};
use crate::exit::seen::SeenWorkflow;
use crate::swf::decide::RenderTarget;
use crate::swf::fleet::SwfState;
use crate::swf::plan::plan;
use crate::testing::{data, default_policy, default_settings};

fn row_for(fixture: &str, rebuild_policy: RebuildPolicy, target: &str) -> SwfRow {
    let settings = default_settings();
    let policy = default_policy().with_settings(&settings);
    let target = RenderTarget {
        rebuild_policy,
        target_version: Some(target.into()),
        settings,
    };
    let swf = data(&format!("swf/{fixture}.yaml"));
    swf_row(fixture.into(), &plan(&policy, &swf, &target))
}

#[test]
fn an_swf_an_older_kfp_compiled_would_be_rebuilt_naming_the_fields_under_either_policy() {
    for policy in [RebuildPolicy::Always, RebuildPolicy::Disable] {
        let row = row_for("kfp-2.3", policy, "2.17.0");
        assert_eq!(row.plan, "would rebuild", "{row:?}");
        assert!(row.writes());
        assert!(
            row.changes
                .iter()
                .any(|path| path.starts_with("spec.workflow.")),
            "{row:?}"
        );
        assert_eq!(row.changes.len(), row.diff.len());
        let summary = changes_summary(&row.changes);
        assert!(
            summary.starts_with(&format!("{}: ", row.changes.len()))
                && summary.ends_with("metadata.annotations, spec.workflow"),
            "{summary}"
        );
    }
}

#[test]
fn a_reference_only_swf_and_an_unsupported_target_write_nothing() {
    let row = row_for("kfp-reference-only", RebuildPolicy::Always, "2.17.0");
    assert_eq!(row.plan, "not rebuildable", "{row:?}");
    assert!(!row.writes() && row.changes.is_empty());
    let row = row_for("kfp-2.3", RebuildPolicy::Always, "2.18.0");
    assert_eq!(row.plan, "unsupported target", "{row:?}");
    assert!(!row.writes());
}

const UID: &str = "0b6c3f1e-1111-4a63-9b1f-1c2d3e4f5a61";

fn completed(finished_at: &str, annotations: Value) -> SeenWorkflow {
    SeenWorkflow::read(json!({
        "metadata": {"name": "etl", "namespace": "team-a", "uid": UID,
                      "resourceVersion": "7", "annotations": annotations},
        "spec": {"onExit": "notify"},
        "status": {"phase": "Succeeded", "startedAt": "2026-12-01T00:00:00Z",
                   "finishedAt": finished_at}
    }))
    .expect("a workflow")
}

fn plan_of(seen: &SeenWorkflow, eligibility: &Eligibility) -> WorkflowRow {
    let claimant = Claimant::new("pipewarden-plan");
    let key = MarkKey::none();
    let rules = Rules {
        claimant: &claimant,
        key: &key,
        now: Timestamp::now(),
        catch_up: Duration::from_secs(3600),
    };
    workflow_row(
        &seen.facts,
        seen.own_mark(),
        seen.claim.as_ref(),
        eligibility,
        &rules,
    )
}

#[test]
fn completions_are_told_apart_as_the_exit_gate_would() {
    let now = Timestamp::now().to_string();
    let fresh = completed(&now, json!({}));
    let row = plan_of(&fresh, &Eligibility::Process);
    assert_eq!((row.plan.as_str(), row.writes()), ("would notify", true));

    let key = fresh.facts.completion_key();
    let sent = completed(
        &now,
        json!({crate::exit::notification::NOTIFICATION_ANNOTATION: format!("sent/{key}")}),
    );
    assert_eq!(
        plan_of(&sent, &Eligibility::Process).plan,
        "already notified"
    );

    let old = (Timestamp::now() - SignedDuration::from_hours(3)).to_string();
    let row = plan_of(&completed(&old, json!({})), &Eligibility::Process);
    assert_eq!(row.plan, "skip", "{row:?}");
    assert!(row.reason.contains("--exit-catchup-window") && !row.writes());

    let skip = Eligibility::Skip("no exit handler".into());
    let row = plan_of(&fresh, &skip);
    assert_eq!(
        (row.plan.as_str(), row.reason.as_str()),
        ("not eligible", "no exit handler")
    );
}

#[test]
fn a_row_says_whether_it_writes_and_whether_it_is_a_problem() {
    let row = row_for("kfp-2.3", RebuildPolicy::Disable, "2.17.0");
    assert_eq!(row.state, Some(SwfState::WouldRebuild));
    assert!(row.writes() && !row.is_problem());
    let row = row_for("kfp-reference-only", RebuildPolicy::Always, "2.17.0");
    assert!(!row.writes() && row.is_problem(), "{row:?}");
    assert_eq!(row.namespace(), "");
    let workflow = |plan: &str| WorkflowRow {
        workflow: "a/w".into(),
        phase: "Succeeded".into(),
        finished_at: "-".into(),
        plan: plan.into(),
        reason: String::new(),
    };
    assert!(workflow("would notify").writes());
    assert!(workflow("already failed").is_problem() && !workflow("already notified").is_problem());
}
