//! IR recovery: from every KFP 2.17.0 golden and from a KFP 2.3.0 compile, and refusals.

use std::fmt::Write;

use kfp_compiler::{CompileOptions, Layout, RecoverError, compile_job, recover_ir};
use serde_json::{Value, json};

use crate::support::*;

/// Recovering a golden and compiling the result again, in the case's environments, gives
/// the golden back exactly (no sorting of Go's random orders needed: they are recovered).
#[test]
fn every_upstream_golden_recompiles_from_its_recovered_ir() {
    let dir = upstream_dir("kfp-2.17.0");
    let cases = case_names(&dir);
    let mut failures = String::new();
    for case in &cases {
        let golden = load_yaml(&golden_path(&dir, case));
        let expected = comparable(golden.clone(), false).expect("golden is comparable");
        let recovered = match recover_ir(&golden) {
            Ok(recovered) => recovered,
            Err(e) => {
                let _ = writeln!(failures, "{case}: recover failed: {e}");
                continue;
            }
        };
        assert_eq!(recovered.layout, Layout::Arguments, "{case}");
        for environment in environments(case) {
            let compiled = compile_job(
                &recovered.pipeline_job(),
                recovered.platform_spec.as_ref(),
                &environment.options(),
            )
            .map_err(|e| format!("compile error: {e}"))
            .and_then(|workflow| comparable(workflow, environment.cache_disabled));
            match compiled {
                Ok(workflow) if workflow == expected => {}
                Ok(workflow) => {
                    let _ = writeln!(
                        failures,
                        "{case} [{}]:\n{}",
                        environment.label(),
                        render_differences(&diff(&expected, &workflow, 6))
                    );
                }
                Err(e) => {
                    let _ = writeln!(failures, "{case} [{}]: {e}", environment.label());
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "recover then compile differs from the golden:\n{failures}"
    );
}

/// The one KFP 2.3.0 compile: the platform spec comes back as the IR file holds it, and
/// compiling the recovered IR with 2.17.0 stores exactly the component, executor and
/// Kubernetes JSON that 2.3.0 stored (the same hashes, byte for byte).
#[test]
fn a_kfp_2_3_compile_gives_back_its_ir() {
    let dir = upstream_dir("kfp-2.3.0");
    let workflow = load_yaml(&dir.join("compiled").join("create_pod_metadata.yaml"));
    let platform_file: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("ir").join("create_pod_metadata.json")).expect("IR file"),
    )
    .expect("IR file is JSON");

    let recovered = recover_ir(&workflow).expect("a 2.3.0 workflow carries its IR");
    assert_eq!(recovered.layout, Layout::Arguments);
    assert_eq!(recovered.platform_spec.as_ref(), Some(&platform_file));
    assert_eq!(
        recovered.pipeline_spec.pointer("/pipelineInfo/name"),
        Some(&json!("namespace/n1/pipeline/hello-world"))
    );
    assert_eq!(
        recovered.runtime_config,
        Some(json!({"parameters": {"text": {"stringValue": "hi there"}}}))
    );
    assert_eq!(recovered.display_name, "");
    assert_eq!(
        recovered
            .pipeline_spec
            .pointer("/components/comp-hello-world/executorLabel"),
        Some(&json!("exec-hello-world"))
    );
    assert_eq!(
        recovered
            .pipeline_spec
            .pointer("/deploymentSpec/executors/exec-hello-world/container/image"),
        Some(&json!("python:3.7"))
    );

    let recompiled = compile_job(
        &recovered.pipeline_job(),
        recovered.platform_spec.as_ref(),
        &CompileOptions::kfp_2_17_0_install(),
    )
    .expect("the recovered IR compiles with 2.17.0");
    assert_eq!(stored_ir(&recompiled), stored_ir(&workflow));
    assert_eq!(
        recompiled.pointer("/metadata/generateName"),
        Some(&json!("hello-world-"))
    );
}

/// The IR-carrying arguments of a workflow, sorted.
fn stored_ir(workflow: &Value) -> Vec<(String, String)> {
    let mut stored: Vec<(String, String)> = workflow
        .pointer("/spec/arguments/parameters")
        .and_then(Value::as_array)
        .expect("arguments")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    stored.sort();
    assert!(stored.len() >= 3, "{stored:?}");
    stored
}

/// KFP 2.0 to 2.2 kept the IR in annotations keyed by component name.
#[test]
fn annotation_layout_of_kfp_2_0_is_recovered() {
    let component = r#"{"executorLabel":"exec-echo","inputDefinitions":{"parameters":{"msg":{"type":"STRING"}}}}"#;
    let root = r#"{"dag":{"tasks":{"echo":{"componentRef":{"name":"comp-echo"},"inputs":{"parameters":{"msg":{"componentInputParameter":"msg"}}},"taskInfo":{"name":"echo"}}}},"inputDefinitions":{"parameters":{"msg":{"type":"STRING"}}}}"#;
    let container = r#"{"command":["echo","{{$.inputs.parameters['msg']}}"],"image":"alpine"}"#;
    let workflow = json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "generateName": "echo-",
            "annotations": {
                "pipelines.kubeflow.org/components-comp-echo": component,
                "pipelines.kubeflow.org/components-root": root,
                "pipelines.kubeflow.org/implementations-comp-echo": container,
                "pipelines.kubeflow.org/kubernetes-comp-echo": r#"{"podMetadata":{"labels":{"team":"a"}}}"#,
            }
        },
        "spec": {
            "entrypoint": "entrypoint",
            "templates": [
                {"name": "system-dag-driver", "container": {"args": ["--pipeline_name", "echo"]}},
                {"name": "root", "dag": {"tasks": [{
                    "name": "echo-driver",
                    "template": "system-container-driver",
                    "arguments": {"parameters": [
                        {"name": "component", "value": "{{workflow.annotations.pipelines.kubeflow.org/components-comp-echo}}"},
                        {"name": "task", "value": r#"{"componentRef":{"name":"comp-echo"},"taskInfo":{"name":"echo"}}"#},
                        {"name": "container", "value": "{{workflow.annotations.pipelines.kubeflow.org/implementations-comp-echo}}"}
                    ]}
                }]}},
                {"name": "entrypoint", "dag": {"tasks": [{
                    "name": "root-driver",
                    "template": "system-dag-driver",
                    "arguments": {"parameters": [
                        {"name": "runtime-config", "value": r#"{"parameterValues":{"msg":"hi"}}"#}
                    ]}
                }]}}
            ]
        }
    });
    let recovered = recover_ir(&workflow).expect("2.0 layout");
    assert_eq!(recovered.layout, Layout::Annotations);
    assert_eq!(
        recovered.pipeline_spec,
        json!({
            "pipelineInfo": {"name": "echo"},
            "root": serde_json::from_str::<Value>(root).unwrap(),
            "components": {"comp-echo": serde_json::from_str::<Value>(component).unwrap()},
            "deploymentSpec": {"executors": {"exec-echo": {"container": serde_json::from_str::<Value>(container).unwrap()}}}
        })
    );
    assert_eq!(
        recovered.platform_spec,
        Some(
            json!({"platforms": {"kubernetes": {"deploymentSpec": {"executors": {
                "exec-echo": {"podMetadata": {"labels": {"team": "a"}}}
            }}}}})
        )
    );
    assert_eq!(
        recovered.runtime_config,
        Some(json!({"parameterValues": {"msg": "hi"}}))
    );
    let compiled = compile_job(
        &recovered.pipeline_job(),
        recovered.platform_spec.as_ref(),
        &CompileOptions::upstream_test(),
    )
    .expect("compiles");
    let arguments = stored_ir(&compiled);
    assert!(arguments.contains(&("components-root".to_owned(), root.to_owned())));
    assert!(
        arguments
            .iter()
            .any(|(name, value)| name.starts_with("implementations-") && value == container)
    );
}

