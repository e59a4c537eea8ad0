//! Every supported KFP release on the local control plane: SWFs as KFP 2.14.4 wrote them
//! follow the target through 2.15.0, 2.16.1, 2.17.0, 2.17.1 and back to 2.16.1, each step written once
//! and equal to that release's own compile of the same IR (`tests/data/upstream/kfp-<release>`,
//! KFP's compiler built from source at the tag); a target no release matches writes nothing;
//! and with `--settings-from` the render follows the API server's Deployment.

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use pipewarden::metrics::TargetLabels;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;
use serde_json::{Value, json};

/// The IRs every release's data set holds byte for byte (same file, same sha256).
const CASES: [&str; 4] = [
    "backend__test__v2__resources__env-var",
    "backend__test__v2__resources__hello-world",
    "backend__test__v2__resources__long-running",
    "frontend__mock-backend__data__v2__pipeline__pipeline_with_various_io_types",
];
/// `{}`: the target release's default install.
const DEFAULT_INSTALL: &str = "tests/data/settings/default-install.json";
/// What every release's compile names as the workflow's account.
const RUNNER: &str = "pipeline-runner";

fn data_set(release: &str) -> String {
    match release {
        "2.17.0" => "kfp-2.17.0-exact".into(),
        other => format!("kfp-{other}"),
    }
}

/// The release's own compile of `case` (install settings). 2.17.1 inherits 2.17.0's compiler
/// (the release ledger: its patch changes nothing a compile reads): its compile is 2.17.0's
/// with its own driver and launcher images, the one difference written here.
fn compiled(release: &str, case: &str) -> Result<Value> {
    if release == "2.17.1" {
        let text = compiled("2.17.0", case)?
            .to_string()
            .replace("kfp-driver:2.17.0\"", "kfp-driver:2.17.1\"")
            .replace("kfp-launcher:2.17.0\"", "kfp-launcher:2.17.1\"");
        return Ok(serde_json::from_str(&text)?);
    }
    let path = repo_path(&format!(
        "tests/data/upstream/{}/compiled/{case}.json",
        data_set(release)
    ));
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    Ok(serde_json::from_str(&text)?)
}

/// The workflow `release`'s API server embeds in an SWF for `compile`: the SWF's namespace,
/// the service account (from 2.17.0 on the recurring run's own, `job_account`, #13325; before,
/// the compile's), `sidecar.istio.io/inject: "false"` on each template without one.
fn wrapped(mut compile: Value, release: &str, namespace: &str, job_account: &str) -> Value {
    compile["metadata"]["namespace"] = json!(namespace);
    if release.starts_with("2.17.") {
        compile["spec"]["serviceAccountName"] = json!(job_account);
    }
    for template in compile["spec"]["templates"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let annotations = &mut template["metadata"]["annotations"];
        if annotations.get("sidecar.istio.io/inject").is_none() {
            annotations["sidecar.istio.io/inject"] = json!("false");
        }
    }
    compile
}

fn swf_name(case: &str) -> String {
    let tail = case.rsplit("__").next().unwrap_or(case);
    tail.replace('_', "-")
}

/// The SWFs KFP 2.14.4's API server wrote for the cases.
async fn seed_as_2_14_4_wrote(client: &kube::Client, namespace: &str) -> Result<()> {
    let api = swfs(client, namespace);
    for case in CASES {
        let workflow = wrapped(compiled("2.14.4", case)?, "2.14.4", namespace, RUNNER);
        let mut swf = fixture("kfp-2.17")?;
        swf.metadata.name = Some(swf_name(case));
        swf.metadata.namespace = Some(namespace.to_owned());
        swf.metadata.annotations = None;
        swf.data["spec"]["workflow"] = json!({"spec": workflow.to_string()});
        swf.data["spec"]["serviceAccount"] = json!(RUNNER);
        api.create(&PostParams::default(), &swf).await?;
    }
    Ok(())
}

fn controller(namespace: &str, target: &str) -> ControllerArgs {
    ControllerArgs::new(&[namespace.to_owned()])
        .policy(DEFAULT_POLICY, DEFAULT_INSTALL)
        .set("--rebuild-policy", "on-version-change")
        .set("--target-version", target)
}

