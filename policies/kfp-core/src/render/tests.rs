use kfp_compiler::{CompileOptions, compile_job};
use pipewarden_guest::NOT_REBUILDABLE_PREFIX;
use pipewarden_guest::swf::render_digest;
use serde_json::{Value, json};

use super::*;
use crate::fixtures::{
    self, compile_options, embedded, settings, swf_json, template, upstream_file,
    upstream_test_settings,
};

const TARGET: Option<&str> = Some("2.17.0");

fn render(name: &str) -> String {
    render_swf(&swf_json(name), TARGET, &settings()).unwrap()
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// An SWF as KFP's API server writes one around `workflow` (its `ScheduledWorkflow`): the
/// workflow's namespace and service account set, `sidecar.istio.io/inject: "false"` on every
/// template that has none, the workflow stored as a JSON string. Written out here, apart from
/// the code under test.
fn swf_as_api_server_writes(mut workflow: Value, namespace: &str, account: &str) -> Value {
    workflow["metadata"]["namespace"] = json!(namespace);
    workflow["spec"]["serviceAccountName"] = json!(account);
    for template in workflow["spec"]["templates"].as_array_mut().unwrap() {
        let annotations = &mut template["metadata"]["annotations"];
        if annotations.get("sidecar.istio.io/inject").is_none() {
            annotations["sidecar.istio.io/inject"] = json!("false");
        }
    }
    json!({
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "ScheduledWorkflow",
        "metadata": {"name": "daily", "namespace": namespace},
        "spec": {
            "enabled": true,
            "trigger": {"cronSchedule": {"cron": "0 0 2 * * *"}},
            "workflow": {"spec": workflow.to_string()},
            "serviceAccount": account,
        },
    })
}

fn yaml(path: &str) -> Value {
    serde_yaml::from_str(&upstream_file(path)).unwrap()
}

#[test]
fn kfp_2_3_0_compile_is_rebuilt_to_the_2_17_0_compile_of_its_ir() {
    // KFP 2.3.0's own compiler test: hello_world.json with create_pod_metadata.json compiled to
    // create_pod_metadata.yaml. Rebuilt, it must be what the 2.17.0 compiler (the port proven on
    // its 102 goldens) makes of the original IR, wrapped as the API server wraps it.
    let old = yaml("kfp-2.3.0/compiled/create_pod_metadata.yaml");
    let job: Value = serde_json::from_str(&upstream_file("kfp-2.3.0/ir/hello_world.json")).unwrap();
    let platform: Value =
        serde_json::from_str(&upstream_file("kfp-2.3.0/ir/create_pod_metadata.json")).unwrap();
    for (settings, options) in [
        (upstream_test_settings(), CompileOptions::upstream_test()),
        (settings(), compile_options(&settings())),
    ] {
        let live = swf_as_api_server_writes(old.clone(), "team-a", "default-editor");
        let rendered = parsed(&render_swf(&live.to_string(), TARGET, &settings).unwrap());
        let compiled = compile_job(&job, Some(&platform), &options).unwrap();
        let expected = swf_as_api_server_writes(compiled, "team-a", "default-editor");
        assert_eq!(
            embedded(&rendered.to_string()),
            embedded(&expected.to_string()),
            "{options:?}"
        );
        // The 2.17 drivers look executions up by task name: every driver call passes it.
        let workflow = embedded(&rendered.to_string());
        assert!(workflow.to_string().contains("--task_name"));
    }
}

#[test]
fn swfs_kfp_2_17_0_wrote_render_to_themselves() {
    // What KFP >= 2.4's ReconcileSwfCrs writes for 2.17.0: its compile, wrapped.
    for case in [
        "add_numbers",
        "pipeline_with_workspace",
        "pipeline_with_loops",
        "pipeline_with_multiple_exit_handlers",
    ] {
        let golden = yaml(&format!("kfp-2.17.0/compiled/{case}.yaml"));
        let live = swf_as_api_server_writes(golden, "kubeflow-user-example-com", "default-editor");
        let rendered = render_swf(&live.to_string(), TARGET, &upstream_test_settings()).unwrap();
        assert_eq!(embedded(&rendered), embedded(&live.to_string()), "{case}");
        // The whole spec: nothing for the host to write but stamps, which it never writes alone.
        let normalized = |swf: &Value| pipewarden_guest::swf::normalized_spec(&swf["spec"]);
        assert_eq!(normalized(&parsed(&rendered)), normalized(&live), "{case}");
        assert_eq!(
            parsed(&rendered)["spec"]["serviceAccount"],
            "default-editor"
        );
    }
}

#[test]
fn kfp_2_3_fixture_gets_what_the_2_17_compiler_adds() {
    let rendered = embedded(&render("kfp-2.3.yaml"));
    let driver = template(&rendered, "system-container-driver");
    let args = driver["container"]["args"].to_string();
    assert!(args.contains("--task_name"), "{args}");
    assert_eq!(
        driver["container"]["image"],
        "ghcr.io/kubeflow/kfp-driver:2.17.0"
    );
    assert_eq!(
        rendered["metadata"]["namespace"],
        "kubeflow-user-example-com"
    );
    assert_eq!(rendered["spec"]["serviceAccountName"], "default-editor");
    let launcher = &template(&rendered, "system-container-impl")["initContainers"][0];
    assert_eq!(launcher["image"], "ghcr.io/kubeflow/kfp-launcher:2.17.0");
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
fn an_unknown_or_unsupported_target_is_never_rendered() {
    for target in [
        None,
        Some(""),
        Some("unknown"),
        Some("2.18.0"),
        Some("2.16.1-dev"),
    ] {
        let error = render_swf(&swf_json("kfp-2.3.yaml"), target, &settings()).unwrap_err();
        assert!(
            error.starts_with(pipewarden_guest::UNSUPPORTED_TARGET_PREFIX),
            "{target:?}: {error}"
        );
    }
    // Settings naming a variable the target release does not read: unsupported too.
    let error = render_swf(&swf_json("kfp-2.3.yaml"), Some("2.16.1"), &settings()).unwrap_err();
    assert!(
        error.starts_with(pipewarden_guest::UNSUPPORTED_TARGET_PREFIX)
            && error.contains("DEFAULT_SECURITY_CONTEXT_HOST_USERS"),
        "{error}"
    );
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
fn reference_only_is_not_rebuildable() {
    let error = render_swf(&swf_json("kfp-reference-only.yaml"), TARGET, &settings()).unwrap_err();
    assert!(error.starts_with(NOT_REBUILDABLE_PREFIX), "{error}");
    assert!(error.contains("reference-only"), "{error}");
}

#[test]
fn an_overwritten_workflow_is_not_rebuildable() {
    let error = render_swf(&swf_json("kfp-2.3-corrupted.yaml"), TARGET, &settings()).unwrap_err();
    assert!(error.starts_with(NOT_REBUILDABLE_PREFIX), "{error}");
    assert!(
        error.contains("not a workflow compiled by KFP v2"),
        "{error}"
    );
}

#[test]
fn a_v1_pipeline_is_not_rebuildable() {
    let mut swf = parsed(&swf_json("kfp-2.3.yaml"));
    let v1 = json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "echo-", "annotations": {"pipelines.kubeflow.org/pipeline_spec": "{}"}},
        "spec": {"entrypoint": "echo", "templates": [{
            "name": "echo",
            "metadata": {"annotations": {"pipelines.kubeflow.org/component_spec": "{}"}},
            "container": {"image": "alpine", "command": ["echo"]},
        }]},
    });
    swf["spec"]["workflow"]["spec"] = json!(v1.to_string());
    let error = render_swf(&swf.to_string(), TARGET, &settings()).unwrap_err();
    assert!(error.starts_with(NOT_REBUILDABLE_PREFIX), "{error}");
    assert!(error.contains("KFP v1"), "{error}");
}

