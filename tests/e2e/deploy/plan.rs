//! `pipewarden plan` against the local control plane, as an operator runs it before turning
//! the controller on: the real binary with a kubeconfig, the default policy and settings. A
//! stale SWF, a reference-only SWF, a fresh completion, an old one and a running workflow get
//! the rows the controller's decisions give; nothing on the cluster changes; `--exit-code` is 1.
//! Then the controller runs (enforcing) and a second plan finds nothing to write: 0.

use std::collections::BTreeMap;
use std::process::Output;

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt as _};
use pipewarden_tests::exit_support::{Receiver, set_phase, submit, timestamp, workflows};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::{ControllerArgs, seed, swfs};
use serde_json::Value;

use pipewarden_tests::deploy_support::*;

/// `pipewarden plan ARGS` on `namespace`, the way `run` is configured by its environment.
fn plan(
    kubeconfig: &std::path::Path,
    namespace: &str,
    target: &str,
    args: &[&str],
) -> Result<Output> {
    let output = std::process::Command::new(pipewarden_binary()?)
        .arg("plan")
        .args(args)
        .env_clear()
        .env("KUBECONFIG", kubeconfig)
        .env("PIPEWARDEN_NAMESPACES", namespace)
        .env("PIPEWARDEN_POLICY", built_policy("kfp-default"))
        .env("PIPEWARDEN_SETTINGS", repo_path(DEFAULT_SETTINGS))
        .env("PIPEWARDEN_TARGET_VERSION", target)
        .output()?;
    ensure!(
        output.status.code().is_some_and(|code| code < 2),
        "plan failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(output)
}

/// `name -> plan` of one list of the JSON report.
fn plans(report: &Value, list: &str, key: &str) -> BTreeMap<String, String> {
    report[list]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let name = row[key].as_str().unwrap_or_default();
            let name = name.rsplit('/').next().unwrap_or_default().to_owned();
            (name, row["plan"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Every resourceVersion and Event in the namespace: what a write would move.
async fn snapshot(client: &Client, namespace: &str) -> Result<(Vec<String>, usize)> {
    let mut versions = Vec::new();
    for swf in swfs(client, namespace).list(&ListParams::default()).await? {
        versions.push(format!(
            "swf {} {}",
            swf.name_any(),
            swf.resource_version().unwrap_or_default()
        ));
    }
    for workflow in workflows(client, namespace)
        .list(&ListParams::default())
        .await?
    {
        let rv = workflow.resource_version().unwrap_or_default();
        versions.push(format!("workflow {} {rv}", workflow.name_any()));
    }
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    Ok((
        versions,
        events.list(&ListParams::default()).await?.items.len(),
    ))
}

fn sorted(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_reads_the_cluster_says_what_run_would_do_and_writes_nothing() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let kubeconfig = control_plane.kubeconfig();
    seed(&client, &namespace, "kfp-2.3", "stale", 1).await?;
    seed(&client, &namespace, "kfp-reference-only", "reference", 1).await?;
    let api = workflows(&client, &namespace);
    for (name, finished) in [
        ("fresh", Some(timestamp(0))),
        ("old", Some(timestamp(3 * 3600))),
        ("running", None),
    ] {
        let running = set_phase(&api, &submit(&api, name).await?, "Running", None).await?;
        if let Some(at) = finished {
            set_phase(&api, &running, "Succeeded", Some(&at)).await?;
        }
    }
    let before = snapshot(&client, &namespace).await?;

    let output = plan(
        kubeconfig,
        &namespace,
        TARGET,
        &["-o", "json", "--exit-code"],
    )?;
    let report: Value = serde_json::from_slice(&output.stdout).context("plan -o json")?;
    ensure!(
        output.status.code() == Some(1),
        "--exit-code with writes to plan: {:?}",
        output.status
    );
    let swf_plans = plans(&report, "swfs", "swf");
    ensure!(
        swf_plans
            == sorted(&[
                ("stale-0", "would rebuild"),
                ("reference-0", "not rebuildable")
            ]),
        "{swf_plans:?}"
    );
    let workflow_plans = plans(&report, "workflows", "workflow");
    ensure!(
        workflow_plans == sorted(&[("fresh", "would notify"), ("old", "skip")]),
        "{workflow_plans:?}"
    );
    let stale = report["swfs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["plan"] == "would rebuild"));
    let changes = stale
        .map(|row| row["changes"].as_array().map_or(0, Vec::len))
        .unwrap_or(0);
    ensure!(
        changes > 0,
        "the would-rebuild row names no field: {stale:?}"
    );

    let table = plan(kubeconfig, &namespace, TARGET, &[])?;
    let table = String::from_utf8(table.stdout)?;
    println!("{table}");
    ensure!(table.contains("SWF") && table.contains("WORKFLOW") && table.contains("would notify"));

    let unsupported = plan(kubeconfig, &namespace, "2.18.0", &["-o", "yaml"])?;
    let unsupported: Value = serde_yaml::from_slice(&unsupported.stdout)?;
    ensure!(plans(&unsupported, "swfs", "swf")["stale-0"] == "unsupported target");

    ensure!(
        snapshot(&client, &namespace).await? == before,
        "plan changed the cluster"
    );

    // Enforce, then plan again: nothing left to write.
    let receiver = Receiver::start().await?;
    let controller = ControllerArgs::new(std::slice::from_ref(&namespace))
        .set("--exit-webhook-url", &receiver.url)
        .start(control_plane)
        .await?;
    controller.wait_for_decisions("rebuild", 1).await?;
    wait_for("the fresh completion's POST", || receiver.requests() == 1).await?;
    let settled = || async {
        let report = plan(
            kubeconfig,
            &namespace,
            TARGET,
            &["-o", "json", "--exit-code"],
        )?;
        let code = report.status.code();
        let report: Value = serde_json::from_slice(&report.stdout)?;
        Ok::<_, anyhow::Error>((
            code,
            plans(&report, "swfs", "swf"),
            plans(&report, "workflows", "workflow"),
        ))
    };
    let after = pipewarden_tests::wait::until(
        "the controller to settle what plan listed",
        WAIT,
        || async {
            let (code, swf_plans, workflow_plans) = settled().await?;
            Ok((code == Some(0)).then_some((swf_plans, workflow_plans)))
        },
    )
    .await?;
    controller.stop().await;
    ensure!(
        after.0
            == sorted(&[
                ("stale-0", "up to date"),
                ("reference-0", "not rebuildable")
            ]),
        "{:?}",
        after.0
    );
    ensure!(
        after.1 == sorted(&[("fresh", "already notified"), ("old", "already skipped")]),
        "{:?}",
        after.1
    );
    Ok(())
}