/// Components sharing one container share one stored spec; the later one gets a label of
/// its own when its Kubernetes config differs, so recompiling still gives the same workflow.
#[test]
fn components_sharing_a_container_keep_their_own_kubernetes_config() {
    let container = json!({"container": {"image": "alpine", "command": ["true"]}});
    let spec = json!({
        "pipelineInfo": {"name": "twins"},
        "root": {"dag": {"tasks": {
            "a": {"componentRef": {"name": "comp-a"}, "taskInfo": {"name": "a"}},
            "b": {"componentRef": {"name": "comp-b"}, "taskInfo": {"name": "b"}}
        }}},
        "components": {
            "comp-a": {"executorLabel": "exec-a"},
            "comp-b": {"executorLabel": "exec-b", "inputDefinitions": {"parameters": {"x": {"parameterType": "STRING", "isOptional": true}}}}
        },
        "deploymentSpec": {"executors": {"exec-a": container, "exec-b": container}}
    });
    let platform = json!({"platforms": {"kubernetes": {"deploymentSpec": {"executors": {
        "exec-b": {"podMetadata": {"annotations": {"owner": "b"}}}
    }}}}});
    let options = CompileOptions::upstream_test();
    let workflow = kfp_compiler::compile(&spec, Some(&platform), &options).expect("compiles");
    let recovered = recover_ir(&workflow).expect("recovers");
    assert_eq!(
        recovered
            .pipeline_spec
            .pointer("/components/comp-b/executorLabel"),
        Some(&json!("exec-b")),
        "{:#}",
        recovered.pipeline_spec
    );
    let again = compile_job(
        &recovered.pipeline_job(),
        recovered.platform_spec.as_ref(),
        &options,
    )
    .expect("recompiles");
    assert_eq!(comparable(again, false), comparable(workflow, false));
}

