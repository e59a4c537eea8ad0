//! The Helm chart `deploy/helm/pipewarden` beside kustomize. `helm lint --strict` passes on each
//! variant of the chart and its schema refuses a misspelt value; with its defaults the chart
//! renders the objects `deploy/render.sh kubeflow` renders, with `enforce=true` those of the
//! `enforce` component over it, with monitoring and Istio on those of the two components: whole
//! objects compared (kinds, names, RBAC rules, security contexts, env, probes, ports and the
//! rest), after the normalisations `NORMALISATIONS` names. Each variant passes a server-side
//! dry-run apply; the chart installs report-only, upgrades to enforce and uninstalls on the local
//! control plane; every object carries Kubeflow's labels with the workspace version; the chart's
//! alert rules and dashboard are the monitoring component's files.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;
use serde_json::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const OCI_REFERENCE: &str = "oci://registry.example.com/policies/kfp-default@sha256:\
     0000000000000000000000000000000000000000000000000000000000000000";
const VERIFY_KEY: &str =
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----";

/// The chart's variants: name and `--set` values.
fn variants() -> Vec<(&'static str, Vec<String>)> {
    let oci = [
        "policy.source=oci".to_owned(),
        format!("policy.oci.reference={OCI_REFERENCE}"),
        format!("policy.oci.verifyKey={VERIFY_KEY}"),
    ];
    let mesh = [
        "monitoring.enabled=true",
        "monitoring.labels.release=kube-prometheus-stack",
        "istio.enabled=true",
        "istio.metricsPrincipals[0]=cluster.local/ns/monitoring/sa/prometheus",
        "exitWebhook.url=https://hooks.example.com:8443/pipewarden",
        "exitWebhook.tokenSecret.name=hook-token",
        "kfp.apiUrl=https://ml-pipeline.kubeflow.svc.cluster.local:8888",
        "kfp.caSecret.name=kfp-api-tls",
    ];
    vec![
        ("defaults", vec![]),
        ("enforce", vec!["enforce=true".to_owned()]),
        ("oci", oci.to_vec()),
        ("image", vec!["policy.source=image".to_owned()]),
        ("sharded", vec!["shards=3".to_owned()]),
        (
            "mark key",
            vec!["exitMarkKey.secretName=pipewarden-mark-key".to_owned()],
        ),
        ("mesh", mesh.map(str::to_owned).to_vec()),
        ("nats", nats_values()),
    ]
}

/// Exit notifications to NATS JetStream, as the exit-nats component sets them.
fn nats_values() -> Vec<String> {
    vec![
        "exitNats.url=nats://nats.nats.svc.cluster.local:4222".to_owned(),
        "exitNats.credsSecret.name=pipewarden-exit-nats".to_owned(),
    ]
}

fn chart() -> Result<Chart> {
    Chart::with_policy(Some(&built_policy("kfp-default")))
}

fn sets(values: &[String]) -> Vec<&str> {
    values.iter().map(String::as_str).collect()
}

