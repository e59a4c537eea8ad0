//! The semantic diff and the write patch, on realistic SWFs; no cluster, no Wasm.

use pipewarden::swf::diff::{Change, semantic_diff};
use pipewarden::swf::patch::{apply_merge_patch, merge_diff, swf_write_patch};
use pipewarden::swf::{
    RENDER_HASH_ANNOTATION, VERSION_ANNOTATION, parse_rebuild_policy, read_stamps,
};
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = format!("{}/../tests/data/swf/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::from_str(&text).unwrap()
}

fn embedded(swf: &Value) -> Value {
    serde_json::from_str(swf["spec"]["workflow"]["spec"].as_str().unwrap()).unwrap()
}

fn set_embedded(swf: &mut Value, workflow: &Value) {
    swf["spec"]["workflow"]["spec"] = Value::String(workflow.to_string());
}

#[test]
fn identical_objects_have_no_changes() {
    let swf = fixture("kfp-2.17.yaml");
    assert!(semantic_diff(&swf, &swf).is_empty());
}

#[test]
fn reformatting_the_embedded_workflow_is_not_a_change() {
    let live = fixture("kfp-2.17.yaml");
    let mut desired = live.clone();
    let pretty = serde_json::to_string_pretty(&embedded(&live)).unwrap();
    desired["spec"]["workflow"]["spec"] = Value::String(pretty);
    assert_ne!(live, desired, "the test must change the text");
    assert!(semantic_diff(&live, &desired).is_empty());
}

#[test]
fn parameter_order_is_not_a_change_but_a_value_is() {
    let mut live = fixture("kfp-2.17.yaml");
    live["spec"]["workflow"]["parameters"] =
        json!([{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]);
    let mut desired = live.clone();
    desired["spec"]["workflow"]["parameters"] =
        json!([{"name": "b", "value": "2"}, {"name": "a", "value": "1"}]);
    assert!(semantic_diff(&live, &desired).is_empty());

    desired["spec"]["workflow"]["parameters"] =
        json!([{"name": "b", "value": "3"}, {"name": "a", "value": "1"}]);
    let changes = semantic_diff(&live, &desired);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].path(), "spec.workflow.parameters.b");
}

#[test]
fn an_image_change_is_reported_at_its_template() {
    let live = fixture("kfp-2.17.yaml");
    let mut workflow = embedded(&live);
    for template in workflow["spec"]["templates"].as_array_mut().unwrap() {
        if template["name"] == "system-container-driver" {
            template["container"]["image"] = json!("ghcr.io/kubeflow/kfp-driver:9.9.9");
        }
    }
    let mut desired = live.clone();
    set_embedded(&mut desired, &workflow);
    let changes = semantic_diff(&live, &desired);
    assert_eq!(
        changes,
        vec![Change::Changed {
            path: "spec.workflow.spec.spec.templates[system-container-driver].container.image"
                .into(),
            from: json!("ghcr.io/kubeflow/kfp-driver:2.17.0"),
            to: json!("ghcr.io/kubeflow/kfp-driver:9.9.9"),
        }]
    );
}

#[test]
fn added_args_are_listed_as_item_edits() {
    let live = fixture("kfp-2.17.yaml");
    let mut workflow = embedded(&live);
    let template = workflow["spec"]["templates"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "system-dag-driver")
        .unwrap();
    let args = template["container"]["args"].as_array_mut().unwrap();
    args.push(json!("--new_flag"));
    args.push(json!("x"));
    let mut desired = live.clone();
    set_embedded(&mut desired, &workflow);
    let changes = semantic_diff(&live, &desired);
    assert_eq!(changes.len(), 1, "{changes:?}");
    let Change::Items { removed, added, .. } = &changes[0] else {
        panic!("expected an item edit, got {:?}", changes[0]);
    };
    assert!(removed.is_empty());
    assert_eq!(added, &vec![json!("--new_flag"), json!("x")]);
    assert_eq!(
        changes[0].to_string(),
        format!("~ {}: +\"--new_flag\" +\"x\"", changes[0].path())
    );
}

#[test]
fn init_container_order_is_a_change_but_template_order_is_not() {
    let live = fixture("kfp-2.17.yaml");
    let mut workflow = embedded(&live);
    workflow["spec"]["templates"]
        .as_array_mut()
        .unwrap()
        .reverse();
    let mut desired = live.clone();
    set_embedded(&mut desired, &workflow);
    assert!(semantic_diff(&live, &desired).is_empty());

    let mut live = live.clone();
    live["spec"]["workflow"]["spec"] = Value::String(
        json!({"spec": {"templates": [{"name": "t", "initContainers": [{"name": "a"}, {"name": "b"}]}]}}).to_string(),
    );
    let mut desired = live.clone();
    desired["spec"]["workflow"]["spec"] = Value::String(
        json!({"spec": {"templates": [{"name": "t", "initContainers": [{"name": "b"}, {"name": "a"}]}]}}).to_string(),
    );
    let changes = semantic_diff(&live, &desired);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(changes[0].path().ends_with("initContainers (order)"));
}