#[test]
fn a_damaged_kfp_workflow_is_a_render_failure() {
    let mut swf = parsed(&swf_json("kfp-2.3.yaml"));
    let mut workflow = embedded(&swf.to_string());
    let parameters = workflow["spec"]["arguments"]["parameters"]
        .as_array_mut()
        .unwrap();
    parameters.retain(|p| !p["name"].as_str().unwrap().starts_with("implementations-"));
    swf["spec"]["workflow"]["spec"] = json!(workflow.to_string());
    let error = render_swf(&swf.to_string(), TARGET, &settings()).unwrap_err();
    assert!(!error.starts_with(NOT_REBUILDABLE_PREFIX), "{error}");
    assert!(error.contains("damaged"), "{error}");
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
fn live_parameters_are_kept() {
    let input = parsed(&swf_json("kfp-2.3-parameters.yaml"));
    let out = parsed(&render("kfp-2.3-parameters.yaml"));
    assert_eq!(
        out["spec"]["workflow"]["parameters"],
        input["spec"]["workflow"]["parameters"]
    );
}

#[test]
fn the_runtime_parameters_go_into_the_compile_as_the_api_server_put_them() {
    let out = parsed(&render("kfp-2.3-parameters.yaml"));
    let workflow = embedded(&out.to_string());
    let root_driver = workflow["spec"]["templates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["dag"]["tasks"].as_array().into_iter().flatten())
        .find(|task| task["name"] == "root-driver")
        .unwrap();
    let config = root_driver["arguments"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "runtime-config")
        .unwrap();
    let config: Value = serde_json::from_str(config["value"].as_str().unwrap()).unwrap();
    assert_eq!(
        config["parameterValues"],
        json!({"message": "hello world", "repeat": 3, "threshold": 0.5})
    );
    // Rendering the render keeps them (they are in the compile now, and still in the SWF).
    let again = parsed(&render_swf(&out.to_string(), TARGET, &settings()).unwrap());
    assert_eq!(again, out);
}

#[test]
fn the_recurring_runs_service_account_wins_over_the_default() {
    let mut swf = parsed(&swf_json("kfp-2.3.yaml"));
    swf["spec"]["serviceAccount"] = json!("");
    let out = parsed(&render_swf(&swf.to_string(), TARGET, &settings()).unwrap());
    assert_eq!(out["spec"]["serviceAccount"], "pipeline-runner");
    assert_eq!(
        embedded(&out.to_string())["spec"]["serviceAccountName"],
        "pipeline-runner"
    );
    let plain = parsed(&render("kfp-2.3.yaml"));
    assert_eq!(plain["spec"]["serviceAccount"], "default-editor");
}

#[test]
fn every_template_gets_the_istio_annotation() {
    let rendered = embedded(&render("kfp-2.3.yaml"));
    for template in rendered["spec"]["templates"].as_array().unwrap() {
        assert_eq!(
            template["metadata"]["annotations"]["sidecar.istio.io/inject"], "false",
            "{}",
            template["name"]
        );
    }
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
