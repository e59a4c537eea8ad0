//! The fleet gauges against `plan` on the same objects: the real `pipewarden run` (rebuild
//! policy `disable`, completions notified to a receiver, `--metrics-swf-namespaces`) over two
//! namespaces of stale, reference-only and current SWFs and two completions; its
//! `pipewarden_swfs{swf_namespace,state}` and `pipewarden_exit_completions{state}` equal what
//! `pipewarden plan -o json` counts, before and after an SWF is deleted. No OpenReports CRD is
//! installed in this test binary's control plane: the controller says so in one log line and
//! counts no failed report write.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::exit_support::{Receiver, set_phase, submit, timestamp, workflows};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::{seed, swfs};
use serde_json::Value;

/// `(namespace, state) -> count` of the SWF gauge, and `state -> count` of the completions'.
type Counts = (BTreeMap<(String, String), u64>, BTreeMap<String, u64>);

/// The samples of one metric in a scrape: labels and value.
fn samples(scrape: &str, metric: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    scrape
        .lines()
        .filter_map(|line| line.strip_prefix(metric))
        .filter_map(|rest| rest.strip_prefix('{'))
        .filter_map(|rest| rest.split_once("} "))
        .map(|(labels, value)| {
            let labels = labels
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
                .collect();
            (labels, value.trim().parse().unwrap_or(f64::NAN))
        })
        .collect()
}

fn gauges(scrape: &str) -> Counts {
    let swfs = samples(scrape, "pipewarden_swfs")
        .into_iter()
        .filter(|(_, value)| *value > 0.0)
        .map(|(labels, value)| {
            let key = (labels["swf_namespace"].clone(), labels["state"].clone());
            (key, value as u64)
        })
        .collect();
    let completions = samples(scrape, "pipewarden_exit_completions")
        .into_iter()
        .filter(|(_, value)| *value > 0.0)
        .map(|(labels, value)| (labels["state"].clone(), value as u64))
        .collect();
    (swfs, completions)
}

/// The same counts from `plan -o json`'s summary (the marks' states only: `observed` is the
/// controller's memory, and `unmarked` is no state of the gauge).
fn planned(report: &Value) -> Result<Counts> {
    let mut swfs = BTreeMap::new();
    for namespace in report["summary"]["swfs"]["namespaces"]
        .as_array()
        .context("summary.swfs.namespaces")?
    {
        let name = namespace["namespace"].as_str().context("namespace")?;
        for (state, count) in namespace["states"].as_object().context("states")? {
            let count = count.as_u64().context("a count")?;
            if count > 0 {
                swfs.insert((name.to_owned(), state.clone()), count);
            }
        }
    }
    let completions = report["summary"]["completions"]
        .as_object()
        .context("summary.completions")?
        .iter()
        .filter(|(state, _)| *state != "unmarked")
        .map(|(state, count)| (state.clone(), count.as_u64().unwrap_or(0)))
        .collect();
    Ok((swfs, completions))
}

