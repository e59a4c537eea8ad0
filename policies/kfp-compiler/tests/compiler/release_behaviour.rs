//! Release differences the data sets' settings and IRs do not reach, each checked against
//! what that tag's source does: the 2.14.4 executor CA bundle, 2.15.0's TLS-only CA secret,
//! workspace PVC checks, pipeline timeouts, proto fields per release, the default `NO_PROXY`,
//! and options set directly for a release that does not read them.

use kfp_compiler::{CompileOptions, Release, compile};
use serde_json::{Value, json};

fn spec() -> Value {
    json!({
        "pipelineInfo": {"name": "demo"},
        "root": {"dag": {"tasks": {
            "train": {"componentRef": {"name": "comp-train"}, "taskInfo": {"name": "train"}},
            "load": {"componentRef": {"name": "comp-load"}, "taskInfo": {"name": "load"}}
        }}},
        "components": {
            "comp-train": {"executorLabel": "exec-train"},
            "comp-load": {"executorLabel": "exec-load"}
        },
        "deploymentSpec": {"executors": {
            "exec-train": {"container": {"image": "python:3.11", "command": ["python"]}},
            "exec-load": {"importer": {"artifactUri": {"constant": "gs://b/x"},
                          "typeSchema": {"schemaTitle": "system.Dataset"},
                          "downloadToWorkspace": true}}
        }}
    })
}

fn options(release: Release, settings: Value) -> CompileOptions {
    CompileOptions::from_settings_for(release, &settings).expect("settings the release reads")
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

fn env(container: &Value, name: &str) -> Option<String> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| e["value"].as_str().unwrap_or("").to_owned())
}

#[test]
fn kfp_2_14_4_mounts_the_executor_ca_bundle_config_map() {
    let settings = json!({
        "EXECUTOR_CABUNDLE_CONFIGMAP_NAME": "roots",
        "EXECUTOR_CABUNDLE_CONFIGMAP_KEY": "ca.pem",
        "EXECUTOR_CABUNDLE_MOUNTPATH": "/etc/roots"
    });
    let workflow = compile(&spec(), None, &options(Release::V2_14_4, settings.clone())).unwrap();
    let executor = template(&workflow, "system-container-impl");
    let container = &executor["container"];
    for name in ["REQUESTS_CA_BUNDLE", "AWS_CA_BUNDLE", "SSL_CERT_FILE"] {
        assert_eq!(
            env(container, name).as_deref(),
            Some("/etc/roots/ca.pem"),
            "{name}"
        );
    }
    assert_eq!(
        env(container, "SSL_CERT_DIR").as_deref(),
        Some("/etc/roots:/etc/ssl/certs:/etc/pki/tls/certs")
    );
    let volumes = executor["volumes"].as_array().unwrap();
    assert_eq!(
        volumes.last(),
        Some(&json!({"name": "ca-bundle", "configMap": {"name": "roots"}}))
    );
    let mounts = container["volumeMounts"].as_array().unwrap();
    assert_eq!(
        mounts.last(),
        Some(&json!({"name": "ca-bundle", "mountPath": "/etc/roots/ca.pem", "subPath": "ca.pem"}))
    );
    // Only executors; and without a key nothing is mounted.
    assert!(
        template(&workflow, "system-container-driver")
            .get("volumes")
            .is_none()
    );
    let without_key = json!({"EXECUTOR_CABUNDLE_CONFIGMAP_NAME": "roots"});
    let workflow = compile(&spec(), None, &options(Release::V2_14_4, without_key)).unwrap();
    assert!(
        env(
            &template(&workflow, "system-container-impl")["container"],
            "SSL_CERT_FILE"
        )
        .is_none()
    );
    // 2.15.0 does not read the variables at all.
    assert!(CompileOptions::from_settings_for(Release::V2_15_0, &settings).is_err());
}