#[tokio::test]
async fn swfs_kfp_2_14_4_wrote_follow_upgrades_and_a_downgrade_each_equal_to_that_releases_compile()
-> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed_as_2_14_4_wrote(&client, &namespace).await?;
    let mut table = Vec::new();
    for target in ["2.15.0", "2.16.1", "2.17.0", "2.17.1", "2.16.1"] {
        let running = controller(&namespace, target).start(control_plane).await?;
        running
            .wait_for_decisions("rebuild", CASES.len() as u64)
            .await?;
        running.wait_for_own_writes_seen(CASES.len() as u64).await?;
        let writes = running.writes("ok");
        running.stop().await;
        ensure!(
            writes == CASES.len() as u64,
            "{target}: {writes} writes for {} SWFs",
            CASES.len()
        );
        let mut equal = 0;
        for case in CASES {
            let swf = swfs(&client, &namespace).get(&swf_name(case)).await?;
            ensure!(
                stamped_version(&swf) == Some(target),
                "{case}: stamped {:?}, target {target}",
                stamped_version(&swf)
            );
            let account = swf.data["spec"]["serviceAccount"].as_str().unwrap_or("");
            let expected = wrapped(compiled(target, case)?, target, &namespace, account);
            // Compared exactly: no normalisation (none of these cases has Go's random orders).
            let got = embedded_workflow(&swf)?;
            ensure!(
                got == expected,
                "{case} for {target} differs from KFP {target}'s compile"
            );
            equal += 1;
        }
        table.push(format!(
            "{target:<8} rebuilt {writes}  equal to KFP {target}'s compile: {equal}/{}",
            CASES.len()
        ));
    }
    // Nothing left to do for the target in force: a restart writes nothing (on-version-change
    // finds the stamps current and skips).
    let running = controller(&namespace, "2.16.1")
        .start(control_plane)
        .await?;
    running
        .wait_for_decisions("skip", CASES.len() as u64)
        .await?;
    ensure!(running.writes_total() == 0 && running.requests.swf_writes().is_empty());
    running.stop().await;
    table.push(format!("restart  up to date {}, writes 0", CASES.len()));
    pipewarden_tests::log(format_args!("{}", table.join("\n")));
    Ok(())
}

#[tokio::test]
async fn a_target_no_release_matches_writes_nothing_and_says_so_once() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let seeded = seed(&client, &namespace, "kfp-2.3", "old", 3).await?;
    let before = resource_versions(&client, std::slice::from_ref(&namespace)).await?;
    let running = controller(&namespace, "2.18.0")
        .set("--rebuild-policy", "always")
        .set("--identity", "pipewarden-0")
        .set("--lease-namespace", &namespace)
        .start(control_plane)
        .await?;
    running.wait_ready().await?;
    running
        .wait_for_decisions("unsupported-target", seeded.len() as u64)
        .await?;
    ensure!(running.requests.swf_writes().is_empty() && running.writes_total() == 0);
    let shown = running.handle.metrics().target();
    ensure!(
        shown
            == TargetLabels {
                version: "2.18.0".into(),
                supported: "false".into(),
                proof: "none".into(),
                owner: "pipewarden".into(),
                reason: "target-not-served".into(),
            },
        "pipewarden_target_info: {shown:?}"
    );
    // One report for the loop, on the controller's pod; none per SWF.
    let note = event_note(&client, &namespace, "pipewarden-0", "SwfLoopHeld").await?;
    ensure!(
        note.contains("2.18.0") && note.contains("no output of KFP 2.18"),
        "{note}"
    );
    for swf in &seeded {
        let events = events_about(&client, &namespace, &swf.name_any()).await?;
        ensure!(events.is_empty(), "{}: {events:?}", swf.name_any());
    }
    let pod_events = events_about(&client, &namespace, "pipewarden-0").await?;
    ensure!(pod_events.len() == 1, "{pod_events:?}");
    ensure!(running.handle.ctx.readiness.waiting().is_empty(), "ready");
    ensure!(
        running.handle.ctx.readiness.degraded()
            == ["swf: writes nothing: target-not-served (see the log and Events)"],
        "{:?}",
        running.handle.ctx.readiness.degraded()
    );
    running.stop().await;
    ensure!(resource_versions(&client, std::slice::from_ref(&namespace)).await? == before);
    Ok(())
}

