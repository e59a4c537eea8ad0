//! The install variants beside the kubeflow overlay: `oci` (the policy by reference, its
//! verification key, the pull secret), `image-volume` (the policy mounted from an image, with
//! the local apiserver's `ImageVolume` feature gate on) and the `monitoring` component
//! (ServiceMonitor, PrometheusRule, Grafana dashboard), and the `enforce` component over the
//! report-only base. Each renders and passes a server-side
//! dry-run apply; every metric the rules and the dashboard query is one a live controller's
//! `/metrics` exports.

use std::collections::BTreeSet;
use std::process::Command;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

/// `deploy/render.sh overlay` on a copy of `deploy/`, with `components` added.
fn render(overlay: &str, components: &str) -> Result<Vec<DynamicObject>> {
    let copy = TempDir::new("deploy-variants")?;
    let deploy = copy.path().join("deploy");
    copy_tree(&repo_path("deploy"), &deploy)?;
    let output = Command::new(deploy.join("render.sh"))
        .arg(overlay)
        .arg(built_policy("kfp-default"))
        .env("KUSTOMIZE", kustomize()?)
        .env("COMPONENTS", components)
        .output()
        .context("running deploy/render.sh")?;
    if !output.status.success() {
        bail!(
            "render.sh {overlay} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    documents(&String::from_utf8(output.stdout)?)
}

fn container_env(objects: &[DynamicObject]) -> Result<Vec<(String, serde_json::Value)>> {
    let deployment: Deployment =
        serde_json::from_value(serde_json::to_value(one_of(objects, "Deployment")?)?)?;
    let spec = deployment
        .spec
        .context("spec")?
        .template
        .spec
        .context("pod spec")?;
    Ok(spec.containers[0]
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|var| {
            let value = serde_json::to_value(&var).unwrap_or_default();
            (var.name, value)
        })
        .collect())
}

/// Server-side dry-run apply of every object; the API server's answers.
async fn dry_run(client: &Client, objects: &[DynamicObject]) -> Result<Vec<DynamicObject>> {
    ensure_namespace(client, "kubeflow").await?;
    let applied = apply(client, objects, true).await?;
    ensure!(applied.len() == objects.len());
    Ok(applied)
}

#[tokio::test]
async fn the_oci_overlay_takes_the_policy_by_reference_with_its_key_and_pull_secret() -> Result<()>
{
    let objects = render("oci", "")?;
    let env = container_env(&objects)?;
    let names: BTreeSet<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
    for wanted in [
        "PIPEWARDEN_POLICY",
        "PIPEWARDEN_POLICY_VERIFY_KEY",
        "PIPEWARDEN_REGISTRY_AUTH_FILE",
    ] {
        ensure!(names.contains(wanted), "no {wanted} in {names:?}");
    }
    ensure!(
        !names.contains("PIPEWARDEN_POLICY_SHA256_FILE"),
        "{names:?}"
    );
    let policy = &env
        .iter()
        .find(|(name, _)| name == "PIPEWARDEN_POLICY")
        .unwrap()
        .1;
    let from = &policy["valueFrom"]["configMapKeyRef"]["name"];
    ensure!(
        policy.get("value").is_none() && from.is_string(),
        "{policy}"
    );

    let config_maps: Vec<&DynamicObject> = objects
        .iter()
        .filter(|o| kind_of(o) == "ConfigMap")
        .collect();
    let reference = config_maps
        .iter()
        .find(|o| Some(o.name_any()) == from.as_str().map(str::to_owned))
        .context("the ConfigMap PIPEWARDEN_POLICY comes from")?;
    let value = reference.data["data"]["PIPEWARDEN_POLICY"]
        .as_str()
        .unwrap_or_default();
    pipewarden::oci::PolicyRef::parse(value).with_context(|| format!("policy.env: {value}"))?;
    let policy_map = config_maps
        .iter()
        .find(|o| o.name_any() == "pipewarden-policy")
        .context("pipewarden-policy")?;
    ensure!(
        policy_map.data.get("binaryData").is_none(),
        "the wasm is still in the ConfigMap"
    );
    ensure!(policy_map.data["data"]["settings.json"].is_string());

    dry_run(&shared().await?.client()?, &objects).await?;
    Ok(())
}

#[tokio::test]
async fn the_image_volume_overlay_mounts_the_policy_from_an_image() -> Result<()> {
    let objects = render("image-volume", "")?;
    let deployment = one_of(&objects, "Deployment")?;
    let volumes = deployment.data["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .context("volumes")?;
    let image = volumes
        .iter()
        .find(|v| v.get("image").is_some())
        .context("no image volume")?;
    ensure!(image["image"]["reference"].is_string(), "{image}");
    let env = container_env(&objects)?;
    let policy = &env
        .iter()
        .find(|(name, _)| name == "PIPEWARDEN_POLICY")
        .unwrap()
        .1;
    ensure!(
        policy["value"]
            .as_str()
            .is_some_and(|p| p.starts_with("/etc/pipewarden/policy-image/")),
        "{policy}"
    );

    let answers = dry_run(&shared().await?.client()?, &objects).await?;
    // The server kept the image volume (with the feature gate off it would drop it).
    let answer = one_of(&answers, "Deployment")?;
    let kept = answer.data["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .is_some_and(|v| v.iter().any(|v| v.get("image").is_some()));
    ensure!(kept, "the API server dropped the image volume");
    Ok(())
}

/// Just enough of the Prometheus Operator's CRDs for the API server to accept its kinds.
async fn install_monitoring_crds(client: &Client) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (plural, kind) in [
        ("servicemonitors", "ServiceMonitor"),
        ("prometheusrules", "PrometheusRule"),
    ] {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.monitoring.coreos.com")},
            "spec": {
                "group": "monitoring.coreos.com",
                "scope": "Namespaced",
                "names": {"plural": plural, "kind": kind, "singular": kind.to_lowercase()},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        }))?;
        match crds.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(error) => return Err(error.into()),
        }
    }
    pipewarden_tests::wait::until("the monitoring CRDs to be served", WAIT, || async {
        let served = kube::discovery::pinned_group(client, &"monitoring.coreos.com/v1".parse()?)
            .await
            .is_ok_and(|group| group.resources_by_stability().len() == 2);
        Ok(served.then_some(()))
    })
    .await
}