#[test]
fn the_embedded_json_text_of_a_scheduled_workflow_is_accepted() {
    let dir = upstream_dir("kfp-2.17.0");
    let golden = load_yaml(&golden_path(&dir, "add_numbers"));
    let text = Value::String(golden.to_string());
    assert_eq!(recover_ir(&text), recover_ir(&golden));
}

#[test]
fn workflows_without_a_v2_ir_are_refused_with_the_reason() {
    assert!(matches!(
        recover_ir(&json!([1, 2])),
        Err(RecoverError::NotAWorkflow(_))
    ));
    assert!(matches!(
        recover_ir(&json!({"kind": "ScheduledWorkflow", "spec": {"workflow": {}}})),
        Err(RecoverError::NotAWorkflow(message)) if message.contains("reference-only")
    ));
    assert!(matches!(
        recover_ir(&json!("not json")),
        Err(RecoverError::NotAWorkflow(_))
    ));

    let v1 = json!({
        "kind": "Workflow",
        "metadata": {"annotations": {"pipelines.kubeflow.org/pipeline_spec": "{\"name\": \"v1\"}"}},
        "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "alpine"}}]}
    });
    assert_eq!(recover_ir(&v1), Err(RecoverError::KfpV1));

    let foreign = json!({
        "kind": "Workflow",
        "metadata": {"generateName": "hello-"},
        "spec": {"entrypoint": "main", "arguments": {"parameters": [{"name": "message", "value": "hi"}]},
                 "templates": [{"name": "main", "container": {"image": "alpine", "command": ["echo"]}}]}
    });
    assert!(matches!(recover_ir(&foreign), Err(RecoverError::NotKfp(_))));

    let dir = upstream_dir("kfp-2.17.0");
    let mut damaged = load_yaml(&golden_path(&dir, "add_numbers"));
    let parameters = damaged
        .pointer_mut("/spec/arguments/parameters")
        .and_then(Value::as_array_mut)
        .unwrap();
    parameters.retain(|p| !p["name"].as_str().unwrap().starts_with("implementations-"));
    assert!(
        matches!(recover_ir(&damaged), Err(RecoverError::Damaged(m)) if m.contains("executor"))
    );
    damaged
        .pointer_mut("/spec/arguments/parameters")
        .and_then(Value::as_array_mut)
        .unwrap()
        .clear();
    assert!(
        matches!(recover_ir(&damaged), Err(RecoverError::Damaged(m)) if m.contains("components-root"))
    );
}