fn env_value(deployment: &DynamicObject, name: &str) -> Option<String> {
    deployment.data["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|var| var["name"] == name)
        .and_then(|var| var["value"].as_str().map(str::to_owned))
}

#[test]
fn helm_lint_passes_on_each_variant_and_a_chart_without_a_policy_says_what_to_run() -> Result<()> {
    let chart = chart()?;
    for (name, values) in variants() {
        chart
            .run(&["lint", "--strict"], &sets(&values))
            .with_context(|| format!("variant {name}"))?;
    }
    // The schema refuses a misspelt value rather than install report-only unnoticed.
    let error = match chart.template(&["enfore=true"]) {
        Ok(_) => anyhow::bail!("enfore=true was accepted"),
        Err(error) => format!("{error:#}"),
    };
    ensure!(error.contains("enfore"), "{error}");
    // One sink at a time, as the controller's flags insist.
    let mut both = nats_values();
    both.push("exitWebhook.url=https://hooks.example.com/pipewarden".to_owned());
    let error = match chart.template(&sets(&both)) {
        Ok(_) => anyhow::bail!("a webhook and NATS were both accepted"),
        Err(error) => format!("{error:#}"),
    };
    ensure!(error.contains("choose one"), "{error}");
    let bare = Chart::with_policy(None)?;
    let error = match bare.template(&[]) {
        Ok(objects) => anyhow::bail!("rendered {} objects without a policy", objects.len()),
        Err(error) => format!("{error:#}"),
    };
    ensure!(error.contains("deploy/helm/add-policy.sh"), "{error}");
    bare.template(&[
        "policy.source=oci",
        &format!("policy.oci.reference={OCI_REFERENCE}"),
    ])
    .context("an oci policy needs no file in the chart")?;
    Ok(())
}

#[test]
fn the_chart_renders_the_objects_kustomize_renders() -> Result<()> {
    let chart = chart()?;
    let policy = built_policy("kfp-default");
    println!("normalisations:");
    for step in NORMALISATIONS {
        println!("  - {step}");
    }
    let webhook = "https://webhook.example.com/hooks";
    let cases: [(&str, Vec<String>, &str); 5] = [
        ("defaults", vec![], ""),
        (
            "the mark key",
            vec!["exitMarkKey.secretName=pipewarden-mark-key".into()],
            "mark-key",
        ),
        ("enforce=true", vec!["enforce=true".into()], "enforce"),
        ("exit to NATS", nats_values(), "exit-nats"),
        (
            "monitoring and istio",
            vec![
                "monitoring.enabled=true".into(),
                "istio.enabled=true".into(),
                format!("exitWebhook.url={webhook}"),
            ],
            "monitoring istio",
        ),
    ];
    // The comparison sees a difference: enforce against the report-only base is exactly the
    // two settings that write.
    let base = normalised(&documents(&render_overlay("kubeflow", &policy)?)?)?;
    let enforced = normalised(&chart.template(&["enforce=true"])?)?;
    let found = differences(&base, &enforced);
    let env = "Deployment pipewarden: /spec/template/spec/containers/0/env";
    ensure!(
        found.len() == 2
            && found[0].starts_with(&format!("{env}/0/value"))
            && found[1].starts_with(&format!("{env}/1/value")),
        "{found:#?}"
    );
    for (case, values, components) in cases {
        let kustomize = documents(&render_with_components("kubeflow", components, &policy)?)?;
        let mut helm = chart.template(&sets(&values))?;
        if components.contains("istio") {
            println!("  - {case}: the chart's PIPEWARDEN_EXIT_WEBHOOK_URL is dropped");
            // The component's ServiceEntry names a placeholder host the chart takes from the
            // webhook URL; the URL itself is the overlay's to set, so it is dropped here.
            let deployment = helm
                .iter_mut()
                .find(|o| kind_of(o) == "Deployment")
                .context("no Deployment")?;
            let env = deployment.data["spec"]["template"]["spec"]["containers"][0]["env"]
                .as_array_mut()
                .context("env")?;
            let before = env.len();
            env.retain(|var| var["name"] != "PIPEWARDEN_EXIT_WEBHOOK_URL");
            ensure!(env.len() + 1 == before, "no webhook URL in the chart's env");
        }
        let (left, right) = (normalised(&kustomize)?, normalised(&helm)?);
        let differences = differences(&left, &right);
        ensure!(
            differences.is_empty(),
            "chart {case} vs kustomize kubeflow + [{components}]:\n{}",
            differences.join("\n")
        );
        let kinds: BTreeSet<&str> = left.keys().map(|(kind, _)| kind.as_str()).collect();
        println!(
            "{case}: {} objects equal to kustomize kubeflow + [{components}] ({})",
            left.len(),
            kinds.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// The API server's dry-run answer for each object; CRDs of the kinds the chart may render.
async fn dry_run(client: &Client, objects: &[DynamicObject]) -> Result<()> {
    ensure_namespace(client, "kubeflow").await?;
    install_monitoring_crds(client).await?;
    install_istio_crds(client).await?;
    let answers = apply(client, objects, true).await?;
    ensure!(answers.len() == objects.len());
    Ok(())
}

#[tokio::test]
async fn each_chart_variant_passes_a_server_side_dry_run_apply() -> Result<()> {
    let chart = chart()?;
    let client = shared().await?.client()?;
    for (name, values) in variants() {
        let objects = chart.template(&sets(&values))?;
        dry_run(&client, &objects)
            .await
            .with_context(|| format!("variant {name}"))?;
        let deployments: Vec<&DynamicObject> = objects
            .iter()
            .filter(|o| kind_of(o) == "Deployment")
            .collect();
        for deployment in &deployments {
            let policy = env_value(deployment, "ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY");
            let mode = env_value(deployment, "PIPEWARDEN_EXIT_MODE");
            let expected = match name {
                "enforce" => ["always", "notify"],
                _ => ["disable", "observe"],
            };
            ensure!(
                [policy.as_deref(), mode.as_deref()] == expected.map(Some),
                "{name}: {policy:?} {mode:?}"
            );
        }
        match name {
            "oci" => {
                let reference = env_value(deployments[0], "PIPEWARDEN_POLICY").unwrap_or_default();
                pipewarden::oci::PolicyRef::parse(&reference)
                    .with_context(|| format!("PIPEWARDEN_POLICY {reference}"))?;
                let verify = env_value(deployments[0], "PIPEWARDEN_POLICY_VERIFY_KEY");
                ensure!(verify.is_some(), "no verify key");
                ensure!(env_value(deployments[0], "PIPEWARDEN_POLICY_SHA256").is_none());
            }
            "sharded" => {
                // Three Deployments, each its own shard; the Role names exactly their Leases.
                ensure!(deployments.len() == 3, "{} Deployments", deployments.len());
                let mut leases = BTreeSet::new();
                for deployment in &deployments {
                    let shard = env_value(deployment, "PIPEWARDEN_SHARD").unwrap_or_default();
                    let shard =
                        pipewarden::config::Shard::parse(&shard).map_err(anyhow::Error::msg)?;
                    ensure!(deployment.name_any() == format!("pipewarden-shard-{}", shard.index));
                    leases.insert(shard.lease_name("pipewarden"));
                }
                ensure!(leases.len() == 3);
                let role = objects
                    .iter()
                    .find(|o| o.name_any() == "pipewarden-leader-election" && kind_of(o) == "Role")
                    .context("leader-election Role")?;
                let named: BTreeSet<String> = role.data["rules"][0]["resourceNames"]
                    .as_array()
                    .context("resourceNames")?
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect();
                ensure!(named == leases, "{named:?} vs {leases:?}");
                let budgets = objects
                    .iter()
                    .filter(|o| kind_of(o) == "PodDisruptionBudget");
                ensure!(budgets.count() == 3, "a PodDisruptionBudget per shard");
            }
            "mesh" => {
                let entry = one_of(&objects, "ServiceEntry")?;
                ensure!(entry.data["spec"]["hosts"] == serde_json::json!(["hooks.example.com"]));
                ensure!(entry.data["spec"]["ports"][0]["number"] == 8443);
                for kind in ["ServiceMonitor", "PrometheusRule"] {
                    let labels = one_of(&objects, kind)?.labels();
                    ensure!(
                        labels.get("release").map(String::as_str) == Some("kube-prometheus-stack"),
                        "{kind}: {labels:?}"
                    );
                }
                let policy = one_of(&objects, "AuthorizationPolicy")?;
                let principals =
                    &policy.data["spec"]["rules"][0]["from"][0]["source"]["principals"];
                ensure!(principals[0] == "cluster.local/ns/monitoring/sa/prometheus");
                for var in [
                    "PIPEWARDEN_EXIT_WEBHOOK_TOKEN_FILE",
                    "PIPEWARDEN_KFP_API_CA_FILE",
                ] {
                    ensure!(env_value(deployments[0], var).is_some(), "no {var}");
                }
            }
            "nats" => {
                let creds = env_value(deployments[0], "PIPEWARDEN_EXIT_NATS_CREDS_FILE");
                ensure!(
                    creds.as_deref() == Some("/etc/pipewarden/nats-creds/nats.creds"),
                    "{creds:?}"
                );
                ensure!(env_value(deployments[0], "PIPEWARDEN_EXIT_WEBHOOK_URL").is_none());
            }
            _ => {}
        }
        println!("{name}: {} objects pass a dry-run apply", objects.len());
    }
    Ok(())
}

async fn deployment_modes(client: &Client, namespace: &str, name: &str) -> Result<[String; 2]> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get(name)
        .await?;
    let object: DynamicObject = serde_json::from_value(serde_json::to_value(&deployment)?)?;
    Ok([
        "ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY",
        "PIPEWARDEN_EXIT_MODE",
    ]
    .map(|var| env_value(&object, var).unwrap_or_default()))
}

#[tokio::test]
async fn helm_installs_report_only_upgrades_to_enforce_and_uninstalls() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    // Its own names, cluster-wide objects included, so it shares nothing with other tests.
    let release = format!("pipewarden-{namespace}");
    let chart = chart()?;
    let kubeconfig = control_plane.kubeconfig().display().to_string();
    let settings = format!("settings.from=deployment/{namespace}/ml-pipeline");
    let helm = |command: &str, extra: &[&str]| -> Vec<String> {
        let args = [
            command,
            &release,
            "-n",
            &namespace,
            "--kubeconfig",
            &kubeconfig,
        ];
        args.iter().chain(extra).map(|a| (*a).to_owned()).collect()
    };

    let notes = chart.run(&sets(&helm("install", &[])), &[&settings])?;
    ensure!(notes.contains("Report-only"), "{notes}");
    let modes = deployment_modes(&client, &namespace, &release).await?;
    ensure!(modes == ["disable", "observe"], "{modes:?}");

    chart.run(
        &sets(&helm("upgrade", &["--reuse-values"])),
        &["enforce=true"],
    )?;
    let modes = deployment_modes(&client, &namespace, &release).await?;
    ensure!(modes == ["always", "notify"], "{modes:?}");

    run_helm(&sets(&helm("uninstall", &[])))?;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &namespace);
    let roles: Api<ClusterRole> = Api::all(client);
    pipewarden_tests::wait::until("the release's objects to be gone", WAIT, || async {
        let gone = deployments.get_opt(&release).await?.is_none()
            && roles.get_opt(&release).await?.is_none();
        Ok(gone.then_some(()))
    })
    .await?;
    println!("{release}: installed report-only, upgraded to enforce, uninstalled");
    Ok(())
}

/// Kubeflow's labels, with the workspace version, on `object` (and its pod template).
fn check_labels(object: &DynamicObject, from: &str) -> Result<()> {
    let wanted = [
        ("app.kubernetes.io/name", "pipewarden"),
        ("app.kubernetes.io/part-of", "kubeflow"),
        ("app.kubernetes.io/component", "controller"),
        ("app.kubernetes.io/version", VERSION),
        ("application-crd-id", "kubeflow-pipelines"),
    ];
    let mut maps = vec![object.data.pointer("/spec/template/metadata/labels")];
    let metadata = serde_json::to_value(&object.metadata.labels)?;
    maps.push(Some(&metadata));
    for labels in maps.into_iter().flatten() {
        for (key, value) in wanted {
            ensure!(
                labels.get(key).and_then(Value::as_str) == Some(value),
                "{from}: {} {} has {key}={}",
                kind_of(object),
                object.name_any(),
                labels.get(key).unwrap_or(&Value::Null)
            );
        }
    }
    Ok(())
}

#[test]
fn every_object_carries_kubeflows_labels_and_the_workspace_version() -> Result<()> {
    let kustomize = documents(&render_with_components(
        "kubeflow",
        "monitoring istio",
        &built_policy("kfp-default"),
    )?)?;
    let mesh = variants().pop().context("mesh")?.1;
    let helm = chart()?.template(&sets(&mesh))?;
    for (from, objects) in [("kustomize", &kustomize), ("chart", &helm)] {
        for object in objects {
            check_labels(object, from)?;
        }
        let deployment = one_of(objects, "Deployment")?;
        let image = deployment.data["spec"]["template"]["spec"]["containers"][0]["image"].clone();
        ensure!(
            image
                .as_str()
                .is_some_and(|i| i.ends_with(&format!(":{VERSION}"))),
            "{from}: image {image}"
        );
    }
    let chart_yaml: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(
        repo_path("deploy/helm/pipewarden/Chart.yaml"),
    )?)?;
    ensure!(
        chart_yaml["appVersion"].as_str() == Some(VERSION),
        "Chart.yaml appVersion {:?}, the workspace is {VERSION}",
        chart_yaml["appVersion"]
    );
    Ok(())
}

