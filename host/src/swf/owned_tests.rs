//! Renders confined to what pipewarden owns, a `null` in a render converging, through the
//! decision seam with small native policies: one that renders what it is told, one that
//! clobbers the SWF's spec.

use serde_json::{Value, json};

use super::decide::{RenderTarget, SwfOutcome, decide};
use super::plan::plan;
use crate::engine::{
    Decisions, Export, Native, PolicyError, RebuildDecision, RebuildInput, RebuildPolicy,
    RenderContext,
};
use pipewarden_guest as guest;

/// Renders by merging the settings' `"render"` object into the live SWF: what a buggy or hostile
/// policy would return.
struct Merging;

impl guest::Policy for Merging {
    fn validate_settings(_: String) -> Result<(), String> {
        Ok(())
    }
    fn should_rebuild(_: guest::RebuildInput) -> guest::RebuildDecision {
        guest::RebuildDecision::Rebuild("always".into())
    }
    fn render_swf(swf: String, context: guest::RenderContext) -> Result<String, String> {
        let mut live: Value = serde_json::from_str(&swf).map_err(|e| e.to_string())?;
        let settings: Value = serde_json::from_str(&context.settings).map_err(|e| e.to_string())?;
        if settings["replace"] == json!(true) {
            return Ok(settings["render"].to_string());
        }
        merge(&mut live, &settings["render"]);
        Ok(live.to_string())
    }
    fn exit_eligibility(
        _: guest::WorkflowEvent,
        _: Option<guest::Tombstone>,
    ) -> guest::Eligibility {
        guest::Eligibility::Process
    }
}

/// Plain recursive merge (objects merged, everything else replaced; null kept as null).
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                match target.get_mut(key) {
                    Some(slot) if value.is_object() => merge(slot, value),
                    _ => {
                        target.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

fn live() -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1beta1", "kind": "ScheduledWorkflow",
        "metadata": {"name": "daily", "namespace": "team-a", "resourceVersion": "7",
                     "annotations": {"team": "a"}, "labels": {"owner": "a"}},
        "spec": {"enabled": true, "maxConcurrency": 1,
                 "trigger": {"cronSchedule": {"cron": "0 0 2 * * *"}},
                 "serviceAccount": "default-editor",
                 "workflow": {"parameters": [], "spec": "{\"kind\":\"Workflow\",\"spec\":{}}"}},
        "status": {"conditions": []}
    })
}

fn target(render: Value, replace: bool) -> RenderTarget {
    RenderTarget {
        rebuild_policy: RebuildPolicy::Always,
        target_version: Some("2.17.0".into()),
        settings: json!({"render": render, "replace": replace}).to_string(),
    }
}

fn policy() -> Native<Merging> {
    Native::new("{}")
}

#[test]
fn a_render_that_empties_the_spec_is_refused_naming_the_field_and_writes_nothing() {
    let outcome = plan(&policy(), &live(), &target(json!({"spec": {}}), true));
    let SwfOutcome::Failed {
        error,
        export,
        kind,
    } = &outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        (*export, *kind),
        (Export::RenderSwf, crate::engine::PolicyErrorKind::BadOutput)
    );
    assert!(
        error.contains("spec.enabled") || error.contains("spec.trigger"),
        "{error}"
    );
    assert!(outcome.desired().is_none(), "nothing to write");
}

#[test]
fn a_render_may_change_only_the_workflow_the_account_and_the_stamps() {
    let owned = json!({
        "metadata": {"annotations": {"pipelines.kubeflow.org/version": "2.17.0",
                                      "pipewarden.io/render-hash": "sha256:x"}},
        "spec": {"serviceAccount": "pipeline-runner",
                 "workflow": {"spec": "{\"kind\":\"Workflow\",\"spec\":{\"entrypoint\":\"e\"}}"}}
    });
    let outcome = decide(&policy(), &live(), &target(owned, false)).unwrap();
    assert!(matches!(outcome, SwfOutcome::Rebuild { .. }), "{outcome:?}");
    for field in [
        json!({"spec": {"enabled": false}}),
        json!({"spec": {"trigger": {"cronSchedule": {"cron": "* * * * * *"}}}}),
        json!({"spec": {"maxConcurrency": 10}}),
        json!({"metadata": {"annotations": {"team": "b"}}}),
    ] {
        let error = decide(&policy(), &live(), &target(field.clone(), false)).unwrap_err();
        let PolicyError::BadOutput { export, reason } = &error else {
            panic!("{field}: {error:?}");
        };
        assert_eq!(*export, Export::RenderSwf);
        assert!(reason.contains("does not own"), "{reason}");
    }
}

#[test]
fn a_null_in_a_render_converges_instead_of_being_written_on_every_resync() {
    // The API server drops a null a merge patch carries: after the write the field is absent,
    // and the next render must find nothing to change.
    let with_null = json!({"spec": {"workflow": {"pipelineRoot": null}},
                           "metadata": {"annotations": {"pipewarden.io/render-hash": null}}});
    let outcome = decide(&policy(), &live(), &target(with_null, false)).unwrap();
    assert!(
        matches!(outcome, SwfOutcome::UpToDate { .. }),
        "a null over an absent field changes nothing: {outcome:?}"
    );
}

/// The seam itself: a native policy answers as the component would.
#[test]
fn native_policies_answer_through_the_seam() {
    let input = RebuildInput {
        policy: RebuildPolicy::Always,
        swf: live().to_string(),
        target_version: None,
        stamps: crate::engine::Stamps {
            version: None,
            render_hash: None,
        },
        settings: "{}".into(),
    };
    assert!(matches!(
        policy().should_rebuild(&input).unwrap(),
        RebuildDecision::Rebuild(_)
    ));
    let context = RenderContext {
        target_version: None,
        settings: json!({"render": {}}).to_string(),
    };
    assert!(policy().render_swf(&live().to_string(), &context).is_ok());
}