/// The API server's Deployment as KFP 2.16.1's manifests write it, trimmed to what matters:
/// literal values, a ConfigMap key, the namespace by fieldRef and a Secret (never read).
fn api_server_deployment(namespace: &str) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ml-pipeline", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": "ml-pipeline"}},
            "template": {
                "metadata": {"labels": {"app": "ml-pipeline"}},
                "spec": {"containers": [{
                    "name": "ml-pipeline-api-server",
                    "image": "ghcr.io/kubeflow/kfp-api-server:2.16.1",
                    "env": [
                        {"name": "PUBLISH_LOGS", "value": "true"},
                        {"name": "PIPELINE_LOG_LEVEL", "valueFrom": {"configMapKeyRef":
                            {"name": "pipeline-install-config", "key": "pipelineLogLevel"}}},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef":
                            {"fieldPath": "metadata.namespace"}}},
                        {"name": "CLUSTER_DOMAIN", "value": "cluster.local"},
                        {"name": "DBCONFIG_PASSWORD", "valueFrom": {"secretKeyRef":
                            {"name": "mysql-secret", "key": "password"}}},
                        {"name": "V2_DRIVER_IMAGE", "value": "ghcr.io/kubeflow/kfp-driver:2.16.1"},
                        {"name": "V2_LAUNCHER_IMAGE", "value": "ghcr.io/kubeflow/kfp-launcher:2.16.1"},
                    ]
                }]}
            }
        }
    }))?)
}

fn install_config(namespace: &str, log_level: &str) -> Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pipeline-install-config", "namespace": namespace},
        "data": {"pipelineLogLevel": log_level, "mysqlHost": "mysql"}
    }))?)
}

/// The `--log_level` values the drivers of `swf` get.
fn driver_log_levels(swf: &DynamicObject) -> Result<Vec<String>> {
    let workflow = embedded_workflow(swf)?;
    let mut levels = Vec::new();
    for template in workflow["spec"]["templates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let container = &template["container"];
        if container["command"] != json!(["driver"]) {
            continue;
        }
        let args: Vec<&str> = container["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(at) = args.iter().position(|arg| *arg == "--log_level") {
            levels.push(args.get(at + 1).unwrap_or(&"").to_string());
        }
    }
    Ok(levels)
}

#[tokio::test]
async fn with_settings_from_the_render_follows_the_api_servers_deployment() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    config_maps
        .create(&PostParams::default(), &install_config(&namespace, "1")?)
        .await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    deployments
        .create(&PostParams::default(), &api_server_deployment(&namespace)?)
        .await?;
    seed(&client, &namespace, "kfp-2.3", "live", 2).await?;
    let running = controller(&namespace, "2.16.1")
        .unset("--settings")
        .set(
            "--settings-from",
            &format!("deployment/{namespace}/ml-pipeline"),
        )
        .set("--policy-reload-seconds", "1")
        .start(control_plane)
        .await?;
    running.wait_for_decisions("rebuild", 2).await?;
    let first = wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "2.16.1 drivers",
        |swf| {
            driver_images(swf)
                .map(|images| {
                    images
                        .iter()
                        .all(|i| i == "ghcr.io/kubeflow/kfp-driver:2.16.1")
                })
                .unwrap_or(false)
        },
    )
    .await?;
    for swf in &first {
        ensure!(
            driver_log_levels(swf)?.iter().all(|l| l == "1"),
            "{}: {:?}",
            swf.name_any(),
            driver_log_levels(swf)?
        );
        let workflow = embedded_workflow(swf)?.to_string();
        ensure!(
            !workflow.contains("pipeline_job_create_time_utc"),
            "a 2.17.0-only flag"
        );
    }
    // The operator turns the drivers' log level up in the install config: re-rendered.
    let patch = json!({"data": {"pipelineLogLevel": "3"}});
    config_maps
        .patch(
            "pipeline-install-config",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    running.wait_for_decisions("rebuild", 4).await?;
    wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "drivers at log level 3",
        |swf| {
            driver_log_levels(swf)
                .map(|levels| !levels.is_empty() && levels.iter().all(|l| l == "3"))
                .unwrap_or(false)
        },
    )
    .await?;
    ensure!(running.writes("ok") == 4, "{} writes", running.writes("ok"));
    running.stop().await;
    Ok(())
}
