//! The manifests as a user installs them beside KFP: the kubeflow overlay, rendered with the
//! built default policy, passes a server-side dry-run apply; its Deployment is locked down and
//! probed; its ConfigMap carries the policy with a pin that matches the bytes.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use pipewarden::engine::{Policy, PolicyOptions};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

fn rendered_kubeflow() -> Result<Vec<DynamicObject>> {
    documents(&render_overlay("kubeflow", &built_policy("kfp-default"))?)
}

fn typed<T: serde::de::DeserializeOwned>(object: &DynamicObject) -> Result<T> {
    Ok(serde_json::from_value(serde_json::to_value(object)?)?)
}

#[tokio::test]
async fn the_kubeflow_overlay_passes_a_server_side_dry_run_apply() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let objects = rendered_kubeflow()?;
    let kinds: BTreeSet<&str> = objects.iter().map(kind_of).collect();
    let expected = [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ];
    ensure!(kinds == BTreeSet::from(expected), "kinds: {kinds:?}");
    for object in &objects {
        let cluster_wide = kind_of(object).starts_with("Cluster");
        ensure!(
            cluster_wide || object.namespace().as_deref() == Some("kubeflow"),
            "{} {} outside kubeflow",
            kind_of(object),
            object.name_any()
        );
    }

    ensure_namespace(&client, "kubeflow").await?;
    let applied = apply(&client, &objects, true).await?;
    ensure!(applied.len() == objects.len());
    for (sent, answer) in objects.iter().zip(&applied) {
        ensure!(
            answer.name_any() == sent.name_any() && answer.uid().is_some(),
            "{} {}: {answer:?}",
            kind_of(sent),
            sent.name_any()
        );
    }
    // A dry run persists nothing.
    let deployments: kube::Api<Deployment> = kube::Api::namespaced(client, "kubeflow");
    ensure!(deployments.get_opt("pipewarden").await?.is_none());
    println!("dry-run applied {} objects", applied.len());
    Ok(())
}

#[test]
fn the_rendered_deployment_runs_locked_down_with_probes_and_limits() -> Result<()> {
    let objects = rendered_kubeflow()?;
    let deployment: Deployment = typed(one_of(&objects, "Deployment")?)?;
    let pod = deployment
        .spec
        .context("spec")?
        .template
        .spec
        .context("pod spec")?;
    let pod_security = pod.security_context.context("pod securityContext")?;
    ensure!(pod_security.run_as_non_root == Some(true), "runAsNonRoot");
    ensure!(
        pod_security.run_as_user.is_some_and(|uid| uid != 0),
        "runAsUser"
    );
    ensure!(pod.service_account_name.as_deref() == Some("pipewarden"));
    let [container] = pod.containers.as_slice() else {
        anyhow::bail!("one container expected");
    };
    let security = container
        .security_context
        .clone()
        .context("securityContext")?;
    ensure!(
        security.read_only_root_filesystem == Some(true),
        "read-only root"
    );
    ensure!(
        security.allow_privilege_escalation == Some(false),
        "escalation"
    );
    ensure!(security.privileged != Some(true), "privileged");
    let dropped = security
        .capabilities
        .and_then(|c| c.drop)
        .unwrap_or_default();
    ensure!(dropped == ["ALL"], "capabilities dropped: {dropped:?}");

    let resources = container.resources.clone().context("resources")?;
    let requests = resources.requests.unwrap_or_default();
    let limits = resources.limits.unwrap_or_default();
    ensure!(
        requests.contains_key("cpu") && requests.contains_key("memory"),
        "{requests:?}"
    );
    ensure!(limits.contains_key("memory"), "{limits:?}");

    let probe_path = |probe: Option<&k8s_openapi::api::core::v1::Probe>| {
        probe
            .and_then(|p| p.http_get.as_ref())
            .and_then(|h| h.path.clone())
    };
    ensure!(probe_path(container.liveness_probe.as_ref()).as_deref() == Some("/healthz"));
    ensure!(probe_path(container.readiness_probe.as_ref()).as_deref() == Some("/readyz"));

    let env: Vec<(String, Option<String>)> = container
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    let value = |name: &str| {
        env.iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.clone())
    };
    let policy = value("ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY").context("rebuild policy")?;
    ensure!(
        pipewarden::swf::parse_rebuild_policy(&policy).is_ok(),
        "{policy}"
    );
    ensure!(value("PIPEWARDEN_LEADER_ELECT").as_deref() == Some("true"));
    ensure!(
        value("PIPEWARDEN_KFP_API_URL").is_some_and(|url| url.contains(".kubeflow.")),
        "the overlay points at KFP's apiserver"
    );
    Ok(())
}

#[test]
fn the_rendered_deployment_pins_the_policy_the_configmap_carries() -> Result<()> {
    let objects = rendered_kubeflow()?;
    let mut object = one_of(&objects, "ConfigMap")?.clone();
    // kustomize folds base64 into lines, which the API server's decoder skips and serde's does not.
    for value in object.data["binaryData"]
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        let folded = value.as_str().unwrap_or_default();
        *value = folded.split_whitespace().collect::<String>().into();
    }
    let config_map: ConfigMap = typed(&object)?;
    let wasm = config_map
        .binary_data
        .as_ref()
        .and_then(|d| d.get("policy.wasm"))
        .context("binaryData policy.wasm")?;
    let data = config_map.data.clone().unwrap_or_default();
    let deployment = one_of(&objects, "Deployment")?;
    let pin = deployment.data["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|var| var["name"] == "PIPEWARDEN_POLICY_SHA256")
        .and_then(|var| var["value"].as_str())
        .context("the Deployment's PIPEWARDEN_POLICY_SHA256")?;
    ensure!(
        pin == sha256_pin(&wasm.0)?,
        "pin {pin} is not the bytes' sha256"
    );
    ensure!(
        wasm.0 == std::fs::read(built_policy("kfp-default"))?,
        "not the built policy"
    );

    // The controller's own check: it loads these bytes under this pin and takes the settings.
    let options = PolicyOptions {
        pinned_sha256: Some(pin.to_owned()),
        ..PolicyOptions::default()
    };
    let policy = Policy::from_bytes(&wasm.0, "policy.wasm", options)?;
    let settings = data.get("settings.json").context("data settings.json")?;
    policy.validate_settings(settings)?;
    println!(
        "ConfigMap policy {} ({} bytes)",
        policy.digest(),
        wasm.0.len()
    );
    Ok(())
}
