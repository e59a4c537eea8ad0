//! The chart's loop switches. `swfLoop.enabled=false` renders what the kustomize `argo` overlay
//! renders (whole objects, after the chart comparison's normalisations) and, whatever
//! `settings` and `kfp` say, nothing that reads or lands in a `kubeflow` namespace; the chart
//! installs so on a control plane of its own that has no `kubeflow` namespace (where the
//! defaults' install fails), and the real binary, run with that Deployment's environment on
//! the chart's ServiceAccount, becomes ready, observes a completion and passes the chart's
//! `helm test` script. `exitGate.enabled=false` is the mirror image (no Workflow rule, webhook,
//! mark key or ServiceEntry); both off is refused.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::{ControlPlane, service_account_token, shared};

use crate::chart_compose::{run_script, test_script};

const BOTH_OFF: &str = "swfLoop.enabled and exitGate.enabled are both false";

fn chart() -> Result<Chart> {
    Chart::with_policy(Some(&built_policy("kfp-default")))
}

/// `helm template pipewarden <chart> -n <namespace> --skip-tests --set ...`.
fn template_in(chart: &Chart, namespace: &str, sets: &[&str]) -> Result<Vec<DynamicObject>> {
    let args = ["template", "pipewarden", "-n", namespace, "--skip-tests"];
    documents(&chart.run(&args, sets)?)
}

fn env_of(deployment: &DynamicObject) -> Vec<serde_json::Value> {
    let env = &deployment.data["spec"]["template"]["spec"]["containers"][0]["env"];
    env.as_array().cloned().unwrap_or_default()
}

fn env_value(deployment: &DynamicObject, name: &str) -> Option<String> {
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
fn check_without_kubeflow(objects: &[DynamicObject], namespace: &str) -> Result<()> {
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

/// The container environment of `deployment` as this test's process runs it: mount paths
/// moved under `dir`, pod fields given, the HTTP port on loopback.
fn process_env(
    deployment: &Deployment,
    dir: &Path,
    pod_namespace: &str,
    http_port: u16,
) -> Result<Vec<(String, String)>> {
    let spec = deployment.spec.as_ref().context("spec")?;
    let pod = spec.template.spec.as_ref().context("pod spec")?;
    let container = pod.containers.first().context("container")?;
    let mounts: Vec<(&str, &str)> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.mount_path.as_str(), m.name.as_str()))
        .collect();
    let mut env = Vec::new();
    for var in container.env.iter().flatten() {
        let field = var
            .value_from
            .as_ref()
            .and_then(|from| from.field_ref.as_ref())
            .map(|field| field.field_path.as_str());
        let value = match (var.value.as_deref(), field) {
            (_, Some("metadata.name")) => "pipewarden-0".to_owned(),
            (_, Some("metadata.namespace")) => pod_namespace.to_owned(),
            _ if var.name == "PIPEWARDEN_HTTP_ADDR" => format!("127.0.0.1:{http_port}"),
            (Some(value), None) => match mounts.iter().find(|(p, _)| value.starts_with(p)) {
                Some((path, volume)) => {
                    let rest = value[path.len()..].trim_start_matches('/');
                    dir.join(volume).join(rest).display().to_string()
                }
                None => value.to_owned(),
            },
            _ => anyhow::bail!("cannot give {} a value outside a cluster", var.name),
        };
        env.push((var.name.clone(), value));
    }
    Ok(env)
}

/// The installed ConfigMap's files written where the policy volume would mount them.
async fn write_policy_volume(client: &Client, name: &str, dir: &Path) -> Result<()> {
    let map = Api::<ConfigMap>::namespaced(client.clone(), "argo")
        .get(name)
        .await?;
    let volume = dir.join("policy");
    std::fs::create_dir_all(&volume)?;
    for (file, bytes) in map.binary_data.iter().flatten() {
        std::fs::write(volume.join(file), &bytes.0)?;
    }
    for (file, text) in map.data.iter().flatten() {
        std::fs::write(volume.join(file), text)?;
    }
    std::fs::create_dir_all(dir.join("compiled"))?;
    Ok(())
}

