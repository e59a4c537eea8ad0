//! The install variants beside the kubeflow overlay: `oci` (the policy by reference, its
//! verification key, the pull secret), `image-volume` (the policy mounted from an image, with
//! the local apiserver's `ImageVolume` feature gate on), the `monitoring` component
//! (ServiceMonitor, PrometheusRule, Grafana dashboard), the `istio` component and the
//! `enforce` component over the report-only base. Each renders and passes a server-side
//! dry-run apply; the alert rules parse, each with an absolute `runbook_url` to its section of
//! the project's runbooks, none on an age; every metric, label and matched value the rules and
//! the dashboard query is in a live controller's `/metrics` (one serving its target, one on a
//! version no policy serves).

use std::collections::BTreeSet;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::DynamicObject;
use kube::{Client, ResourceExt as _};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

/// `deploy/render.sh overlay` on a copy of `deploy/`, with `components` added.
fn render(overlay: &str, components: &str) -> Result<Vec<DynamicObject>> {
    documents(&render_with_components(
        overlay,
        components,
        &built_policy("kfp-default"),
    )?)
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
    ensure!(!names.contains("PIPEWARDEN_POLICY_SHA256"), "{names:?}");
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

/// Every expression of the rules (by alert) and of the dashboard (by panel).
fn queries(rule: &DynamicObject, dashboard: &serde_json::Value) -> Result<Vec<(String, String)>> {
    let mut found = Vec::new();
    for group in rule.data["spec"]["groups"].as_array().context("groups")? {
        for alert in group["rules"].as_array().context("rules")? {
            let name = alert["alert"].as_str().context("an alert's name")?;
            let expr = alert["expr"].as_str().context("an alert's expr")?;
            found.push((format!("alert {name}"), expr.to_owned()));
        }
    }
    for panel in dashboard["panels"].as_array().context("panels")? {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().context("a panel's expr")?;
            found.push((format!("panel {}", panel["title"]), expr.to_owned()));
        }
    }
    Ok(found)
}

/// The project's runbooks page: the chart's `home` (its repository) and the file's path on
/// the default branch, as the chart's Artifact Hub links give it.
pub(crate) fn project_runbooks() -> Result<String> {
    let chart: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(repo_path(
        "deploy/helm/pipewarden/Chart.yaml",
    ))?)?;
    let home = chart["home"].as_str().context("Chart.yaml home")?;
    Ok(format!("{home}/blob/main/docs/operate/runbooks.md"))
}

