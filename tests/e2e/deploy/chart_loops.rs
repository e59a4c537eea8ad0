//! The chart's loop switches, rendered. `swfLoop.enabled=false` renders what the kustomize
//! `argo` overlay renders (whole objects, after the chart comparison's normalisations) and,
//! whatever `settings` and `kfp` say, nothing that reads or lands in a `kubeflow` namespace.
//! `exitGate.enabled=false` is the mirror image (no Workflow rule, webhook, mark key or
//! ServiceEntry), dry-run applied; both off is refused. The install without a `kubeflow`
//! namespace: chart_argo_install.rs.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result, ensure};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

const BOTH_OFF: &str = "swfLoop.enabled and exitGate.enabled are both false";

pub(crate) fn chart() -> Result<Chart> {
    Chart::with_policy(Some(&built_policy("kfp-default")))
}

/// `helm template pipewarden <chart> -n <namespace> --skip-tests --set ...`.
pub(crate) fn template_in(
    chart: &Chart,
    namespace: &str,
    sets: &[&str],
) -> Result<Vec<DynamicObject>> {
    let args = ["template", "pipewarden", "-n", namespace, "--skip-tests"];
    documents(&chart.run(&args, sets)?)
}

fn env_of(deployment: &DynamicObject) -> Vec<serde_json::Value> {
    let env = &deployment.data["spec"]["template"]["spec"]["containers"][0]["env"];
    env.as_array().cloned().unwrap_or_default()
}

pub(crate) fn env_value(deployment: &DynamicObject, name: &str) -> Option<String> {
    env_of(deployment)
        .iter()
        .find(|var| var["name"] == name)
        .and_then(|var| var["value"].as_str().map(str::to_owned))
}

fn volume_names(deployment: &DynamicObject) -> BTreeSet<String> {
    let volumes = &deployment.data["spec"]["template"]["spec"]["volumes"];
    let volumes = volumes.as_array().into_iter().flatten();
    volumes
        .filter_map(|v| v["name"].as_str().map(str::to_owned))
        .collect()
}