async fn kubeflow_namespace(client: &Client) -> Result<bool> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    Ok(namespaces.get_opt("kubeflow").await?.is_some())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argo_only_release_installs_and_runs_where_there_is_no_kubeflow_namespace() -> Result<()>
{
    // A control plane of its own: the shared one may hold other tests' `kubeflow` namespace.
    let control_plane = ControlPlane::start().await?;
    let admin = control_plane.client()?;
    ensure!(!kubeflow_namespace(&admin).await?, "a kubeflow namespace");
    ensure_namespace(&admin, "argo").await?;
    let chart = chart()?;
    let kubeconfig = control_plane.kubeconfig().display().to_string();
    let install = |release: &str, sets: &[&str]| {
        let args = [
            "install",
            release,
            "-n",
            "argo",
            "--kubeconfig",
            kubeconfig.as_str(),
        ];
        chart.run(&args, sets)
    };
    // The defaults need Kubeflow: their settings Role goes into `kubeflow`.
    let error = match install("with-defaults", &[]) {
        Ok(_) => anyhow::bail!("the defaults installed without a kubeflow namespace"),
        Err(error) => format!("{error:#}"),
    };
    ensure!(error.contains("kubeflow"), "{error}");
    // rebuildPolicy=always is moot without the SWF loop: the process and `helm test` both
    // say report-only (the exit gate observes).
    let sets = ["swfLoop.enabled=false", "rebuildPolicy=always"];
    let notes = install("pipewarden", &sets)?;
    ensure!(
        notes.contains("SWF loop off") && notes.contains("Report-only"),
        "{notes}"
    );
    let args = [
        "get",
        "manifest",
        "pipewarden",
        "-n",
        "argo",
        "--kubeconfig",
    ];
    let manifest = documents(&run_helm(&[&args[..], &[kubeconfig.as_str()]].concat())?)?;
    check_without_kubeflow(&manifest, "argo")?;
    ensure!(!kubeflow_namespace(&admin).await?, "a kubeflow namespace");
    println!(
        "helm install -n argo --set {}: {} objects, no kubeflow namespace (the defaults: {})",
        sets.join(" --set "),
        manifest.len(),
        error
            .lines()
            .find(|l| l.contains("kubeflow"))
            .unwrap_or_default()
            .trim()
    );

    // The real binary, with the installed Deployment's env, on the chart's ServiceAccount.
    let dir = TempDir::new("argo-only")?;
    write_policy_volume(&admin, "pipewarden-policy", dir.path()).await?;
    let deployment = Api::<Deployment>::namespaced(admin.clone(), "argo")
        .get("pipewarden")
        .await?;
    let http_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let env = process_env(&deployment, dir.path(), "argo", http_port)?;
    let token = service_account_token(&admin, "argo", "pipewarden").await?;
    let account = control_plane.kubeconfig_for_token("pipewarden", &token)?;
    let log = dir.path().join("pipewarden.log");
    let mut process = tokio::process::Command::new(pipewarden_binary()?)
        .arg("run")
        .env_clear()
        .envs(env)
        .env("KUBECONFIG", &account)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()?;
    let addr = format!("127.0.0.1:{http_port}");
    let script = test_script(&chart, "argo", &sets, &addr)?;
    let passed = pipewarden_tests::wait::until("helm test's script to pass", WAIT, || async {
        let (ok, text) = run_script(&script)?;
        Ok(ok.then_some(text))
    })
    .await
    .with_context(|| std::fs::read_to_string(&log).unwrap_or_default())?;
    ensure!(passed.contains("mode report-only"), "{passed}");
    let metrics = http_get(addr.parse()?, "/metrics").await?.1;
    let watches: BTreeSet<&str> = metrics
        .lines()
        .filter(|line| line.starts_with("pipewarden_watch_failing{"))
        .filter_map(|line| line.split("watch=\"").nth(1)?.split('"').next())
        .collect();
    ensure!(
        !watches.is_empty() && watches.iter().all(|w| w.starts_with("exit")),
        "watches {watches:?}"
    );

    // A completion is observed, as report-only does: an Event, nothing sent.
    let api = pipewarden_tests::exit_support::workflows(&admin, "argo");
    let submitted = pipewarden_tests::exit_support::submit(&api, "nightly").await?;
    let running =
        pipewarden_tests::exit_support::set_phase(&api, &submitted, "Running", None).await?;
    let finished = pipewarden_tests::exit_support::timestamp(0);
    let done =
        pipewarden_tests::exit_support::set_phase(&api, &running, "Succeeded", Some(&finished))
            .await?;
    let uid = done.uid().unwrap_or_default();
    pipewarden_tests::wait::until("an ExitNotificationObserved Event", WAIT, || async {
        let events = pipewarden_tests::exit_support::events_with_reason(
            &admin,
            "argo",
            "ExitNotificationObserved",
        )
        .await?;
        Ok(events.contains_key(&uid).then_some(()))
    })
    .await
    .with_context(|| std::fs::read_to_string(&log).unwrap_or_default())?;
    let _ = process.kill().await;
    println!(
        "the binary on the chart's ServiceAccount in argo: helm test passes ({}), watches \
         {watches:?}, the completion observed",
        passed.trim().replace('\n', "; ")
    );
    run_helm(&[
        "uninstall",
        "pipewarden",
        "-n",
        "argo",
        "--kubeconfig",
        &kubeconfig,
    ])?;
    Ok(())
}
