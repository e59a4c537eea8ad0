//! Reconciling 2,000 SWFs as KFP 2.3 left them, on the local control plane: pipewarden's loop
//! beside the upstream baseline (`upstream.rs`), each on its own copy of the SWFs, each with a
//! first pass (every SWF stale) and a restart (nothing to do). Requests are counted by a layer
//! on each client: every request it sent.
//!
//! `make bench-swf`, or `cargo bench -p pipewarden-tests --bench swf_reconcile`;
//! `PIPEWARDEN_BENCH_SWFS` changes the count.

#[path = "../../e2e/swf_support/mod.rs"]
mod swf_support;
mod upstream;

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use futures::{StreamExt as _, TryStreamExt as _};
use http::Method;
use kube::api::{DynamicObject, PostParams};
use pipewarden::cli::policy_args::read_settings;
use pipewarden::engine::{Policy, PolicyOptions, RenderContext};
use pipewarden_tests::ControlPlane;
use swf_support::*;

/// Time allowed for one pass of the controller.
const PASS_TIMEOUT: Duration = Duration::from_secs(600);

struct Row {
    run: &'static str,
    wall: Duration,
    /// Every request the run's client sent.
    requests: Vec<(Method, String)>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let count: usize = std::env::var("PIPEWARDEN_BENCH_SWFS")
        .map(|n| n.parse().context("PIPEWARDEN_BENCH_SWFS"))
        .unwrap_or(Ok(2000))?;
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let upstream_ns = control_plane.ns().await?;
    let pipewarden_ns = control_plane.ns().await?;
    let started = Instant::now();
    let jobs = seed_many(&client, &upstream_ns, count).await?;
    seed_many(&client, &pipewarden_ns, count).await?;
    eprintln!("seeded 2 x {count} SWFs in {:.1?}", started.elapsed());

    let mut rows = Vec::new();
    for run in ["upstream-style, first pass", "upstream-style, restart"] {
        rows.push(upstream_pass(control_plane, &upstream_ns, &jobs, run).await?);
    }
    // The SWF loop alone: the exit gate would add its own Workflow list and watch.
    let args =
        ControllerArgs::new(std::slice::from_ref(&pipewarden_ns)).set("--exit-gate", "false");
    rows.push(
        pipewarden_pass(
            control_plane,
            &args,
            "rebuild",
            count,
            "pipewarden, first pass",
        )
        .await?,
    );
    rows.push(
        pipewarden_pass(
            control_plane,
            &args,
            "up-to-date",
            count,
            "pipewarden, restart",
        )
        .await?,
    );

    for namespace in [&upstream_ns, &pipewarden_ns] {
        let all = list(&client, namespace).await?;
        let stale = all.iter().filter(|swf| !on_target(swf)).count();
        ensure!(
            all.len() == count && stale == 0,
            "{namespace}: {stale} SWFs not rebuilt"
        );
    }
    print_table(count, &rows);
    Ok(())
}

fn on_target(swf: &DynamicObject) -> bool {
    driver_images(swf).is_ok_and(|images| {
        images
            .iter()
            .all(|i| i == "ghcr.io/kubeflow/kfp-driver:2.17.0")
    })
}

/// Half without, half with runtime parameters; 16 creates in flight.
async fn seed_many(
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> Result<Vec<DynamicObject>> {
    let plain = fixture("kfp-2.3")?;
    let with_parameters = fixture("kfp-2.3-parameters")?;
    let api = swfs(client, namespace);
    futures::stream::iter(0..count)
        .map(|i| {
            let mut swf = if i % 2 == 0 {
                plain.clone()
            } else {
                with_parameters.clone()
            };
            swf.metadata.name = Some(format!("daily-{i:04}"));
            swf.metadata.namespace = Some(namespace.to_owned());
            let api = api.clone();
            async move { api.create(&PostParams::default(), &swf).await }
        })
        .buffered(16)
        .try_collect()
        .await
        .context("seeding")
}

async fn upstream_pass(
    control_plane: &ControlPlane,
    namespace: &str,
    jobs: &[DynamicObject],
    run: &'static str,
) -> Result<Row> {
    let policy = Policy::load(&built_policy(DEFAULT_POLICY), PolicyOptions::default())?;
    let context = RenderContext {
        target_version: Some(TARGET.to_owned()),
        settings: read_settings(Some(&repo_path(DEFAULT_SETTINGS)))?,
    };
    let log = RequestLog::default();
    let api = swfs(
        &log.client(control_plane.config().clone(), false)?,
        namespace,
    );
    let started = Instant::now();
    let written = upstream::reconcile_all(&api, jobs, &policy, &context).await?;
    let wall = started.elapsed();
    eprintln!("{run}: {written} SWFs written");
    Ok(Row {
        run,
        wall,
        requests: log.all(),
    })
}

/// Starts the controller and times it until `outcome` was decided for every SWF.
async fn pipewarden_pass(
    control_plane: &ControlPlane,
    args: &ControllerArgs,
    outcome: &str,
    count: usize,
    run: &'static str,
) -> Result<Row> {
    let started = Instant::now();
    let running = args.start(control_plane).await?;
    let what = format!("{count} `{outcome}` decisions");
    pipewarden_tests::wait::until(&what, PASS_TIMEOUT, || async {
        Ok((running.decisions(outcome) >= count as u64).then_some(()))
    })
    .await?;
    let wall = started.elapsed();
    // Each rebuild's Event is posted just after its decision is counted.
    let events = if outcome == "rebuild" { count } else { 0 };
    pipewarden_tests::wait::until("the Events", PASS_TIMEOUT, || async {
        Ok((count_events(&running.requests.all()) >= events).then_some(()))
    })
    .await?;
    let row = Row {
        run,
        wall,
        requests: running.requests.all(),
    };
    running.stop().await;
    Ok(row)
}

fn count_events(requests: &[(Method, String)]) -> usize {
    requests
        .iter()
        .filter(|(_, path)| path.contains("/events"))
        .count()
}

fn print_table(count: usize, rows: &[Row]) {
    let per_swf = |n: usize| format!("{:.3}", n as f64 / count as f64);
    let headers = [
        "run",
        "wall",
        "SWF reads",
        "SWF writes",
        "Events",
        "requests/SWF",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let swf = |r: &&(Method, String)| r.1.contains("/scheduledworkflows");
            let (reads, writes): (Vec<_>, Vec<_>) = row
                .requests
                .iter()
                .filter(swf)
                .partition(|r| r.0 == Method::GET);
            [
                row.run.to_owned(),
                format!("{:.2} s", row.wall.as_secs_f64()),
                reads.len().to_string(),
                writes.len().to_string(),
                count_events(&row.requests).to_string(),
                per_swf(row.requests.len()),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].len())
                .chain([headers[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    println!("\nReconciling {count} SWFs as KFP 2.3 left them (half with 3 runtime parameters):\n");
    line(&headers);
    for row in &cells {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
}
