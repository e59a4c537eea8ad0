//! Installs the SWF loop cannot serve, or must not write, on the local control plane, with the
//! controller run as both shipped installs run it (`--settings-from deployment/NS/ml-pipeline`):
//! a KFP release it cannot compile for holds the loop's writes while the process stays up and
//! its exit gate delivers, and it picks the install up again when the target and the API
//! server change; KFP 2.17.1, the reproduction, is rebuilt; on a 2.18.1 multi-user
//! install KFP's API server owns every schedule (nothing written, inline SWFs reported not
//! adopted, `plan` says the same); 2.18.1 single-user is not served; and the environment in
//! force is the running pods', not a template not rolled out yet.

use anyhow::{Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use pipewarden::metrics::TargetLabels;
use pipewarden_tests::deploy_support::{http_get, pipewarden_binary};
use pipewarden_tests::exit_support::{Receiver, set_phase, submit, timestamp, workflows};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;
use serde_json::{Value, json};

/// The controller's pod name, as `POD_NAME` gives it in the shipped Deployment.
const POD: &str = "pipewarden-0";
/// The ConfigMap KFP's multi-user manifests generate (`pipeline-api-server-config`, hashed).
const MULTI_USER_CONFIG: &str = "pipeline-api-server-config-7b9f4k2m8d";

/// KFP's API server Deployment with `release`'s images; with `multi_user`, the multi-user
/// manifests' `envFrom` ConfigMap holding `MULTIUSER`.
fn api_server(namespace: &str, release: &str, multi_user: Option<&str>) -> Result<Deployment> {
    let mut deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ml-pipeline", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": "ml-pipeline"}},
            "template": {
                "metadata": {"labels": {"app": "ml-pipeline"}},
                "spec": {"containers": [{
                    "name": "ml-pipeline-api-server",
                    "image": format!("ghcr.io/kubeflow/kfp-api-server:{release}"),
                    "env": [
                        {"name": "PIPELINE_LOG_LEVEL", "value": "1"},
                        {"name": "PUBLISH_LOGS", "value": "true"},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef":
                            {"fieldPath": "metadata.namespace"}}},
                        {"name": "DBCONFIG_PASSWORD", "valueFrom": {"secretKeyRef":
                            {"name": "mysql-secret", "key": "password"}}},
                        {"name": "V2_DRIVER_IMAGE", "value": format!("ghcr.io/kubeflow/kfp-driver:{release}")},
                        {"name": "V2_LAUNCHER_IMAGE", "value": format!("ghcr.io/kubeflow/kfp-launcher:{release}")},
                    ]
                }]}
            }
        }
    });
    if multi_user.is_some() {
        deployment["spec"]["template"]["spec"]["containers"][0]["envFrom"] =
            json!([{"configMapRef": {"name": MULTI_USER_CONFIG}}]);
    }
    Ok(serde_json::from_value(deployment)?)
}

async fn install(
    client: &kube::Client,
    namespace: &str,
    release: &str,
    multi_user: Option<&str>,
) -> Result<()> {
    if let Some(value) = multi_user {
        let config: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": MULTI_USER_CONFIG, "namespace": namespace},
            "data": {"MULTIUSER": value, "DEFAULTPIPELINERUNNERSERVICEACCOUNT": "default-editor"}
        }))?;
        Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &config)
            .await?;
    }
    Api::<Deployment>::namespaced(client.clone(), namespace)
        .create(
            &PostParams::default(),
            &api_server(namespace, release, multi_user)?,
        )
        .await?;
    Ok(())
}

/// The controller as the shipped installs run it, its pod [`POD`] in `namespace`.
fn shipped(namespace: &str) -> ControllerArgs {
    ControllerArgs::new(&[namespace.to_owned()])
        .unset("--settings")
        .set(
            "--settings-from",
            &format!("deployment/{namespace}/ml-pipeline"),
        )
        .set("--policy-reload-seconds", "1")
        .set("--identity", POD)
        .set("--lease-namespace", namespace)
}