#[test]
fn the_charts_rules_and_dashboard_are_the_monitoring_components_files() -> Result<()> {
    for file in ["prometheusrule.yaml", "dashboard.json"] {
        let source = format!("deploy/components/monitoring/{file}");
        let copy = format!("deploy/helm/pipewarden/files/{file}");
        ensure!(
            std::fs::read(repo_path(&source))? == std::fs::read(repo_path(&copy))?,
            "{copy} differs from {source}, which is the one to edit: `cp {source} {copy}`"
        );
    }
    Ok(())
}

#[test]
fn the_charts_alerts_link_their_runbooks_absolutely_from_a_base_url_value() -> Result<()> {
    let chart = chart()?;
    let project = crate::variants::project_runbooks()?;
    let mirror = "https://wiki.example.com/ops/pipewarden-runbooks";
    let mut found = Vec::new();
    for (base, values) in [
        (project.as_str(), vec!["monitoring.enabled=true".to_owned()]),
        (
            mirror,
            vec![
                "monitoring.enabled=true".to_owned(),
                format!("monitoring.runbookBaseUrl={mirror}"),
            ],
        ),
    ] {
        let objects = chart.template(&sets(&values))?;
        let alerts = crate::variants::check_alerts(one_of(&objects, "PrometheusRule")?, base)?;
        found.push(alerts);
    }
    ensure!(found[0] == found[1] && !found[0].is_empty(), "{found:?}");
    let relative = chart.template(&[
        "monitoring.enabled=true",
        "monitoring.runbookBaseUrl=docs/operate/runbooks.md",
    ]);
    ensure!(relative.is_err(), "a relative runbookBaseUrl was accepted");
    println!(
        "{} alerts, each runbook_url on {project} by default and on {mirror} when set",
        found[0].len()
    );
    Ok(())
}