#[test]
fn kfp_2_14_4_importer_reads_mlmd_from_the_config_map_and_has_no_workspace_variant() {
    let workflow = compile(&spec(), None, &options(Release::V2_14_4, json!({}))).unwrap();
    let importer = args_of(&workflow, "system-importer");
    let at = importer
        .iter()
        .position(|a| *a == "--mlmd_server_address")
        .unwrap();
    assert_eq!(
        &importer[at..at + 4],
        [
            "--mlmd_server_address",
            "$(METADATA_GRPC_SERVICE_HOST)",
            "--mlmd_server_port",
            "$(METADATA_GRPC_SERVICE_PORT)"
        ]
    );
    // 2.14.4's proto has no downloadToWorkspace: dropped from the stored importer.
    let stored = workflow["spec"]["arguments"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "implementations-comp-load")
        .unwrap();
    assert!(
        !stored["value"]
            .as_str()
            .unwrap()
            .contains("downloadToWorkspace")
    );
    let driver = args_of(&workflow, "system-container-driver");
    assert!(!driver.contains(&"--mlmd_server_address"));

    let workflow = compile(&spec(), None, &options(Release::V2_15_0, json!({}))).unwrap();
    let importer = args_of(&workflow, "system-importer-workspace");
    assert_eq!(
        flag_value(&importer, "--mlmd_server_address"),
        Some("metadata-grpc-service.kubeflow.svc.cluster.local")
    );
    assert_eq!(
        flag_value(
            &args_of(&workflow, "system-dag-driver"),
            "--ml_pipeline_server_address"
        ),
        Some("ml-pipeline.kubeflow")
    );
}

fn args_of<'a>(workflow: &'a Value, name: &str) -> Vec<&'a str> {
    args(template(workflow, name))
}

fn flag_value<'a>(args: &[&'a str], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| *a == flag)?;
    args.get(at + 1).copied()
}

#[test]
fn kfp_2_15_0_mounts_the_ca_secret_only_with_tls() {
    let with_tls = json!({"CABUNDLE_SECRET_NAME": "roots", "METADATA_TLS_ENABLED": "true"});
    let workflow = compile(&spec(), None, &options(Release::V2_15_0, with_tls)).unwrap();
    for name in [
        "system-dag-driver",
        "system-container-driver",
        "system-container-impl",
    ] {
        let template = template(&workflow, name);
        assert_eq!(
            template["volumes"].as_array().unwrap().last(),
            Some(&json!({"name": "ca-secret", "secret": {"secretName": "roots"}})),
            "{name}"
        );
        let mounts = template["container"]["volumeMounts"].as_array().unwrap();
        assert_eq!(
            mounts.last(),
            Some(&json!({"name": "ca-secret", "mountPath": "/kfp/certs"}))
        );
    }
    assert_eq!(
        flag_value(&args_of(&workflow, "system-dag-driver"), "--ca_cert_path"),
        Some("/kfp/certs/ca.crt")
    );
    let without_tls = json!({"CABUNDLE_SECRET_NAME": "roots"});
    let workflow = compile(
        &spec(),
        None,
        &options(Release::V2_15_0, without_tls.clone()),
    )
    .unwrap();
    assert!(!args_of(&workflow, "system-dag-driver").contains(&"--ca_cert_path"));
    assert!(
        template(&workflow, "system-dag-driver")
            .get("volumes")
            .is_none()
    );
    // From 2.16.0 the bundle is used whenever named, as `custom-ca` with one item.
    let workflow = compile(&spec(), None, &options(Release::V2_16_0, without_tls)).unwrap();
    assert_eq!(
        template(&workflow, "system-dag-driver")["volumes"][0],
        json!({"name": "custom-ca", "secret": {"secretName": "roots", "items": [{"key": "ca.crt", "path": "ca.crt"}]}})
    );
}

fn with_workspace(pvc_spec_patch: Value, extra: Value) -> Value {
    let mut config =
        json!({"workspace": {"size": "1Gi", "kubernetes": {"pvcSpecPatch": pvc_spec_patch}}});
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    json!({"platforms": {"kubernetes": {"pipelineConfig": config}}})
}