/// An SWF as KFP 2.18 writes one in multi-user mode: no embedded workflow.
async fn seed_generic(client: &kube::Client, namespace: &str) -> Result<()> {
    let mut swf = fixture("kfp-2.3")?;
    swf.metadata.name = Some("generic-0".into());
    swf.metadata.namespace = Some(namespace.to_owned());
    if let Some(workflow) = swf.data["spec"]["workflow"].as_object_mut() {
        workflow.remove("spec");
    }
    swfs(client, namespace)
        .create(&PostParams::default(), &swf)
        .await?;
    Ok(())
}

/// `(reason, note)` of the Events about the controller's pod.
async fn pod_events(client: &kube::Client, namespace: &str) -> Result<Vec<(String, String)>> {
    events_about(client, namespace, POD).await
}

#[tokio::test]
async fn a_release_it_cannot_serve_holds_the_swf_loop_while_the_exit_gate_delivers_and_is_left_when_the_install_changes()
-> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    install(&client, &namespace, "3.0.0", None).await?;
    seed(&client, &namespace, "kfp-2.3", "daily", 2).await?;
    let before = resource_versions(&client, std::slice::from_ref(&namespace)).await?;
    let kfp = KfpApi::serve("3.0.0").await?;
    kfp.set_multi_user(false);
    let receiver = Receiver::start().await?;
    let running = shipped(&namespace)
        .unset("--target-version")
        .set("--kfp-api-url", &kfp.url)
        .set("--kfp-api-poll", "1s")
        .set("--exit-webhook-url", &receiver.url)
        .start(control_plane)
        .await?;
    running.wait_ready().await?;
    running.wait_for_decisions("unsupported-target", 2).await?;
    let note = event_note(&client, &namespace, POD, "SwfLoopHeld").await?;
    ensure!(
        note.contains("Target 3.0.0") && note.contains("not a release"),
        "{note}"
    );
    let shown = running.handle.metrics().target();
    ensure!(
        (shown.supported.as_str(), shown.reason.as_str()) == ("false", "target-not-served"),
        "{shown:?}"
    );
    let (status, body) = http_get(running.handle.http_addr, "/readyz").await?;
    ensure!(
        status == 200 && body.contains("degraded: swf: writes nothing: target-not-served"),
        "/readyz {status}: {body}"
    );

    // The exit gate delivers all the same.
    let api = workflows(&client, &namespace);
    let started = set_phase(&api, &submit(&api, "nightly").await?, "Running", None).await?;
    set_phase(&api, &started, "Succeeded", Some(&timestamp(0))).await?;
    pipewarden_tests::wait::until("the completion delivered", WAIT, || async {
        Ok((receiver.accepted().len() == 1).then_some(()))
    })
    .await?;
    ensure!(
        running.writes_total() == 0,
        "writes: {}",
        running.writes_total()
    );
    ensure!(resource_versions(&client, std::slice::from_ref(&namespace)).await? == before);
    ensure!(pod_events(&client, &namespace).await?.len() == 1);

    // KFP upgraded to a release it serves: the API server's Deployment and its version move.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let upgraded = serde_json::to_value(api_server(&namespace, "2.17.1", None)?)?;
    deployments
        .patch(
            "ml-pipeline",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": upgraded["spec"]})),
        )
        .await?;
    kfp.set_tag("2.17.1");
    running.wait_for_decisions("rebuild", 2).await?;
    let rebuilt = wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "SWFs rebuilt for 2.17.1",
        |swf| stamped_version(swf) == Some("2.17.1"),
    )
    .await?;
    for swf in &rebuilt {
        let images = driver_images(swf)?;
        ensure!(
            images
                .iter()
                .all(|i| i == "ghcr.io/kubeflow/kfp-driver:2.17.1"),
            "{images:?}"
        );
    }
    let note = event_note(&client, &namespace, POD, "SwfLoopWrites").await?;
    ensure!(
        note.contains("KFP 2.17.0's compiler") && note.contains("#14178"),
        "{note}"
    );
    ensure!(
        running.handle.metrics().target()
            == TargetLabels {
                version: "2.17.1".into(),
                supported: "true".into(),
                proof: "same-compiler".into(),
                owner: "pipewarden".into(),
                reason: "none".into(),
            }
    );
    ensure!(running.handle.ctx.readiness.degraded().is_empty());
    running.stop().await;
    Ok(())
}

