//! Reconciling N SWFs as KFP 2.3 left them, on the local control plane: pipewarden's loop
//! beside the upstream baseline (`upstream.rs`), each on its own copy of the SWFs, each with a
//! first pass (every SWF stale) and a restart (nothing to do; pipewarden's restart also runs
//! two resyncs, to show its memory stays flat). Each run is a process of its own (`child.rs`),
//! so its peak RSS and its CPU time (user + system, `/proc/self/stat`, over the pass) are its
//! own; requests are counted by a layer on its client.
//!
//! `make bench-swf` (`SWFS=N`, default 2,000), `make bench-swf-10k`, or
//! `PIPEWARDEN_BENCH_SWFS=N cargo bench -p pipewarden-tests --bench swf_reconcile`.

mod child;
mod cpu;
mod rss;
mod upstream;

use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{DynamicObject, PostParams};
use pipewarden_tests::swf_support::*;

/// Resync passes pipewarden's restart run measures (the first is the restart itself).
const RESTART_PASSES: usize = 3;

struct Row {
    run: &'static str,
    measured: child::Measured,
    /// The upstream-style run this one is compared with.
    baseline: Option<usize>,
}

fn main() -> Result<()> {
    // A child runs one side in its own process.
    if let Ok(role) = std::env::var(child::ROLE) {
        return child::main(&role);
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(parent())
}

async fn parent() -> Result<()> {
    let count: usize = std::env::var("PIPEWARDEN_BENCH_SWFS")
        .map(|n| n.parse().context("PIPEWARDEN_BENCH_SWFS"))
        .unwrap_or(Ok(2000))?;
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let upstream_ns = control_plane.ns().await?;
    let pipewarden_ns = control_plane.ns().await?;
    let started = Instant::now();
    seed_many(&client, &upstream_ns, count).await?;
    seed_many(&client, &pipewarden_ns, count).await?;
    eprintln!("seeded 2 x {count} SWFs in {:.1?}", started.elapsed());

    let spec = |role, namespace, outcome, passes| child::Spec {
        role,
        kubeconfig: control_plane.kubeconfig(),
        namespace,
        count,
        outcome,
        passes,
    };
    let mut rows = Vec::new();
    for run in ["upstream-style, first pass", "upstream-style, restart"] {
        let measured = child::run(&spec("upstream", &upstream_ns, "", 1)).await?;
        eprintln!("{run}: {} SWFs written", measured.swf_writes);
        rows.push(Row {
            run,
            measured,
            baseline: None,
        });
    }
    let first = child::run(&spec("pipewarden", &pipewarden_ns, "rebuild", 1)).await?;
    rows.push(Row {
        run: "pipewarden, first pass",
        measured: first,
        baseline: Some(0),
    });
    let restart = spec("pipewarden", &pipewarden_ns, "up-to-date", RESTART_PASSES);
    rows.push(Row {
        run: "pipewarden, restart",
        measured: child::run(&restart).await?,
        baseline: Some(1),
    });

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

/// The SWFs the bench creates in `namespace`: half without, half with runtime parameters. The
/// upstream side reconciles these as its job rows.
pub fn jobs(namespace: &str, count: usize) -> Result<Vec<DynamicObject>> {
    let plain = fixture("kfp-2.3")?;
    let with_parameters = fixture("kfp-2.3-parameters")?;
    Ok((0..count)
        .map(|i| {
            let mut swf = if i % 2 == 0 {
                plain.clone()
            } else {
                with_parameters.clone()
            };
            swf.metadata.name = Some(format!("daily-{i:05}"));
            swf.metadata.namespace = Some(namespace.to_owned());
            swf
        })
        .collect())
}

/// Creates [`jobs`], 16 at a time.
async fn seed_many(client: &kube::Client, namespace: &str, count: usize) -> Result<()> {
    let api = swfs(client, namespace);
    futures::stream::iter(jobs(namespace, count)?)
        .map(|swf| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &swf).await }
        })
        .buffer_unordered(16)
        .try_for_each(|_| async { Ok(()) })
        .await
        .context("seeding")
}

fn print_table(count: usize, rows: &[Row]) {
    let per_swf = |n: usize| format!("{:.3}", n as f64 / count as f64);
    let mib = |kib: u64| format!("{:.0} MiB", kib as f64 / 1024.0);
    let headers = [
        "run",
        "wall",
        "vs upstream",
        "CPU-s/1k SWFs",
        "CPU vs upstream",
        "SWF reads",
        "SWF writes",
        "Events",
        "requests/SWF",
        "peak RSS",
    ];
    let cells: Vec<[String; 10]> = rows
        .iter()
        .map(|row| {
            let m = &row.measured;
            let ratio = |of: fn(&child::Measured) -> f64| {
                row.baseline.map_or("-".to_owned(), |b| {
                    format!("{:.2}x", of(m) / of(&rows[b].measured))
                })
            };
            [
                row.run.to_owned(),
                format!("{:.2} s", m.wall_secs),
                ratio(|m| m.wall_secs),
                format!("{:.2}", m.cpu_secs * 1000.0 / count as f64),
                ratio(|m| m.cpu_secs),
                m.swf_reads.to_string(),
                m.swf_writes.to_string(),
                m.events.to_string(),
                per_swf(m.requests),
                mib(m.peak_rss_kib),
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
    if let Some(restart) = rows.last() {
        let after: Vec<String> = restart
            .measured
            .rss_after_pass_kib
            .iter()
            .map(|kib| mib(*kib))
            .collect();
        println!(
            "\n{}: RSS after each of {} passes: {}",
            restart.run,
            after.len(),
            after.join(", ")
        );
    }
}