/// GitHub's anchors of the `## ` headings of a Markdown file: lower case, punctuation
/// dropped, spaces as hyphens.
fn heading_anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .map(|heading| {
            heading
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

/// The rules parse as the Operator's PrometheusRule: each alert named, with an expression,
/// a severity, a summary and a runbook section that exists, linked by an absolute
/// `runbook_url` on the page `runbooks` (the section's anchor on it).
pub(crate) fn check_alerts(rule: &DynamicObject, runbooks_url: &str) -> Result<BTreeSet<String>> {
    let runbooks = std::fs::read_to_string(repo_path("docs/operate/runbooks.md"))?;
    let anchors = heading_anchors(&runbooks);
    let mut alerts = BTreeSet::new();
    for alert in rule.data["spec"]["groups"][0]["rules"]
        .as_array()
        .context("rules")?
    {
        let name = alert["alert"].as_str().context("alert")?;
        ensure!(alert["expr"].is_string(), "{name}: no expr");
        let severity = alert["labels"]["severity"].as_str();
        ensure!(
            matches!(severity, Some("critical" | "warning" | "info")),
            "{name}: severity {severity:?}"
        );
        ensure!(
            alert["annotations"]["summary"].is_string(),
            "{name}: summary"
        );
        ensure!(
            alert["annotations"].get("runbook").is_none(),
            "{name}: a relative runbook annotation"
        );
        let url = alert["annotations"]["runbook_url"]
            .as_str()
            .with_context(|| format!("{name}: no runbook_url"))?;
        let parsed: http::Uri = url
            .parse()
            .with_context(|| format!("{name}: runbook_url {url}"))?;
        ensure!(
            matches!(parsed.scheme_str(), Some("https" | "http")) && parsed.host().is_some(),
            "{name}: runbook_url {url} is not absolute"
        );
        let (page, anchor) = url.split_once('#').context("no anchor")?;
        ensure!(page == runbooks_url, "{name}: runbook_url {url}");
        ensure!(
            anchors.contains(anchor) && anchor == name.to_lowercase(),
            "{name}: docs/operate/runbooks.md has no section for #{anchor}"
        );
        ensure!(
            runbooks.contains(&format!("\n## {name}\n")),
            "docs/operate/runbooks.md has no section {name}"
        );
        alerts.insert(name.to_owned());
    }
    Ok(alerts)
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
    for object in [rule, dashboard] {
        ensure!(
            object.namespace().as_deref() == Some("kubeflow"),
            "{} outside the overlay's namespace",
            object.name_any()
        );
    }
    let dashboard_json = dashboard.data["data"]["pipewarden.json"]
        .as_str()
        .context("dashboard")?;
    let dashboard_json: serde_json::Value = serde_json::from_str(dashboard_json)?;
    let alerts = check_alerts(rule, &project_runbooks()?)?;
    ensure!(alerts.len() == 7, "alerts: {alerts:?}");

    let control_plane = shared().await?;
    let client = control_plane.client()?;
    install_monitoring_crds(&client).await?;
    dry_run(&client, &objects).await?;

    let mut read = Vec::new();
    for (what, expr) in queries(rule, &dashboard_json)? {
        let query = promql::read(&expr).with_context(|| format!("{what}: {expr}"))?;
        // Alerts read error states and error counts: an age (time() minus a timestamp) grows
        // on a quiet, healthy cluster and would fire there.
        if what.starts_with("alert ") {
            ensure!(
                !expr.contains("time()") && !expr.contains("timestamp"),
                "{what} alerts on an age: {expr}"
            );
        }
        read.push((what, query));
    }
    let queried: BTreeSet<&str> = read
        .iter()
        .flat_map(|(_, q)| q.metrics.iter().map(String::as_str))
        .collect();
    for wanted in [
        "pipewarden_leader",
        "pipewarden_shard_info",
        "pipewarden_policy_loads_total",
        "pipewarden_swf_writes_total",
        "pipewarden_exit_gave_up_total",
        "pipewarden_watch_errors_total",
        "pipewarden_watch_failing",
        "pipewarden_swfs",
        "pipewarden_exit_completions",
        "pipewarden_target_info",
    ] {
        ensure!(
            queried.contains(wanted),
            "nothing watches {wanted}: {queried:?}"
        );
    }

    // Two live replicas: one serving its target, one on a KFP version no policy serves (what
    // PipewardenTargetUnsupported matches); the alerts and panels are read against both.
    let namespace = control_plane.ns().await?;
    let mut scrape = String::new();
    for target in [None, Some("9.9.9")] {
        let mut flags = base_flags(&namespace);
        if let Some(target) = target {
            flags.retain(|flag| !flag.starts_with("--target-version="));
            flags.push(format!("--target-version={target}"));
        }
        let replica = start_replica(client.clone(), &flags).await?;
        let (status, text) = http_get(replica.http_addr, "/metrics").await?;
        replica.stop().await;
        ensure!(status == 200, "/metrics answered {status}");
        scrape.push_str(&text);
    }
    let live = promql::series(&scrape);
    let mut unbacked = Vec::new();
    for (what, query) in &read {
        for missing in promql::unbacked(query, &live) {
            unbacked.push(format!("{what}: {missing}"));
        }
    }
    ensure!(
        unbacked.is_empty(),
        "queried but not exported:\n{}\n{scrape}",
        unbacked.join("\n")
    );
    println!(
        "{} queries ({} alerts) read; every metric, label and matched value is in a live scrape",
        read.len(),
        alerts.len()
    );
    Ok(())
}

#[tokio::test]
async fn the_istio_component_passes_a_dry_run_beside_the_overlay() -> Result<()> {
    let objects = render("kubeflow", "istio")?;
    let policy = one_of(&objects, "AuthorizationPolicy")?;
    one_of(&objects, "ServiceEntry")?;
    ensure!(policy.namespace().as_deref() == Some("kubeflow"));
    // Admits GET on the metrics path and the probes, on the HTTP port only.
    let paths: BTreeSet<&str> = policy.data["spec"]["rules"]
        .as_array()
        .context("rules")?
        .iter()
        .flat_map(|rule| rule["to"].as_array().into_iter().flatten())
        .flat_map(|to| to["operation"]["paths"].as_array().into_iter().flatten())
        .filter_map(|path| path.as_str())
        .collect();
    ensure!(
        paths == BTreeSet::from(["/metrics", "/healthz", "/readyz"]),
        "{paths:?}"
    );
    let client = shared().await?.client()?;
    install_istio_crds(&client).await?;
    dry_run(&client, &objects).await?;
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