/// On a 2.18.1 multi-user install nothing is written to any SWF (generic, inline, corrupted),
/// the loop says so once on the controller's pod, each inline SWF gets one NotAdopted Event,
/// and `plan` shows the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_2_18_multi_user_install_kfps_api_owns_every_schedule() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    install(&client, &namespace, "2.18.1", Some("true")).await?;
    seed_generic(&client, &namespace).await?;
    seed(&client, &namespace, "kfp-2.3", "inline", 2).await?;
    seed(&client, &namespace, "kfp-2.3-corrupted", "corrupted", 1).await?;
    let before = resource_versions(&client, std::slice::from_ref(&namespace)).await?;
    let running = shipped(&namespace)
        .set("--target-version", "2.18.1")
        .start(control_plane)
        .await?;
    running.wait_ready().await?;
    running.wait_for_decisions("not-adopted", 3).await?;
    running.wait_for_decisions("upstream-owned", 1).await?;
    for name in ["inline-0", "inline-1", "corrupted-0"] {
        let note = event_note(&client, &namespace, name, "NotAdopted").await?;
        ensure!(note.contains("adoption step"), "{note}");
    }
    ensure!(
        events_about(&client, &namespace, "generic-0")
            .await?
            .is_empty()
    );
    let note = event_note(&client, &namespace, POD, "SchedulesOwnedByKfpApi").await?;
    ensure!(
        note.contains("MULTIUSER=true") && note.contains(MULTI_USER_CONFIG),
        "{note}"
    );
    ensure!(pod_events(&client, &namespace).await?.len() == 1);
    ensure!(running.handle.metrics().target().owner == "kfp-api");
    ensure!(running.requests.swf_writes().is_empty() && running.writes_total() == 0);
    running.stop().await;
    ensure!(resource_versions(&client, std::slice::from_ref(&namespace)).await? == before);

    // `plan`, read-only, says the same.
    let output = std::process::Command::new(pipewarden_binary()?)
        .args(["plan", "-o", "json"])
        .env_clear()
        .env("KUBECONFIG", control_plane.kubeconfig())
        .env("PIPEWARDEN_NAMESPACES", &namespace)
        .env("PIPEWARDEN_POLICY", built_policy(DEFAULT_POLICY))
        .env(
            "PIPEWARDEN_SETTINGS_FROM",
            format!("deployment/{namespace}/ml-pipeline"),
        )
        .env("PIPEWARDEN_TARGET_VERSION", "2.18.1")
        .output()?;
    ensure!(
        output.status.success(),
        "plan: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout)?;
    ensure!(
        report["mode"] == "multi-user" && report["swf_owner"] == "kfp-api",
        "{report}"
    );
    let rows: Vec<(String, String)> = report["swfs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let name = row["swf"].as_str().unwrap_or_default();
            let name = name.rsplit('/').next().unwrap_or_default().to_owned();
            (name, row["plan"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    ensure!(
        rows == [
            ("corrupted-0".to_owned(), "not adopted".to_owned()),
            ("generic-0".into(), "upstream owned".into()),
            ("inline-0".into(), "not adopted".into()),
            ("inline-1".into(), "not adopted".into()),
        ],
        "{rows:?}"
    );
    Ok(())
}

#[tokio::test]
async fn on_a_2_18_single_user_install_every_swf_is_an_unsupported_target() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    install(&client, &namespace, "2.18.1", Some("false")).await?;
    seed(&client, &namespace, "kfp-2.3", "inline", 2).await?;
    let before = resource_versions(&client, std::slice::from_ref(&namespace)).await?;
    let running = shipped(&namespace)
        .set("--target-version", "2.18.1")
        .start(control_plane)
        .await?;
    running.wait_for_decisions("unsupported-target", 2).await?;
    let note = event_note(&client, &namespace, POD, "SwfLoopHeld").await?;
    ensure!(
        note.contains("no output of KFP 2.18's own compiler"),
        "{note}"
    );
    ensure!(running.handle.metrics().target().owner == "pipewarden");
    ensure!(running.writes_total() == 0);
    running.stop().await;
    ensure!(resource_versions(&client, std::slice::from_ref(&namespace)).await? == before);
    Ok(())
}

/// A pod of `release`'s template, running (the control plane has no kubelet: its status is
/// written as one would).
async fn running_pod(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    hash: &str,
    release: &str,
) -> Result<()> {
    let deployment = serde_json::to_value(api_server(namespace, release, None)?)?;
    let mut spec = deployment["spec"]["template"]["spec"].clone();
    spec["containers"][0]["env"]
        .as_array_mut()
        .expect("env")
        .retain(|var| var["valueFrom"]["secretKeyRef"].is_null());
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace,
                      "labels": {"app": "ml-pipeline", "pod-template-hash": hash}},
        "spec": spec,
    }))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    pods.create(&PostParams::default(), &pod).await?;
    let status = json!({"status": {"phase": "Running", "startTime": "2026-12-01T10:00:00Z"}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// A Deployment edited to 2.17.1 whose rollout has not started: its running pod is 2.17.0's,
/// and so is the environment renders follow (the KFP API still reports 2.17.0).
#[tokio::test]
async fn the_environment_in_force_is_the_running_pods_not_a_template_not_rolled_out() -> Result<()>
{
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    install(&client, &namespace, "2.17.1", None).await?;
    running_pod(&client, &namespace, "ml-pipeline-6c9d-x2", "6c9d", "2.17.0").await?;
    seed(&client, &namespace, "kfp-2.3", "daily", 1).await?;
    let running = shipped(&namespace)
        .set("--target-version", "2.17.0")
        .start(control_plane)
        .await?;
    running.wait_for_decisions("rebuild", 1).await?;
    let rebuilt = wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "the SWF rebuilt for 2.17.0",
        |swf| stamped_version(swf) == Some("2.17.0"),
    )
    .await?;
    let images = driver_images(&rebuilt[0])?;
    ensure!(
        images
            .iter()
            .all(|i| i == "ghcr.io/kubeflow/kfp-driver:2.17.0"),
        "{images:?}"
    );
    // The rollout under way: a second pod of the new template runs beside the old one.
    running_pod(&client, &namespace, "ml-pipeline-8f2a-k7", "8f2a", "2.17.1").await?;
    let note = event_note(&client, &namespace, POD, "SwfLoopHeld").await?;
    ensure!(
        note.contains("rollout") && note.contains("ml-pipeline"),
        "{note}"
    );
    ensure!(running.handle.metrics().target().reason == "settings-uncertain");
    running.stop().await;
    Ok(())
}

/// An API server install that cannot be read (its Deployment not there yet, RBAC refusing it)
/// no longer stops the start: the loop holds its writes, says why once, and writes as soon as
/// the install reads again.
#[tokio::test]
async fn an_install_that_cannot_be_read_holds_the_loop_until_it_can() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed(&client, &namespace, "kfp-2.3", "daily", 1).await?;
    let running = shipped(&namespace)
        .set("--target-version", "2.17.1")
        .start(control_plane)
        .await?;
    running.wait_for_decisions("unsupported-target", 1).await?;
    let note = event_note(&client, &namespace, POD, "SwfLoopHeld").await?;
    ensure!(
        note.contains("cannot be read") && note.contains("ml-pipeline"),
        "{note}"
    );
    ensure!(running.handle.metrics().target().reason == "settings-unreadable");
    ensure!(running.writes_total() == 0);
    install(&client, &namespace, "2.17.1", None).await?;
    running.wait_for_decisions("rebuild", 1).await?;
    wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "the SWF rebuilt for 2.17.1",
        |swf| stamped_version(swf) == Some("2.17.1"),
    )
    .await?;
    event_note(&client, &namespace, POD, "SwfLoopWrites").await?;
    running.stop().await;
    Ok(())
}
