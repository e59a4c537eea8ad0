//! The chart as a part of larger installs: a subchart of an umbrella chart that passes `global`
//! values; in an Istio ambient mesh (L4 rules only); and its `helm test`, whose script runs
//! against the real binary started as the chart's Deployment starts it (the local control plane
//! runs no pods, so the script runs here, with the Service's address swapped for the process's).

use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;
use serde_json::Value;

fn chart() -> Result<Chart> {
    Chart::with_policy(Some(&built_policy("kfp-default")))
}

fn env_value(deployment: &kube::api::DynamicObject, name: &str) -> Option<String> {
    deployment.data["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|var| var["name"] == name)
        .and_then(|var| var["value"].as_str().map(str::to_owned))
}

#[test]
fn the_chart_renders_as_a_subchart_given_global_values() -> Result<()> {
    let chart = chart()?;
    let umbrella = TempDir::new("umbrella")?;
    let root = umbrella.path().join("platform");
    copy_tree(&chart.dir, &root.join("charts/pipewarden"))?;
    std::fs::write(
        root.join("Chart.yaml"),
        "apiVersion: v2\nname: platform\nversion: 1.0.0\n\
         dependencies:\n  - name: pipewarden\n    version: 0.1.0\n",
    )?;
    // What platform charts commonly put in `global`; the chart uses none of it.
    std::fs::write(
        root.join("values.yaml"),
        "global:\n  imageRegistry: registry.example.com\n  storageClass: fast\n\
         pipewarden:\n  enforce: true\n",
    )?;
    let root_arg = root.display().to_string();
    run_helm(&["lint", "--strict", &root_arg])?;
    let objects = documents(&run_helm(&[
        "template",
        "platform",
        &root_arg,
        "-n",
        "kubeflow",
        "--skip-tests",
    ])?)?;
    let deployment = one_of(&objects, "Deployment")?;
    ensure!(
        env_value(deployment, "ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY").as_deref()
            == Some("always"),
        "the umbrella's pipewarden.enforce=true did not reach the subchart"
    );
    // Standalone, `global` is accepted too; a misspelt top-level key still is not.
    chart.template(&["global.imageRegistry=registry.example.com"])?;
    ensure!(
        chart.template(&["globl.imageRegistry=x"]).is_err(),
        "globl was accepted"
    );
    println!(
        "umbrella chart: {} objects from the subchart with global values, enforce passed down",
        objects.len()
    );
    Ok(())
}

/// Every key under `rules` of the AuthorizationPolicy, recursively.
fn rule_keys(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                found.push(key.clone());
                rule_keys(inner, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| rule_keys(i, found)),
        _ => {}
    }
}

#[tokio::test]
async fn istio_ambient_mode_uses_l4_rules_only() -> Result<()> {
    let chart = chart()?;
    let client = shared().await?.client()?;
    ensure_namespace(&client, "kubeflow").await?;
    install_istio_crds(&client).await?;
    let principal = "istio.metricsPrincipals[0]=cluster.local/ns/monitoring/sa/prometheus";
    for mode in ["sidecar", "ambient"] {
        let objects = chart.template(&[
            "istio.enabled=true",
            &format!("istio.mode={mode}"),
            principal,
        ])?;
        let policy = one_of(&objects, "AuthorizationPolicy")?;
        let mut keys = Vec::new();
        rule_keys(&policy.data["spec"]["rules"], &mut keys);
        let l7 = keys.iter().any(|k| k == "methods" || k == "paths");
        ensure!(
            keys.iter().any(|k| k == "ports") && keys.iter().any(|k| k == "principals"),
            "{mode}: {keys:?}"
        );
        ensure!(l7 == (mode == "sidecar"), "{mode}: L7 keys {l7}: {keys:?}");
        apply(&client, &objects, true).await?;
        println!("istio {mode}: rule keys {keys:?}, dry-run applied");
    }
    ensure!(
        chart
            .template(&["istio.enabled=true", "istio.mode=waypoint"])
            .is_err(),
        "istio.mode=waypoint was accepted"
    );
    Ok(())
}

/// The `helm test` pod's script of a release `pipewarden` in `namespace`, with the Service's
/// URL pointed at `addr`.
pub(crate) fn test_script(
    chart: &Chart,
    namespace: &str,
    sets: &[&str],
    addr: &str,
) -> Result<String> {
    let rendered = chart.run(
        &[
            "template",
            "pipewarden",
            "-n",
            namespace,
            "--show-only",
            "templates/tests/readiness.yaml",
        ],
        sets,
    )?;
    let pod = one_of(&documents(&rendered)?, "Pod")?.clone();
    ensure!(
        pod.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("helm.sh/hook"))
            .map(String::as_str)
            == Some("test"),
        "the test pod is not a helm test hook"
    );
    let command = &pod.data["spec"]["containers"][0]["command"];
    let script = command[2].as_str().context("sh -c SCRIPT")?;
    let service = format!("http://pipewarden-metrics.{namespace}.svc:9090");
    ensure!(script.contains(&service), "{script}");
    Ok(script.replace(&service, &format!("http://{addr}")))
}

pub(crate) fn run_script(script: &str) -> Result<(bool, String)> {
    let output = Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((output.status.success(), text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_tests_script_passes_on_a_ready_report_only_replica_and_fails_on_a_wrong_mode()
-> Result<()> {
    let binary = pipewarden_binary()?;
    let control_plane = shared().await?;
    let namespace = control_plane.ns().await?;
    let dir = TempDir::new("helm-test")?;
    let policy_dir = dir.path().join("policy");
    std::fs::create_dir_all(&policy_dir)?;
    let files = policy_files(&built_policy("kfp-default"), &repo_path(DEFAULT_SETTINGS))?;
    PolicyVolume::new(&policy_dir).publish(&files)?;
    let http_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let pod = Pod {
        name: "pipewarden-0",
        namespace: &namespace,
        http_port,
    };
    let env = deployment_env(dir.path(), &pod)?;
    let mut process = tokio::process::Command::new(&binary)
        .arg("run")
        .env_clear()
        .envs(env)
        .env("KUBECONFIG", control_plane.kubeconfig())
        .env("PIPEWARDEN_NAMESPACES", &namespace)
        .env("PIPEWARDEN_TARGET_VERSION", TARGET)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("pipewarden.log"))?)
        .kill_on_drop(true)
        .spawn()?;
    let addr = format!("127.0.0.1:{http_port}");
    let chart = chart()?;
    let script = test_script(&chart, "kubeflow", &[], &addr)?;
    let passed = pipewarden_tests::wait::until("helm test's script to pass", WAIT, || async {
        let (ok, text) = run_script(&script)?;
        Ok(ok.then_some(text))
    })
    .await
    .with_context(|| {
        std::fs::read_to_string(dir.path().join("pipewarden.log")).unwrap_or_default()
    })?;
    ensure!(passed.contains("mode report-only"), "{passed}");
    // Against the same report-only replica, the script of an enforcing release fails.
    let enforcing = test_script(&chart, "kubeflow", &["enforce=true"], &addr)?;
    let (ok, text) = run_script(&enforcing)?;
    ensure!(
        !ok,
        "the enforce=true test passed on a report-only replica: {text}"
    );
    let _ = process.kill().await;
    println!(
        "helm test script: passes on the report-only replica ({}), fails for enforce=true",
        passed.trim().replace('\n', "; ")
    );
    Ok(())
}