#[test]
fn workspace_checks_follow_the_release() {
    let modes_only = with_workspace(json!({"accessModes": ["ReadWriteOnce"]}), json!({}));
    let nothing = with_workspace(json!({}), json!({}));
    let compile_for =
        |release, platform: &Value| compile(&spec(), Some(platform), &options(release, json!({})));
    // 2.14.4 checks nothing.
    let workflow = compile_for(Release::V2_14_4, &nothing).unwrap();
    assert_eq!(
        workflow["spec"]["volumeClaimTemplates"],
        json!([{
            "metadata": {"name": "kfp-workspace", "creationTimestamp": null},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}},
            "status": {}
        }])
    );
    // 2.15.0 to 2.16.1 need accessModes and storageClassName.
    for release in [Release::V2_15_0, Release::V2_16_0, Release::V2_16_1] {
        let err = compile_for(release, &nothing).unwrap_err().to_string();
        assert!(err.contains("must specify accessModes"), "{release}: {err}");
        let err = compile_for(release, &modes_only).unwrap_err().to_string();
        assert!(
            err.contains("must specify storageClassName"),
            "{release}: {err}"
        );
    }
    // 2.17.0 lets the storage class out, and writes no creationTimestamp.
    let workflow = compile_for(Release::V2_17_0, &modes_only).unwrap();
    assert_eq!(
        workflow["spec"]["volumeClaimTemplates"][0]["metadata"],
        json!({"name": "kfp-workspace"})
    );
}

#[test]
fn pipeline_timeouts_are_2_17_0_and_the_pipeline_config_proto_follows_the_release() {
    let patch = json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "fast"});
    let timeouts = with_workspace(
        patch.clone(),
        json!({"resourceTtlOnCompletion": 60, "activeDeadlineSeconds": 600}),
    );
    let workflow = compile(
        &spec(),
        Some(&timeouts),
        &options(Release::V2_17_0, json!({})),
    )
    .unwrap();
    assert_eq!(
        workflow["spec"]["ttlStrategy"],
        json!({"secondsAfterCompletion": 60})
    );
    assert_eq!(workflow["spec"]["activeDeadlineSeconds"], json!(600));
    let err = compile(
        &spec(),
        Some(&timeouts),
        &options(Release::V2_16_1, json!({})),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("unknown field") && err.contains("PipelineConfig"),
        "{err}"
    );

    // 2.15.0 to 2.16.1 know `resourceTtl` (and do nothing with it); 2.17.0 does not.
    let old_ttl = with_workspace(patch.clone(), json!({"resourceTtl": 60}));
    let workflow = compile(
        &spec(),
        Some(&old_ttl),
        &options(Release::V2_16_1, json!({})),
    )
    .unwrap();
    assert!(workflow["spec"].get("ttlStrategy").is_none());
    assert!(
        compile(
            &spec(),
            Some(&old_ttl),
            &options(Release::V2_17_0, json!({}))
        )
        .is_err()
    );
    // 2.14.4's PipelineConfig had semaphoreKey and mutexName.
    let semaphore = with_workspace(patch, json!({"semaphoreKey": "k", "mutexName": "m"}));
    assert!(
        compile(
            &spec(),
            Some(&semaphore),
            &options(Release::V2_14_4, json!({}))
        )
        .is_ok()
    );
    assert!(
        compile(
            &spec(),
            Some(&semaphore),
            &options(Release::V2_15_0, json!({}))
        )
        .is_err()
    );
}