/// `pipewarden plan -o json` over `namespaces`, configured as the controller is.
fn plan(binary: &Path, kubeconfig: &Path, namespaces: &str) -> Result<Value> {
    let output = std::process::Command::new(binary)
        .args(["plan", "-o", "json", "--quiet"])
        .env_clear()
        .env("KUBECONFIG", kubeconfig)
        .env("PIPEWARDEN_NAMESPACES", namespaces)
        .env("PIPEWARDEN_POLICY", built_policy("kfp-default"))
        .env("PIPEWARDEN_SETTINGS", repo_path(DEFAULT_SETTINGS))
        .env("PIPEWARDEN_TARGET_VERSION", TARGET)
        .env("ML_PIPELINE_SCHEDULEDRUNS_REBUILDPOLICY", "disable")
        .output()?;
    ensure!(
        output.status.success(),
        "plan failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).context("plan -o json")
}

/// Waits until the gauges equal plan's counts; returns them.
async fn settled(
    addr: SocketAddr,
    binary: &Path,
    kubeconfig: &Path,
    namespaces: &str,
) -> Result<Counts> {
    let last = std::sync::Mutex::new(None);
    let found = pipewarden_tests::wait::until("the gauges to match plan", WAIT, || async {
        let (status, scrape) = http_get(addr, "/metrics").await?;
        ensure!(status == 200);
        let gauges = gauges(&scrape);
        let planned = planned(&plan(binary, kubeconfig, namespaces)?)?;
        let same = gauges == planned;
        *last.lock().unwrap() = Some((gauges, planned.clone()));
        Ok(same.then_some(planned))
    })
    .await;
    found.with_context(|| format!("gauges, plan: {:?}", last.lock().unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_gauges_match_plans_summary_and_no_report_crd_is_one_log_line() -> Result<()> {
    let binary = pipewarden_binary()?;
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let kubeconfig = control_plane.kubeconfig();
    let (a, b) = (control_plane.ns().await?, control_plane.ns().await?);
    seed(&client, &a, "kfp-2.3", "stale", 2).await?;
    seed(&client, &a, "kfp-reference-only", "reference", 1).await?;
    seed(&client, &b, "kfp-2.3", "stale", 1).await?;
    seed(&client, &b, "kfp-2.17", "current", 1).await?;
    let api = workflows(&client, &a);
    for (name, finished) in [("fresh", timestamp(0)), ("old", timestamp(3 * 3600))] {
        let running = set_phase(&api, &submit(&api, name).await?, "Running", None).await?;
        set_phase(&api, &running, "Succeeded", Some(&finished)).await?;
    }
    let receiver = Receiver::start().await?;
    let dir = TempDir::new("fleet")?;
    let log_path = dir.path().join("pipewarden.log");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let namespaces = format!("{a},{b}");
    let mut process = tokio::process::Command::new(&binary)
        .arg("run")
        .args(["--rebuild-policy", "disable", "--metrics-swf-namespaces"])
        .args([
            "--reports-interval",
            "1s",
            "--exit-webhook-url",
            &receiver.url,
        ])
        .args([
            "--decision-timeout-ms",
            "5000",
            "--render-timeout-ms",
            "5000",
        ])
        .env_clear()
        .env("KUBECONFIG", kubeconfig)
        .env("PIPEWARDEN_NAMESPACES", &namespaces)
        .env("PIPEWARDEN_POLICY", built_policy("kfp-default"))
        .env("PIPEWARDEN_SETTINGS", repo_path(DEFAULT_SETTINGS))
        .env("PIPEWARDEN_TARGET_VERSION", TARGET)
        .env("PIPEWARDEN_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("PIPEWARDEN_LOG_FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path)?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let ready = pipewarden_tests::wait::until("/readyz", WAIT, || async {
        Ok(matches!(http_get(addr, "/readyz").await, Ok((200, _))).then_some(()))
    })
    .await;
    ready.with_context(|| std::fs::read_to_string(&log_path).unwrap_or_default())?;

    let before = settled(addr, &binary, kubeconfig, &namespaces).await?;
    println!("gauges = plan: {before:?}");
    let state = |ns: &str, state: &str| before.0.get(&(ns.to_owned(), state.to_owned())).copied();
    ensure!(state(&a, "would-rebuild") == Some(2), "{before:?}");
    ensure!(state(&a, "not-rebuildable") == Some(1), "{before:?}");
    // KFP 2.17's own SWF fixture predates 2.17.0's last compiler change: it differs too.
    ensure!(state(&b, "would-rebuild") == Some(2), "{before:?}");
    ensure!(
        before.1.get("notified") == Some(&1) && before.1.get("skipped") == Some(&1),
        "{before:?}"
    );

    swfs(&client, &b)
        .delete("stale-0", &Default::default())
        .await?;
    let after = settled(addr, &binary, kubeconfig, &namespaces).await?;
    ensure!(
        after.0.get(&(b.clone(), "would-rebuild".into())) == Some(&1),
        "{after:?}"
    );

    // Several report intervals passed meanwhile: one line, no failed write.
    let (_, scrape) = http_get(addr, "/metrics").await?;
    ensure!(
        sample(&scrape, "pipewarden_report_writes_total{outcome=\"error\"}") == 0.0,
        "{scrape}"
    );
    let pid = process.id().context("no pid")?.to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()?;
    tokio::time::timeout(WAIT, process.wait()).await??;
    let log = std::fs::read_to_string(&log_path)?;
    let said: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("policy reports"))
        .collect();
    ensure!(
        said.len() == 1 && said[0].contains("is not installed"),
        "policy report lines: {said:?}"
    );
    ensure!(
        !log.lines().any(|line| line.contains("\"level\":\"ERROR\"")),
        "an error was logged:\n{log}"
    );
    Ok(())
}
