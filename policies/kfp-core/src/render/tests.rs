use pipewarden_guest::swf::render_digest;
use serde_json::{Value, json};

use super::*;
use crate::fixtures::{self, embedded, settings, swf_json, template};

const TARGET: Option<&str> = Some("2.17.0");

fn render(name: &str) -> String {
    render_swf(&swf_json(name), TARGET, &settings()).unwrap()
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn kfp_2_3_moves_to_the_2_17_drivers_and_launcher() {
    let rendered = embedded(&render("kfp-2.3.yaml"));
    let expected = embedded(&swf_json("kfp-2.17.yaml"));
    for name in ["system-container-driver", "system-dag-driver"] {
        let (got, want) = (template(&rendered, name), template(&expected, name));
        assert_eq!(
            got["container"]["args"], want["container"]["args"],
            "{name} args"
        );
        assert_eq!(
            got["container"]["image"], want["container"]["image"],
            "{name} image"
        );
    }
    let executor = "system-container-impl";
    assert_eq!(
        template(&rendered, executor)["initContainers"],
        template(&expected, executor)["initContainers"]
    );
}

#[test]
fn kfp_2_3_drivers_gain_the_inputs_new_flags_refer_to() {
    let rendered = embedded(&render("kfp-2.3.yaml"));
    for name in ["system-container-driver", "system-dag-driver"] {
        let parameters = &template(&rendered, name)["inputs"]["parameters"];
        let task_name = parameters
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "task-name");
        assert_eq!(
            task_name,
            Some(&json!({"name": "task-name", "default": ""})),
            "{name}"
        );
    }
}

#[test]
fn kfp_2_17_workflow_is_left_as_it_is() {
    let original = swf_json("kfp-2.17.yaml");
    assert_eq!(
        embedded(&render_swf(&original, TARGET, &settings()).unwrap()),
        embedded(&original)
    );
}

#[test]
fn a_render_of_a_render_is_byte_identical() {
    for name in [
        "kfp-2.3.yaml",
        "kfp-2.17.yaml",
        "kfp-legacy-object.yaml",
        "kfp-2.3-parameters.yaml",
    ] {
        let once = render(name);
        let twice = render_swf(&once, TARGET, &settings()).unwrap();
        assert_eq!(once, twice, "{name}");
    }
}

#[test]
fn stamps_version_and_render_hash() {
    let out = parsed(&render("kfp-2.3.yaml"));
    let annotations = &out["metadata"]["annotations"];
    assert_eq!(annotations[VERSION_ANNOTATION], "2.17.0");
    assert_eq!(
        annotations[RENDER_HASH_ANNOTATION],
        render_digest(&out["spec"])
    );
}

#[test]
fn unknown_target_stamps_only_the_hash() {
    for target in [None, Some("")] {
        let out = parsed(&render_swf(&swf_json("kfp-2.3.yaml"), target, &settings()).unwrap());
        let annotations = &out["metadata"]["annotations"];
        assert!(annotations.get(VERSION_ANNOTATION).is_none(), "{target:?}");
        assert!(annotations[RENDER_HASH_ANNOTATION].is_string());
    }
}

