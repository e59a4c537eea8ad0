//! Compiler behaviour the upstream goldens do not reach: install settings (proxy, TLS, CA
//! bundle, security defaults, workspace defaults, spec patch), job inputs, and refusals.

use kfp_compiler::{CompileError, CompileOptions, compile, compile_job};
use serde_json::{Value, json};

/// One container task, optionally retried, plus an importer.
fn spec() -> Value {
    json!({
        "pipelineInfo": {"name": "namespace/team/pipeline/demo"},
        "root": {
            "dag": {"tasks": {
                "train": {"componentRef": {"name": "comp-train"}, "taskInfo": {"name": "train"},
                          "retryPolicy": {"maxRetryCount": 2, "backoffDuration": "1.5s", "backoffFactor": 1.5}},
                "load": {"componentRef": {"name": "comp-load"}, "taskInfo": {"name": "load"}}
            }},
            "inputDefinitions": {"parameters": {
                "lr": {"parameterType": "NUMBER_DOUBLE", "defaultValue": 0.5},
                "tag": {"parameterType": "STRING", "isOptional": true},
                "epochs": {"parameterType": "NUMBER_INTEGER"}
            }}
        },
        "components": {
            "comp-train": {"executorLabel": "exec-train"},
            "comp-load": {"executorLabel": "exec-load"}
        },
        "deploymentSpec": {"executors": {
            "exec-train": {"container": {"image": "python:3.11", "command": ["python"], "args": ["a<b"]}},
            "exec-load": {"importer": {"artifactUri": {"constant": "gs://b/x"}, "typeSchema": {"schemaTitle": "system.Dataset"}}}
        }}
    })
}

fn template<'a>(workflow: &'a Value, name: &str) -> &'a Value {
    workflow["spec"]["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no template {name}"))
}

fn args(template: &Value) -> Vec<&str> {
    template["container"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

fn flag<'a>(args: &[&'a str], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| *a == flag)
        .and_then(|i| args.get(i + 1).copied())
}

fn argument<'a>(workflow: &'a Value, name: &str) -> Option<&'a str> {
    workflow["spec"]["arguments"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["value"].as_str())
}

#[test]
fn install_settings_reach_every_driver_and_launcher() {
    let options = CompileOptions::from_settings(&json!({
        "V2_DRIVER_IMAGE": "registry/driver:1",
        "V2_LAUNCHER_IMAGE": "registry/launcher:1",
        "PIPELINE_LOG_LEVEL": "2",
        "PUBLISH_LOGS": "false",
        "HTTP_PROXY": "http://proxy:3128",
        "METADATA_TLS_ENABLED": "true",
        "ML_PIPELINE_TLS_ENABLED": "true",
        "CABUNDLE_CONFIGMAP_NAME": "bundle",
        "CABUNDLE_KEY_NAME": "roots.pem",
        "POD_NAMESPACE": "kfp",
        "DEFAULTPIPELINERUNNERSERVICEACCOUNT": "runner",
        "CacheEnabled": "false"
    }))
    .unwrap();
    let workflow = compile(&spec(), None, &options).unwrap();
    assert_eq!(workflow["spec"]["serviceAccountName"], "runner");
    assert_eq!(workflow["metadata"]["generateName"], "demo-");

    for name in ["system-container-driver", "system-dag-driver"] {
        let driver = template(&workflow, name);
        let a = args(driver);
        assert_eq!(driver["container"]["image"], "registry/driver:1");
        assert_eq!(
            flag(&a, "--pipeline_name"),
            Some("namespace/team/pipeline/demo")
        );
        assert_eq!(flag(&a, "--http_proxy"), Some("http://proxy:3128"));
        assert!(
            flag(&a, "--no_proxy")
                .unwrap()
                .starts_with("localhost,127.0.0.1,.svc.cluster.local,")
        );
        assert_eq!(
            flag(&a, "--ml_pipeline_server_address"),
            Some("ml-pipeline.kfp.svc.cluster.local")
        );
        assert_eq!(flag(&a, "--ca_cert_path"), Some("/kfp/certs/ca.crt"));
        assert_eq!(flag(&a, "--log_level"), Some("2"));
        assert_eq!(flag(&a, "--publish_logs"), Some("false"));
        for bare in [
            "--cache_disabled",
            "--ml_pipeline_tls_enabled",
            "--metadata_tls_enabled",
        ] {
            assert_eq!(a.iter().filter(|x| **x == bare).count(), 1, "{name} {bare}");
        }
        assert_eq!(
            driver["volumes"],
            json!([{"name": "custom-ca", "configMap": {"name": "bundle", "items": [{"key": "roots.pem", "path": "ca.crt"}]}}])
        );
        let env = driver["container"]["env"].as_array().unwrap();
        assert_eq!(
            env[0],
            json!({"name": "http_proxy", "value": "http://proxy:3128"})
        );
        assert_eq!(
            env[1],
            json!({"name": "HTTP_PROXY", "value": "http://proxy:3128"})
        );
    }
    let launcher = &template(&workflow, "retry-system-container-impl")["initContainers"][0];
    assert_eq!(launcher["image"], "registry/launcher:1");
    assert_eq!(
        launcher["args"],
        json!([
            "--copy",
            "/kfp-launcher/launch",
            "--cache_disabled",
            "--log_level",
            "2",
            "--publish_logs",
            "false"
        ])
    );
    let importer = template(&workflow, "system-importer");
    assert_eq!(importer["container"]["image"], "registry/launcher:1");
    assert_eq!(
        flag(&args(importer), "--mlmd_server_address"),
        Some("metadata-grpc-service.kfp.svc.cluster.local")
    );
}

