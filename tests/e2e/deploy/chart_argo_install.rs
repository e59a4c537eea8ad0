//! The Argo-only install with Helm where there is no `kubeflow` namespace: on a control plane
//! of its own, the chart's defaults fail (their settings Role goes into `kubeflow`) and
//! `swfLoop.enabled=false` installs into `argo`; the real binary, run with the installed
//! Deployment's environment on the chart's ServiceAccount, becomes ready, watches only
//! Workflows, passes the chart's `helm test` script in report-only mode and observes a
//! completion.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::Api;
use kube::{Client, ResourceExt as _};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::{ControlPlane, service_account_token};

use crate::chart_compose::{run_script, test_script};
use crate::chart_loops::{chart, check_without_kubeflow};

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
