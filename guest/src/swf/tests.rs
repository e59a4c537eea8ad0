use serde_json::json;

use super::*;

fn swf_with_spec(spec: Value) -> Swf {
    Swf::from_value(json!({
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "ScheduledWorkflow",
        "metadata": {"name": "daily", "namespace": "team-a"},
        "spec": {"enabled": true, "workflow": {"spec": spec}},
        "status": {"conditions": []}
    }))
    .unwrap()
}

fn workflow() -> Value {
    json!({"kind": "Workflow", "spec": {"entrypoint": "main", "templates": [{"name": "main"}]}})
}

#[test]
fn rejects_non_json_and_non_objects() {
    assert!(matches!(Swf::from_json("{"), Err(SwfError::NotJson(_))));
    assert_eq!(Swf::from_json("[1]"), Err(SwfError::NotAnObject));
}

#[test]
fn reads_string_form() {
    let swf = swf_with_spec(Value::String(workflow().to_string()));
    let embedded = swf.embedded_workflow().unwrap().unwrap();
    assert_eq!(embedded.form, SpecForm::String);
    assert_eq!(embedded.value, workflow());
    assert!(!swf.is_reference_only());
}

#[test]
fn reads_legacy_object_form() {
    let swf = swf_with_spec(workflow());
    let embedded = swf.embedded_workflow().unwrap().unwrap();
    assert_eq!(embedded.form, SpecForm::LegacyObject);
    assert_eq!(embedded.value, workflow());
}

#[test]
fn reference_only_has_no_embedded_workflow() {
    let mut swf = swf_with_spec(Value::Null);
    assert!(swf.is_reference_only());
    assert_eq!(swf.embedded_workflow(), Ok(None));
    swf.as_value_mut()["spec"]["workflow"] = json!({"parameters": []});
    assert!(swf.is_reference_only());
    assert_eq!(swf.embedded_workflow(), Ok(None));
}

#[test]
fn bad_embedded_specs_are_errors() {
    assert_eq!(
        swf_with_spec(json!("")).embedded_workflow(),
        Err(SwfError::EmptySpec)
    );
    let unparseable = swf_with_spec(json!("{\"kind\":")).embedded_workflow();
    assert!(matches!(unparseable, Err(SwfError::UnparseableSpec(_))));
    assert_eq!(
        swf_with_spec(json!([1])).embedded_workflow(),
        Err(SwfError::SpecWrongType("an array"))
    );
}

#[test]
fn workflow_spec_is_found_in_whole_and_bare_forms() {
    let whole = EmbeddedWorkflow {
        value: workflow(),
        form: SpecForm::String,
    };
    assert_eq!(whole.workflow_spec().unwrap()["entrypoint"], "main");
    let mut bare = EmbeddedWorkflow {
        value: workflow()["spec"].clone(),
        form: SpecForm::LegacyObject,
    };
    assert_eq!(bare.templates_mut().unwrap().len(), 1);
    let mut corrupt = EmbeddedWorkflow {
        value: json!({"dynamicKey1": "dynamicValue1"}),
        form: SpecForm::LegacyObject,
    };
    assert!(corrupt.workflow_spec().is_none());
    assert!(corrupt.templates_mut().is_none());
}

#[test]
fn set_embedded_workflow_writes_a_compact_string() {
    let mut swf = swf_with_spec(workflow());
    let embedded = swf.embedded_workflow().unwrap().unwrap();
    swf.set_embedded_workflow(&embedded);
    let text = swf.as_value()["spec"]["workflow"]["spec"].as_str().unwrap();
    assert_eq!(
        text,
        r#"{"kind":"Workflow","spec":{"entrypoint":"main","templates":[{"name":"main"}]}}"#
    );
    assert_eq!(swf.as_value()["status"], json!({"conditions": []}));
}

#[test]
fn annotations_and_stamps() {
    let mut swf = swf_with_spec(Value::Null);
    assert_eq!(swf.stamps().version, None);
    swf.set_annotation(VERSION_ANNOTATION, "2.17.0");
    swf.set_annotation(RENDER_HASH_ANNOTATION, "sha256:00");
    let stamps = swf.stamps();
    assert_eq!(stamps.version.as_deref(), Some("2.17.0"));
    assert_eq!(stamps.render_hash.as_deref(), Some("sha256:00"));
    assert_eq!(swf.name(), Some("daily"));
    assert_eq!(swf.namespace(), Some("team-a"));
}

#[test]
fn parameters_keep_stored_order() {
    let mut swf = swf_with_spec(Value::Null);
    swf.as_value_mut()["spec"]["workflow"]["parameters"] =
        json!([{"name": "b", "value": "\"2\""}, {"name": "a", "value": "1"}]);
    let names: Vec<_> = swf.parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["b", "a"]);
}

#[test]
fn digest_ignores_storage_form_key_order_and_parameter_order() {
    let string_form = json!({"workflow": {
        "spec": "{\"spec\":{\"templates\":[]},\"kind\":\"Workflow\"}",
        "parameters": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]
    }});
    let object_form = json!({"workflow": {
        "parameters": [{"name": "b", "value": "2"}, {"name": "a", "value": "1"}],
        "spec": {"kind": "Workflow", "spec": {"templates": []}}
    }});
    assert_eq!(render_digest(&string_form), render_digest(&object_form));
}

#[test]
fn digest_sees_content_changes() {
    let base = json!({"enabled": true, "workflow": {"spec": "{\"a\":1}"}});
    let edited = json!({"enabled": true, "workflow": {"spec": "{\"a\":2}"}});
    let param_changed = json!({"enabled": true, "workflow": {
        "spec": "{\"a\":1}", "parameters": [{"name": "p", "value": "x"}]
    }});
    assert_ne!(render_digest(&base), render_digest(&edited));
    assert_ne!(render_digest(&base), render_digest(&param_changed));
}

#[test]
fn duplicate_parameter_names_stay_a_list() {
    let spec = json!({"workflow": {"parameters": [
        {"name": "a", "value": "1"}, {"name": "a", "value": "2"}
    ]}});
    assert!(normalized_spec(&spec)["workflow"]["parameters"].is_array());
}

#[test]
fn unparseable_embedded_string_is_digested_as_text() {
    let spec = json!({"workflow": {"spec": "not json"}});
    assert_eq!(normalized_spec(&spec), spec);
}

#[test]
fn digest_with_a_parsed_workflow_matches_the_stored_one() {
    let mut swf = swf_with_spec(workflow());
    let embedded = swf.embedded_workflow().unwrap().unwrap();
    let ahead = swf.render_digest_with(&embedded);
    swf.set_embedded_workflow(&embedded);
    assert_eq!(ahead, swf.render_digest());
}

#[test]
fn the_cheap_reference_only_scan_agrees_with_the_parsed_object() {
    for spec in [json!("{\"a\":1}"), json!({"a": 1}), json!(null)] {
        let swf = swf_with_spec(spec);
        let text = serde_json::to_string(swf.as_value()).unwrap();
        assert_eq!(
            is_reference_only_json(&text).unwrap(),
            swf.is_reference_only(),
            "{text}"
        );
    }
    let no_workflow = json!({"kind": "ScheduledWorkflow", "spec": {"pipelineVersionId": "v1"}});
    assert!(is_reference_only_json(&no_workflow.to_string()).unwrap());
    assert!(is_reference_only_json("not json").is_err());
}