#[test]
fn proto_fields_a_release_does_not_declare_are_refused() {
    let platform = |config: Value| json!({"platforms": {"kubernetes": {"deploymentSpec": {"executors": {"exec-train": config}}}}});
    let security = platform(json!({"securityContext": {"runAsUser": "1000"}}));
    let err = compile(
        &spec(),
        Some(&security),
        &options(Release::V2_15_0, json!({})),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("securityContext"), "{err}");
    assert!(
        compile(
            &spec(),
            Some(&security),
            &options(Release::V2_16_0, json!({}))
        )
        .is_ok()
    );

    let optional = platform(json!({"secretAsEnv": [{"secretName": "s", "optional": true}]}));
    assert!(
        compile(
            &spec(),
            Some(&optional),
            &options(Release::V2_14_4, json!({}))
        )
        .is_err()
    );
    assert!(
        compile(
            &spec(),
            Some(&optional),
            &options(Release::V2_15_0, json!({}))
        )
        .is_ok()
    );

    let mut literals = spec();
    literals["root"]["inputDefinitions"] =
        json!({"parameters": {"x": {"parameterType": "STRING", "literals": ["a", "b"]}}});
    assert!(compile(&literals, None, &options(Release::V2_15_0, json!({}))).is_err());
    assert!(compile(&literals, None, &options(Release::V2_16_0, json!({}))).is_ok());

    let mut task_config = spec();
    task_config["root"]["inputDefinitions"] =
        json!({"parameters": {"x": {"parameterType": "TASK_CONFIG"}}});
    assert!(compile(&task_config, None, &options(Release::V2_14_4, json!({}))).is_err());
    assert!(compile(&task_config, None, &options(Release::V2_15_0, json!({}))).is_ok());
}

#[test]
fn the_default_no_proxy_follows_the_release() {
    let proxy = json!({"HTTP_PROXY": "http://proxy:3128"});
    let no_proxy = |release| options(release, proxy.clone()).proxy.no_proxy;
    assert_eq!(
        no_proxy(Release::V2_14_4),
        "localhost,127.0.0.1,.svc.cluster.local,kubernetes.default.svc,metadata-grpc-service,\
         0,1,2,3,4,5,6,7,8,9"
    );
    let expected = "localhost,127.0.0.1,.svc.cluster.local,kubernetes.default.svc,\
                    minio-service.kubeflow,metadata-grpc-service,metadata-grpc-service.kubeflow,\
                    ml-pipeline.kubeflow";
    assert_eq!(no_proxy(Release::V2_15_0), expected);
    assert_eq!(no_proxy(Release::V2_17_0), expected);
    let domain = json!({"HTTP_PROXY": "http://proxy:3128", "CLUSTER_DOMAIN": "corp.test"});
    assert!(
        options(Release::V2_16_0, domain)
            .proxy
            .no_proxy
            .contains(".svc.corp.test,")
    );
}

/// Options set directly (not parsed for the release) still compile as the release does.
#[test]
fn options_a_release_does_not_know_are_ignored_by_its_compile() {
    let mut direct = CompileOptions::from_settings_for(
        Release::V2_17_0,
        &json!({
            "COMPILED_PIPELINE_SPEC_PATCH": r#"{"podGC": {"strategy": "OnPodSuccess"}}"#,
            "DEFAULT_SECURITY_CONTEXT_RUN_AS_USER": "1001",
            "DEFAULT_SECURITY_CONTEXT_HOST_USERS": "false",
            "ML_PIPELINE_TLS_ENABLED": "true"
        }),
    )
    .unwrap();
    direct.release = Release::V2_14_4;
    let workflow = compile(&spec(), None, &direct).unwrap();
    assert!(workflow["spec"].get("podGC").is_none());
    assert!(workflow["spec"].get("securityContext").is_none());
    let driver = args_of(&workflow, "system-container-driver");
    for flag in [
        "--default_run_as_user",
        "--default_host_users",
        "--ml_pipeline_tls_enabled",
        "--pipeline_job_create_time_utc",
    ] {
        assert!(!driver.contains(&flag), "{flag}");
    }
    direct.release = Release::V2_16_1;
    let workflow = compile(&spec(), None, &direct).unwrap();
    let driver = args_of(&workflow, "system-container-driver");
    assert!(driver.contains(&"--default_run_as_user"));
    assert!(!driver.contains(&"--default_host_users"));
    assert_eq!(
        workflow["spec"]["podGC"],
        json!({"strategy": "OnPodSuccess"})
    );
}