#[test]
fn only_spec_and_stamps_change() {
    let input = parsed(&swf_json("kfp-2.3.yaml"));
    let mut out = parsed(&render("kfp-2.3.yaml"));
    assert_eq!(out["status"], input["status"]);
    out["spec"]["workflow"]["spec"] = input["spec"]["workflow"]["spec"].clone();
    out["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    assert_eq!(out, input);
}

#[test]
fn workflow_spec_is_written_as_a_compact_string() {
    let out = parsed(&render("kfp-2.3.yaml"));
    let text = out["spec"]["workflow"]["spec"].as_str().unwrap();
    assert!(!text.contains(": ") && !text.contains('\n'));
}

#[test]
fn legacy_object_form_renders_like_the_string_form() {
    let legacy = parsed(&render("kfp-legacy-object.yaml"));
    assert!(legacy["spec"]["workflow"]["spec"].is_string());
    assert_eq!(
        embedded(&legacy.to_string()),
        embedded(&render("kfp-2.3.yaml"))
    );
}

#[test]
fn reference_only_comes_back_unchanged() {
    let input = swf_json("kfp-reference-only.yaml");
    assert_eq!(render_swf(&input, TARGET, &settings()).unwrap(), input);
}

#[test]
fn corrupted_spec_is_a_clear_error() {
    let error = render_swf(&swf_json("kfp-2.3-corrupted.yaml"), TARGET, &settings()).unwrap_err();
    assert!(error.contains("no Argo Workflow"), "{error}");
    assert!(error.contains("dynamicKey1"), "{error}");
}

#[test]
fn unreadable_inputs_are_errors() {
    let mut swf = parsed(&swf_json("kfp-2.3.yaml"));
    swf["spec"]["workflow"]["spec"] = json!("{\"kind\":\"Workflow\",");
    let error = render_swf(&swf.to_string(), TARGET, &settings()).unwrap_err();
    assert!(error.contains("not valid JSON"), "{error}");
    swf["spec"]["workflow"]["spec"] = json!("");
    let error = render_swf(&swf.to_string(), TARGET, &settings()).unwrap_err();
    assert!(error.contains("empty"), "{error}");
    swf["spec"]["workflow"]["spec"] = json!(42);
    let error = render_swf(&swf.to_string(), TARGET, &settings()).unwrap_err();
    assert!(error.contains("a number"), "{error}");
    assert!(render_swf("not json", TARGET, &settings()).is_err());
    let error = render_swf("[]", TARGET, &settings()).unwrap_err();
    assert!(error.contains("not a JSON object"), "{error}");
}

#[test]
fn parameters_keep_their_order() {
    let input = parsed(&swf_json("kfp-2.3-parameters.yaml"));
    let out = parsed(&render("kfp-2.3-parameters.yaml"));
    assert_eq!(
        out["spec"]["workflow"]["parameters"],
        input["spec"]["workflow"]["parameters"]
    );
}

#[test]
fn service_account_is_applied_only_when_configured() {
    let mut with_account = settings();
    with_account.service_account = Some("pipeline-runner".to_owned());
    let out = parsed(&render_swf(&swf_json("kfp-2.3.yaml"), TARGET, &with_account).unwrap());
    assert_eq!(out["spec"]["serviceAccount"], "pipeline-runner");
    assert_eq!(
        embedded(&out.to_string())["spec"]["serviceAccountName"],
        "pipeline-runner"
    );
    let plain = parsed(&render("kfp-2.3.yaml"));
    assert_eq!(plain["spec"]["serviceAccount"], "default-editor");
    assert_eq!(
        embedded(&plain.to_string())["spec"]["serviceAccountName"],
        "default-editor"
    );
}

fn workflow_with(templates: Value) -> EmbeddedWorkflow {
    EmbeddedWorkflow {
        value: json!({"kind": "Workflow", "spec": {"templates": templates}}),
        form: pipewarden_guest::swf::SpecForm::String,
    }
}

fn driver(name: &str, args: Value) -> Value {
    json!({"name": name, "container": {"command": ["driver"], "image": "old", "args": args}})
}

#[test]
fn driver_kind_falls_back_to_the_template_name() {
    let mut workflow = workflow_with(json!([
        driver("system-container-driver", json!(["--pipeline_name", "p"])),
        driver("system-dag-driver", json!(["--pipeline_name", "p"])),
    ]));
    let mut minimal = settings();
    minimal.driver.flags.retain(|flag| flag.name != "type");
    migrate_workflow(&mut workflow, &minimal).unwrap();
    let templates = &workflow.value["spec"]["templates"];
    assert!(
        templates[0]["container"]["args"]
            .to_string()
            .contains("--container")
    );
    assert!(
        templates[1]["container"]["args"]
            .to_string()
            .contains("--runtime_config")
    );
}

#[test]
fn driver_of_unknown_kind_is_an_error() {
    let mut workflow = workflow_with(json!([driver("mystery", json!([]))]));
    let error = migrate_workflow(&mut workflow, &settings()).unwrap_err();
    assert!(
        error.contains("template mystery") && error.contains("--type"),
        "{error}"
    );
}

#[test]
fn missing_per_pipeline_flag_is_an_error() {
    let mut workflow = workflow_with(json!([driver("d", json!(["--type", "CONTAINER"]))]));
    let error = migrate_workflow(&mut workflow, &settings()).unwrap_err();
    assert!(
        error.contains("template d") && error.contains("--pipeline_name"),
        "{error}"
    );
}

#[test]
fn malformed_templates_are_errors() {
    let mut workflow = workflow_with(json!([driver("d", json!(["--type", 1]))]));
    let error = migrate_workflow(&mut workflow, &settings()).unwrap_err();
    assert!(error.contains("non-string"), "{error}");
    let mut workflow = workflow_with(json!([driver("d", json!("--type"))]));
    assert!(
        migrate_workflow(&mut workflow, &settings())
            .unwrap_err()
            .contains("not a list")
    );
    let mut workflow = workflow_with(json!(["text"]));
    assert!(
        migrate_workflow(&mut workflow, &settings())
            .unwrap_err()
            .contains("templates[0]")
    );
    let mut workflow = workflow_with(json!({}));
    assert!(
        migrate_workflow(&mut workflow, &settings())
            .unwrap_err()
            .contains("not a list")
    );
    let mut bad_inputs = driver("d", json!(["--type", "CONTAINER", "--pipeline_name", "p"]));
    bad_inputs["inputs"] = json!({"parameters": {}});
    let mut workflow = workflow_with(json!([bad_inputs]));
    let error = migrate_workflow(&mut workflow, &settings()).unwrap_err();
    assert!(error.contains("inputs.parameters"), "{error}");
}

#[test]
fn non_driver_containers_are_untouched() {
    let user = json!({"name": "train", "container": {"command": ["python"], "image": "me:1"}});
    let mut workflow = workflow_with(json!([user.clone()]));
    migrate_workflow(&mut workflow, &settings()).unwrap();
    assert_eq!(workflow.value["spec"]["templates"][0], user);
}

#[test]
fn workflow_without_drivers_is_only_stamped() {
    let mut swf = parsed(&swf_json("kfp-2.3.yaml"));
    let v1 = json!({"kind": "Workflow", "spec": {"templates": [{"name": "main", "container": {"image": "x"}}]}});
    swf["spec"]["workflow"]["spec"] = json!(v1.to_string());
    let out = parsed(&render_swf(&swf.to_string(), TARGET, &settings()).unwrap());
    assert_eq!(embedded(&out.to_string()), v1);
    assert_eq!(out["metadata"]["annotations"][VERSION_ANNOTATION], "2.17.0");
}

#[test]
fn extra_step_runs_before_stamping() {
    let out = render_swf_with(&swf_json("kfp-2.3.yaml"), TARGET, &settings(), |workflow| {
        workflow.value["metadata"]["labels"] = json!({"distribution": "yes"});
        Ok(())
    })
    .unwrap();
    let out = parsed(&out);
    assert_eq!(
        embedded(&out.to_string())["metadata"]["labels"]["distribution"],
        "yes"
    );
    assert_eq!(
        out["metadata"]["annotations"][RENDER_HASH_ANNOTATION],
        render_digest(&out["spec"])
    );
    let failed = render_swf_with(&swf_json("kfp-2.3.yaml"), TARGET, &settings(), |_| {
        Err("distribution step failed".to_owned())
    });
    assert_eq!(failed, Err("distribution step failed".to_owned()));
}

#[test]
fn fixture_helpers_read_the_shipped_settings() {
    assert!(fixtures::settings_text().contains("kfp-driver:2.17.0"));
}