/// The resources the ClusterRole grants.
fn cluster_resources(objects: &[DynamicObject]) -> Result<BTreeSet<String>> {
    let role = one_of(objects, "ClusterRole")?;
    let rules = role.data["rules"].as_array().context("rules")?;
    Ok(rules
        .iter()
        .flat_map(|rule| rule["resources"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.as_str().map(str::to_owned))
        .collect())
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Every namespaced object in `namespace`; no env value names Kubeflow's namespace or API.
pub(crate) fn check_without_kubeflow(objects: &[DynamicObject], namespace: &str) -> Result<()> {
    for object in objects {
        let at = object.namespace();
        ensure!(
            at.as_deref().is_none_or(|ns| ns == namespace),
            "{} {} in {at:?}",
            kind_of(object),
            object.name_any()
        );
    }
    let deployment = one_of(objects, "Deployment")?;
    let env = serde_json::to_string(&env_of(deployment))?;
    ensure!(!env.contains("kubeflow"), "the env names kubeflow: {env}");
    Ok(())
}

#[test]
fn without_the_swf_loop_the_chart_renders_the_argo_overlay_and_nothing_for_kubeflow() -> Result<()>
{
    let chart = chart()?;
    let argo = documents(&render_overlay("argo", &built_policy("kfp-default"))?)?;
    let helm = template_in(&chart, "argo", &["swfLoop.enabled=false"])?;
    let (left, right) = (normalised(&argo)?, normalised(&helm)?);
    let found = differences(&left, &right);
    ensure!(
        found.is_empty(),
        "chart swfLoop.enabled=false vs kustomize argo:\n{}",
        found.join("\n")
    );
    println!(
        "swfLoop.enabled=false in argo: {} objects equal to kustomize argo",
        left.len()
    );
    // Values that each put something in or about `kubeflow` while the SWF loop is on.
    let kubeflow_values = [
        "settings.from=deployment/kubeflow/ml-pipeline",
        "settings.configMaps[0]=pipeline-install-config",
        "kfp.apiUrl=https://ml-pipeline.kubeflow.svc.cluster.local:8888",
        "kfp.caSecret.name=kfp-api-tls",
    ];
    let on = template_in(&chart, "argo", &kubeflow_values)?;
    ensure!(
        check_without_kubeflow(&on, "argo").is_err(),
        "the values put nothing in kubeflow even with the SWF loop on"
    );
    let mut sets = vec!["swfLoop.enabled=false"];
    sets.extend(kubeflow_values);
    let off = template_in(&chart, "argo", &sets)?;
    check_without_kubeflow(&off, "argo")?;
    let deployment = one_of(&off, "Deployment")?;
    ensure!(env_value(deployment, "PIPEWARDEN_SWF_LOOP").as_deref() == Some("false"));
    ensure!(env_value(deployment, "PIPEWARDEN_EXIT_GATE").is_none());
    for var in [
        "PIPEWARDEN_SETTINGS_FROM",
        "PIPEWARDEN_KFP_API_URL",
        "PIPEWARDEN_KFP_API_CA_FILE",
    ] {
        ensure!(env_value(deployment, var).is_none(), "{var} is set");
    }
    ensure!(!volume_names(deployment).contains("kfp-ca"));
    ensure!(
        off.iter()
            .all(|o| kind_of(o) != "Role" || o.name_any().ends_with("leader-election")),
        "a Role beside leader election"
    );
    let granted = cluster_resources(&off)?;
    ensure!(
        granted == set(&["workflows", "events", "reports"]),
        "{granted:?}"
    );
    Ok(())
}

#[tokio::test]
async fn without_the_exit_gate_the_chart_drops_its_rule_webhook_mark_key_and_service_entry()
-> Result<()> {
    let chart = chart()?;
    let exit_values = [
        "exitWebhook.url=https://hooks.example.com:8443/pipewarden",
        "exitWebhook.tokenSecret.name=hook-token",
        "exitWebhook.signingKeySecret.name=hook-signing-key",
        "exitMarkKey.secretName=pipewarden-mark-key",
        "istio.enabled=true",
    ];
    let exit_env = [
        "PIPEWARDEN_EXIT_WEBHOOK_URL",
        "PIPEWARDEN_EXIT_WEBHOOK_TOKEN_FILE",
        "PIPEWARDEN_EXIT_WEBHOOK_SIGNING_KEY_FILE",
        "PIPEWARDEN_EXIT_MARK_KEY_FILE",
    ];
    let exit_volumes = ["webhook-token", "webhook-signing-key", "mark-key"];
    // With the gate on, the same values render each of them.
    let on = chart.template(&exit_values)?;
    let deployment = one_of(&on, "Deployment")?;
    ensure!(exit_env.iter().all(|v| env_value(deployment, v).is_some()));
    ensure!(
        exit_volumes
            .iter()
            .all(|v| volume_names(deployment).contains(*v))
    );
    one_of(&on, "ServiceEntry")?;

    let mut sets = vec!["exitGate.enabled=false"];
    sets.extend(exit_values);
    let off = chart.template(&sets)?;
    let deployment = one_of(&off, "Deployment")?;
    ensure!(env_value(deployment, "PIPEWARDEN_EXIT_GATE").as_deref() == Some("false"));
    ensure!(env_value(deployment, "PIPEWARDEN_SWF_LOOP").is_none());
    for var in exit_env {
        ensure!(env_value(deployment, var).is_none(), "{var} is set");
    }
    let volumes = volume_names(deployment);
    ensure!(
        exit_volumes.iter().all(|v| !volumes.contains(*v)),
        "{volumes:?}"
    );
    ensure!(off.iter().all(|o| kind_of(o) != "ServiceEntry"));
    let granted = cluster_resources(&off)?;
    ensure!(
        granted == set(&["scheduledworkflows", "events", "reports"]),
        "{granted:?}"
    );
    // The SWF loop keeps its settings source.
    ensure!(
        env_value(deployment, "PIPEWARDEN_SETTINGS_FROM").as_deref()
            == Some("deployment/kubeflow/ml-pipeline")
    );
    let reader = off
        .iter()
        .find(|o| kind_of(o) == "Role" && o.name_any() == "pipewarden-api-server-env")
        .context("no api-server-env Role")?;
    ensure!(reader.namespace().as_deref() == Some("kubeflow"));

    let client = shared().await?.client()?;
    ensure_namespace(&client, "kubeflow").await?;
    install_istio_crds(&client).await?;
    let answers = apply(&client, &off, true).await?;
    ensure!(answers.len() == off.len());
    println!(
        "exitGate.enabled=false: {} objects, ClusterRole {granted:?}, no webhook, mark key or \
         ServiceEntry; dry-run applied",
        off.len()
    );
    Ok(())
}

#[test]
fn both_loops_off_is_refused_and_each_alone_lints() -> Result<()> {
    let chart = chart()?;
    let error = match chart.template(&["swfLoop.enabled=false", "exitGate.enabled=false"]) {
        Ok(objects) => anyhow::bail!("rendered {} objects with no loop", objects.len()),
        Err(error) => format!("{error:#}"),
    };
    ensure!(
        error.contains(BOTH_OFF) && error.contains("--set swfLoop.enabled=false"),
        "{error}"
    );
    for off in ["swfLoop.enabled=false", "exitGate.enabled=false"] {
        chart
            .run(&["lint", "--strict"], &[off])
            .with_context(|| off.to_owned())?;
    }
    println!(
        "both loops off: {}",
        error.find(BOTH_OFF).map_or("", |at| error[at..].trim())
    );
    Ok(())
}
