use serde_json::{Value, json};

use super::*;
use crate::swf::patch::swf_write_patch;

fn inputs() -> RenderInputs {
    RenderInputs::of("sha256:policy", Some("2.17.0"), r#"{"a":1}"#)
}

fn live() -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "ScheduledWorkflow",
        "metadata": {
            "name": "daily", "namespace": "team-a", "resourceVersion": "7",
            "labels": {"app": "x"},
            "annotations": {"pipelines.kubeflow.org/version": "2.3.0"},
        },
        "spec": {"workflow": {"spec": {"entrypoint": "old"}}, "maxConcurrency": 1},
        "status": {"conditions": []},
    })
}

fn render() -> Value {
    let mut desired = live();
    desired["spec"]["workflow"]["spec"]["entrypoint"] = json!("new");
    desired["metadata"]["annotations"]["pipelines.kubeflow.org/version"] = json!("2.17.0");
    desired
}

/// The object the API server keeps after the stamped write, as a read returns it: keys in
/// another order, a new resourceVersion and status.
fn written(inputs: &RenderInputs) -> Value {
    let live = live();
    let mut patch = swf_write_patch(&live, &render(), "7");
    stamp(&live, &mut patch, inputs);
    let mut after = live.clone();
    apply_merge_patch(&mut after, &patch);
    after["metadata"]["resourceVersion"] = json!("8");
    after["status"] = json!({"lastTriggeredTime": "2026-12-07T00:00:00Z"});
    let text = serde_json::to_string(&after).unwrap();
    let reordered: Value = serde_json::from_str(&text).unwrap();
    reordered
}

#[test]
fn what_a_stamped_write_left_matches_under_the_same_inputs() {
    let after = written(&inputs());
    assert!(unchanged_since_written(&after, &inputs()));
}

#[test]
fn an_unstamped_swf_never_matches() {
    assert!(!unchanged_since_written(&live(), &inputs()));
}

#[test]
fn any_other_input_misses_the_stamp() {
    let after = written(&inputs());
    for other in [
        RenderInputs::of("sha256:other", Some("2.17.0"), r#"{"a":1}"#),
        RenderInputs::of("sha256:policy", Some("2.16.1"), r#"{"a":1}"#),
        RenderInputs::of("sha256:policy", None, r#"{"a":1}"#),
        RenderInputs::of("sha256:policy", Some("2.17.0"), r#"{"a":2}"#),
    ] {
        assert!(!unchanged_since_written(&after, &other), "{other:?}");
    }
}

#[test]
fn an_edit_of_spec_labels_or_annotations_misses_the_stamp() {
    let edits: [(&str, Value); 4] = [
        ("/spec/maxConcurrency", json!(2)),
        ("/spec/workflow/spec/entrypoint", json!("edited")),
        ("/metadata/labels/app", json!("y")),
        (
            "/metadata/annotations/pipelines.kubeflow.org~1version",
            json!("2.3.0"),
        ),
    ];
    for (pointer, value) in edits {
        let mut after = written(&inputs());
        *after.pointer_mut(pointer).expect(pointer) = value;
        assert!(!unchanged_since_written(&after, &inputs()), "{pointer}");
    }
    let mut added = written(&inputs());
    added["metadata"]["annotations"]["someone/else"] = json!("x");
    assert!(!unchanged_since_written(&added, &inputs()));
}

#[test]
fn status_and_bookkeeping_metadata_do_not_count() {
    let mut after = written(&inputs());
    after["status"] = json!({"conditions": [{"type": "Enabled"}]});
    after["metadata"]["resourceVersion"] = json!("99");
    after["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
    assert!(unchanged_since_written(&after, &inputs()));
}

#[test]
fn numbers_compare_as_json_values_not_as_text() {
    // The policy wrote 1.0; the API server hands back 1.
    let mut float_render = render();
    float_render["spec"]["maxConcurrency"] = json!(1.0);
    let live = live();
    let mut patch = swf_write_patch(&live, &float_render, "7");
    stamp(&live, &mut patch, &inputs());
    let mut after = live.clone();
    apply_merge_patch(&mut after, &patch);
    after["spec"]["maxConcurrency"] = json!(1);
    assert!(unchanged_since_written(&after, &inputs()));
}