#[test]
fn status_and_server_metadata_are_ignored_but_desired_annotations_count() {
    let live = fixture("kfp-2.17.yaml");
    let mut desired = live.clone();
    desired["status"] = json!({"conditions": []});
    desired["metadata"]["resourceVersion"] = json!("999");
    desired["metadata"]["labels"] = json!({"other": "x"});
    assert!(semantic_diff(&live, &desired).is_empty());

    desired["metadata"]["annotations"] = json!({VERSION_ANNOTATION: "2.17.0"});
    let changes = semantic_diff(&live, &desired);
    assert_eq!(
        changes,
        vec![Change::Added {
            path: format!("metadata.annotations[{VERSION_ANNOTATION:?}]"),
            value: json!("2.17.0")
        }]
    );
}

#[test]
fn legacy_object_form_to_string_form_is_a_change() {
    let live = fixture("kfp-legacy-object.yaml");
    assert!(
        live["spec"]["workflow"]["spec"].is_object(),
        "fixture must hold the legacy form"
    );
    let mut desired = live.clone();
    desired["spec"]["workflow"]["spec"] =
        Value::String(live["spec"]["workflow"]["spec"].to_string());
    let changes = semantic_diff(&live, &desired);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].path(), "spec.workflow.spec");
}

#[test]
fn the_write_patch_turns_live_spec_into_desired_and_touches_nothing_else() {
    let live = fixture("kfp-2.3-corrupted.yaml");
    let desired_source = fixture("kfp-2.17.yaml");
    let mut desired = live.clone();
    desired["spec"] = desired_source["spec"].clone();
    desired["metadata"]["annotations"] =
        json!({VERSION_ANNOTATION: "2.17.0", RENDER_HASH_ANNOTATION: "sha256:abc"});
    desired["status"] = json!({"must": "not be written"});

    let patch = swf_write_patch(&live, &desired, "42");
    assert_eq!(patch["metadata"]["resourceVersion"], "42");
    assert!(patch.get("status").is_none());
    assert_eq!(
        patch["metadata"].as_object().unwrap().len(),
        2,
        "only rv and annotations: {patch}"
    );

    let mut after = live.clone();
    apply_merge_patch(&mut after, &patch);
    assert_eq!(after["spec"], desired["spec"]);
    assert_eq!(after["status"], live["status"]);
    assert_eq!(
        after["metadata"]["annotations"][VERSION_ANNOTATION],
        "2.17.0"
    );
}

#[test]
fn merge_diff_deletes_keys_the_desired_spec_lacks() {
    let from = json!({"workflow": {"spec": {"dynamicKey1": "x"}}, "enabled": true});
    let to = json!({"workflow": {"spec": "{}"}, "enabled": true});
    let patch = merge_diff(&from, &to).unwrap();
    assert_eq!(patch, json!({"workflow": {"spec": "{}"}}));
    let from = json!({"a": 1, "b": 2});
    let to = json!({"a": 1});
    assert_eq!(merge_diff(&from, &to).unwrap(), json!({"b": null}));
    assert_eq!(merge_diff(&to, &to), None);
}

#[test]
fn stamps_and_rebuild_policy_parsing() {
    let mut swf = fixture("kfp-2.17.yaml");
    let stamps = read_stamps(&swf);
    assert_eq!((stamps.version, stamps.render_hash), (None, None));
    swf["metadata"]["annotations"] =
        json!({VERSION_ANNOTATION: "2.17.0", RENDER_HASH_ANNOTATION: "sha256:1"});
    let stamps = read_stamps(&swf);
    assert_eq!(stamps.version.as_deref(), Some("2.17.0"));
    assert_eq!(stamps.render_hash.as_deref(), Some("sha256:1"));

    for valid in ["disable", "always", "on-version-change"] {
        assert!(parse_rebuild_policy(valid).is_ok(), "{valid}");
    }
    let error = parse_rebuild_policy("sometimes").unwrap_err();
    assert!(
        error.contains("disable, always, on-version-change"),
        "{error}"
    );
}

#[test]
fn stamps_alone_are_never_a_write() {
    use pipewarden::swf::SETTINGS_HASH_ANNOTATION;
    use pipewarden::swf::decide::changes_to_write;
    let live = fixture("kfp-2.17.yaml");
    let mut stamped = live.clone();
    stamped["metadata"]["annotations"] = json!({
        VERSION_ANNOTATION: "2.17.0",
        RENDER_HASH_ANNOTATION: "sha256:abc",
        SETTINGS_HASH_ANNOTATION: "sha256:def",
    });
    assert_eq!(semantic_diff(&live, &stamped).len(), 3);
    assert!(changes_to_write(&live, &stamped).is_empty());
    // With a spec change the stamps go along with it.
    let mut changed = stamped.clone();
    changed["spec"]["enabled"] = json!(false);
    assert_eq!(changes_to_write(&live, &changed).len(), 4);
    // Another annotation is not a stamp.
    let mut other = live.clone();
    other["metadata"]["annotations"] = json!({"example.com/owner": "team-a"});
    assert_eq!(changes_to_write(&live, &other).len(), 1);
}

#[test]
fn a_not_rebuildable_mark_is_read_off_the_policy_text() {
    use pipewarden::swf::not_rebuildable_reason;
    assert_eq!(
        not_rebuildable_reason("not-rebuildable: a KFP v1 pipeline"),
        Some("a KFP v1 pipeline")
    );
    assert_eq!(
        not_rebuildable_reason("cannot parse: not-rebuildable: x"),
        None
    );
}