#[test]
fn security_defaults_of_the_admin_apply_to_user_containers_only() {
    let options = CompileOptions::from_settings(&json!({
        "PIPELINE_RUN_AS_USER": "1001",
        "DEFAULT_SECURITY_CONTEXT_RUN_AS_USER": "2000",
        "DEFAULT_SECURITY_CONTEXT_RUN_AS_GROUP": "3000",
        "DEFAULT_SECURITY_CONTEXT_RUN_AS_NON_ROOT": "true",
        "DEFAULT_SECURITY_CONTEXT_HOST_USERS": "false"
    }))
    .unwrap();
    let workflow = compile(&spec(), None, &options).unwrap();
    assert_eq!(workflow["spec"]["securityContext"]["runAsUser"], 1001);
    let a = args(template(&workflow, "system-container-driver"));
    assert_eq!(flag(&a, "--default_run_as_user"), Some("2000"));
    assert_eq!(flag(&a, "--default_run_as_group"), Some("3000"));
    assert_eq!(flag(&a, "--default_run_as_non_root"), Some("true"));
    assert_eq!(flag(&a, "--default_host_users"), Some("false"));
    assert_eq!(
        flag(
            &args(template(&workflow, "system-dag-driver")),
            "--default_run_as_user"
        ),
        None
    );
    let executor = template(&workflow, "retry-system-container-impl");
    assert_eq!(
        executor["container"]["securityContext"],
        json!({
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
            "runAsUser": 2000, "runAsGroup": 3000, "runAsNonRoot": true
        })
    );
    assert_eq!(
        executor["securityContext"],
        json!({"seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(
        executor["initContainers"][0]["securityContext"]["runAsNonRoot"],
        true
    );
}

#[test]
fn job_inputs_and_root_defaults_form_the_runtime_config() {
    let job = json!({
        "displayName": "nightly",
        "pipelineSpec": spec(),
        "runtimeConfig": {"parameterValues": {"epochs": 3}, "gcsOutputDirectory": "s3://old"}
    });
    let mut options = CompileOptions::upstream_test();
    options.pipeline_root = Some("s3://bucket/root".into());
    let workflow = compile_job(&job, None, &options).unwrap();
    let entry = template(&workflow, "entrypoint");
    let config = entry["dag"]["tasks"][0]["arguments"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "runtime-config")
        .unwrap();
    assert_eq!(
        config["value"],
        r#"{"gcsOutputDirectory":"s3://bucket/root","parameterValues":{"epochs":3,"lr":0.5,"tag":null}}"#
    );
    assert_eq!(
        flag(
            &args(template(&workflow, "system-dag-driver")),
            "--run_display_name"
        ),
        Some("nightly")
    );
}

#[test]
fn retry_policy_and_stored_json_follow_go() {
    let workflow = compile(&spec(), None, &CompileOptions::upstream_test()).unwrap();
    let root = template(&workflow, "root");
    let train = root["dag"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "train")
        .unwrap();
    assert_eq!(train["template"], "retry-system-container-executor");
    let values: Vec<(&str, &str)> = train["arguments"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .skip(2)
        .map(|p| (p["name"].as_str().unwrap(), p["value"].as_str().unwrap()))
        .collect();
    assert_eq!(
        values,
        [
            ("retry-max-count", "2"),
            ("retry-backoff-duration", "1"),
            ("retry-backoff-factor", "1.5")
        ]
    );
    let driver_task = &root["dag"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "train-driver")
        .unwrap()["arguments"]["parameters"][1];
    assert_eq!(
        driver_task["value"],
        r#"{"componentRef":{"name":"comp-train"},"retryPolicy":{"backoffDuration":"1.500s","backoffFactor":1.5,"maxRetryCount":2},"taskInfo":{"name":"train"}}"#
    );
    let container_key = workflow["spec"]["arguments"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .find(|n| n.starts_with("implementations-") && n.len() == "implementations-".len() + 64)
        .expect("container executors are keyed by hash");
    assert_eq!(
        argument(&workflow, container_key),
        Some(r#"{"args":["a\u003cb"],"command":["python"],"image":"python:3.11"}"#)
    );
    assert!(
        argument(&workflow, "implementations-comp-load").is_some(),
        "importers keep their name"
    );
}

#[test]
fn workspace_defaults_come_from_the_install_and_sizes_are_canonical() {
    let mut options = CompileOptions::from_settings(&json!({
        "workspace": {"volumeclaimtemplatespec": {"accessModes": ["ReadWriteMany"], "storageClassName": "nfs", "volumeMode": "Filesystem"}}
    }))
    .unwrap();
    let platform = |workspace: Value| {
        json!({"platforms": {"kubernetes": {"pipelineConfig": {
            "workspace": workspace, "resourceTtlOnSuccess": 60, "activeDeadlineSeconds": 3600
        }}}})
    };
    let workflow = compile(
        &spec(),
        Some(&platform(json!({"size": "1.5Gi", "kubernetes": {}}))),
        &options,
    )
    .unwrap();
    assert_eq!(
        workflow["spec"]["volumeClaimTemplates"],
        json!([{"metadata": {"name": "kfp-workspace"}, "status": {}, "spec": {
            "accessModes": ["ReadWriteMany"], "storageClassName": "nfs", "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": "1536Mi"}}
        }}])
    );
    assert_eq!(
        workflow["spec"]["ttlStrategy"],
        json!({"secondsAfterSuccess": 60})
    );
    assert_eq!(workflow["spec"]["activeDeadlineSeconds"], 3600);

    let refused = |workspace: Value, options: &CompileOptions| {
        compile(&spec(), Some(&platform(workspace)), options)
            .unwrap_err()
            .to_string()
    };
    let patch = json!({"size": "1Gi", "kubernetes": {"pvcSpecPatch": {"volumeMode": "Block"}}});
    assert!(refused(patch, &options).contains("unknown fields in PVC spec patch: [volumeMode]"));
    assert!(refused(json!({"kubernetes": {}}), &options).contains("workspace size is required"));
    assert!(refused(json!({"size": "-1Gi", "kubernetes": {}}), &options).contains("negative size"));
    options.default_workspace = None;
    assert!(
        refused(json!({"size": "1Gi", "kubernetes": {}}), &options)
            .contains("must specify accessModes")
    );
}

#[test]
fn the_spec_patch_variable_patches_the_workflow_spec() {
    let options = CompileOptions::from_settings(&json!({
        "COMPILED_PIPELINE_SPEC_PATCH": r#"{"serviceAccountName": "patched", "podMetadata": {"labels": {"team": "ml"}}}"#
    }))
    .unwrap();
    let workflow = compile(&spec(), None, &options).unwrap();
    assert_eq!(workflow["spec"]["serviceAccountName"], "patched");
    assert_eq!(
        workflow["spec"]["podMetadata"]["labels"],
        json!({"pipelines.kubeflow.org/v2_component": "true", "team": "ml"})
    );
    let bad =
        CompileOptions::from_settings(&json!({"COMPILED_PIPELINE_SPEC_PATCH": "{nope"})).unwrap();
    assert!(compile(&spec(), None, &bad).is_err());
}

#[test]
fn compiling_is_deterministic() {
    let options = CompileOptions::kfp_2_17_0_install();
    let first = compile(&spec(), None, &options).unwrap();
    assert_eq!(
        kfp_compiler::gojson::to_string(&first),
        kfp_compiler::gojson::to_string(&compile(&spec(), None, &options).unwrap())
    );
}

#[test]
fn constructs_the_argo_compiler_lacks_are_refused() {
    let options = CompileOptions::upstream_test();
    let mut resolver = spec();
    resolver["deploymentSpec"]["executors"]["exec-train"] = json!({"resolver": {}});
    assert!(matches!(
        compile(&resolver, None, &options),
        Err(CompileError::Unsupported(_))
    ));

    let mut conditional_importer = spec();
    conditional_importer["root"]["dag"]["tasks"]["load"]["triggerPolicy"] =
        json!({"condition": "x == 1"});
    let err = compile(&conditional_importer, None, &options).unwrap_err();
    assert!(
        err.to_string()
            .contains("triggerPolicy.condition on importer task is not supported"),
        "{err}"
    );

    let mut artifact_loop = spec();
    artifact_loop["root"]["dag"]["tasks"]["train"]["artifactIterator"] = json!({"itemInput": "x"});
    let err = compile(&artifact_loop, None, &options).unwrap_err();
    assert!(
        err.to_string()
            .contains("artifact iterator not implemented yet"),
        "{err}"
    );

    let mut missing_executor = spec();
    missing_executor["components"]["comp-train"]["executorLabel"] = json!("exec-gone");
    assert!(matches!(
        compile(&missing_executor, None, &options),
        Err(CompileError::UnknownExecutor { label, .. }) if label == "exec-gone"
    ));

    let mut bad_kubernetes = spec();
    bad_kubernetes["components"]["comp-train"]["executorLabel"] = json!("exec-train");
    let platform = json!({"platforms": {"kubernetes": {"deploymentSpec": {"executors": {
        "exec-train": {"podMetadata": {"labels": {"a": "b"}}, "notAField": 1}
    }}}}});
    let err = compile(&bad_kubernetes, Some(&platform), &options).unwrap_err();
    assert!(
        err.to_string()
            .contains("failed to unmarshal kubernetes config"),
        "{err}"
    );
}

#[test]
fn a_root_that_is_a_container_is_stored_without_templates() {
    let spec = json!({
        "pipelineInfo": {"name": "lone"},
        "root": {"executorLabel": "exec-lone"},
        "deploymentSpec": {"executors": {"exec-lone": {"container": {"image": "alpine"}}}}
    });
    let workflow = compile(&spec, None, &CompileOptions::upstream_test()).unwrap();
    assert_eq!(
        argument(&workflow, "components-root"),
        Some(r#"{"executorLabel":"exec-lone"}"#)
    );
    assert_eq!(
        argument(&workflow, "implementations-root"),
        Some(r#"{"image":"alpine"}"#)
    );
    assert!(workflow["spec"].get("templates").is_none());
}