/// Every `pipewarden_*` metric name a text mentions, histogram series folded into their family.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("pipewarden_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name);
        names.insert(family.to_owned());
        rest = &tail[end..];
    }
    names
}

/// The names a scrape exports: each family's `# TYPE` line, counters with their `_total`.
fn exported(scrape: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in scrape.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        names.insert(name.to_owned());
        if kind == "counter" {
            names.insert(format!("{name}_total"));
        }
    }
    names
}

#[tokio::test]
async fn the_monitoring_component_queries_only_metrics_the_controller_exports() -> Result<()> {
    let objects = render("kubeflow", "monitoring")?;
    let rule = one_of(&objects, "PrometheusRule")?;
    one_of(&objects, "ServiceMonitor")?;
    let dashboard = objects
        .iter()
        .find(|o| kind_of(o) == "ConfigMap" && o.name_any() == "pipewarden-dashboard")
        .context("no dashboard ConfigMap")?;
    let dashboard_json = dashboard.data["data"]["pipewarden.json"]
        .as_str()
        .context("dashboard")?;
    let dashboard_json: serde_json::Value = serde_json::from_str(dashboard_json)?;
    let alerts: BTreeSet<&str> = rule.data["spec"]["groups"][0]["rules"]
        .as_array()
        .context("rules")?
        .iter()
        .filter_map(|r| r["alert"].as_str())
        .collect();
    ensure!(alerts.len() == 5, "alerts: {alerts:?}");

    let control_plane = shared().await?;
    let client = control_plane.client()?;
    install_monitoring_crds(&client).await?;
    dry_run(&client, &objects).await?;

    let mut queried = metric_names(&serde_json::to_string(&rule.data["spec"])?);
    queried.extend(metric_names(&dashboard_json.to_string()));
    for wanted in [
        "pipewarden_leader",
        "pipewarden_policy_loads_total",
        "pipewarden_swf_writes_total",
        "pipewarden_exit_gave_up_total",
        "pipewarden_watch_errors_total",
        "pipewarden_watch_last_success_timestamp_seconds",
    ] {
        ensure!(
            queried.contains(wanted),
            "nothing watches {wanted}: {queried:?}"
        );
    }

    let namespace = control_plane.ns().await?;
    let replica = start_replica(client, &base_flags(&namespace)).await?;
    let (status, scrape) = http_get(replica.http_addr, "/metrics").await?;
    replica.stop().await;
    ensure!(status == 200, "/metrics answered {status}");
    let live = exported(&scrape);
    let unknown: Vec<&String> = queried.difference(&live).collect();
    ensure!(
        unknown.is_empty(),
        "queried but not exported: {unknown:?}\n{scrape}"
    );
    Ok(())
}

#[tokio::test]
async fn the_base_is_report_only_and_enforce_changes_only_the_two_settings_that_write() -> Result<()>
{
    let value = |env: &[(String, serde_json::Value)], name: &str| {
        env.iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v["value"].as_str().map(str::to_owned))
    };
    let report_only = render("kubeflow", "")?;
    let enforced = render("kubeflow", "enforce")?;
    let (before, after) = (container_env(&report_only)?, container_env(&enforced)?);
    let settings = [
        "ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY",
        "PIPEWARDEN_EXIT_MODE",
    ];
    let pairs = |env: &[(String, serde_json::Value)]| {
        settings.map(|name| value(env, name).unwrap_or_default())
    };
    ensure!(
        pairs(&before) == ["disable", "observe"],
        "{:?}",
        pairs(&before)
    );
    ensure!(pairs(&after) == ["always", "notify"], "{:?}", pairs(&after));
    // Both parse as the binary parses them.
    for [policy, mode] in [pairs(&before), pairs(&after)] {
        pipewarden::swf::parse_rebuild_policy(&policy).map_err(anyhow::Error::msg)?;
        <pipewarden::config::ExitMode as clap::ValueEnum>::from_str(&mode, false)
            .map_err(anyhow::Error::msg)?;
    }
    // Everything else is the same objects, env order included.
    let mut patched = serde_json::to_value(&report_only)?;
    for env in patched
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter(|o| o["kind"] == "Deployment")
        .filter_map(|o| o.pointer_mut("/spec/template/spec/containers/0/env"))
        .filter_map(|env| env.as_array_mut())
    {
        for var in env.iter_mut() {
            match var["name"].as_str() {
                Some("ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY") => var["value"] = "always".into(),
                Some("PIPEWARDEN_EXIT_MODE") => var["value"] = "notify".into(),
                _ => {}
            }
        }
    }
    ensure!(
        patched == serde_json::to_value(&enforced)?,
        "the enforce component changed more than the two settings"
    );
    let client = shared().await?.client()?;
    dry_run(&client, &enforced).await?;
    Ok(())
}
