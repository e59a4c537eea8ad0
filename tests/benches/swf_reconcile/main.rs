//! Reconciling N SWFs as KFP 2.3 left them, on the local control plane: pipewarden's loop
//! beside the upstream baseline (`upstream.rs`), each on its own copy of the SWFs. With one
//! shard: a first pass (every SWF stale) and a restart (nothing to do; pipewarden's restart
//! also runs two resyncs, to show its memory stays flat). With SHARDS > 1: the first pass only,
//! pipewarden as that many shard processes at once, each with its own Lease, and a CPU profile
//! of kube-apiserver during it (`profile.rs`). Each run is a process of its own (`child.rs`), so
//! its peak RSS and its CPU time (user + system, over the pass) are its own; requests are
//! counted by a layer on its client; kube-apiserver's and etcd's CPU over each run come from
//! `/proc`.
//!
//! With ROUNDS > 1 (one shard), the first passes run again that many times in all, each pair on
//! fresh SWFs, and the table ends with the median ratio: the machine's speed drifts from one
//! minute to the next, so a ratio is taken only within a round.
//!
//! `make bench-swf` (`SWFS=N`, default 2,000; `SHARDS=N`, default 1; `ROUNDS=N`, default 3),
//! `make bench-swf-10k`, or `PIPEWARDEN_BENCH_SWFS=N PIPEWARDEN_BENCH_SHARDS=N
//! PIPEWARDEN_BENCH_ROUNDS=N cargo bench -p pipewarden-tests --bench swf_reconcile`.

mod child;
mod profile;
mod table;
mod upstream;

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{DynamicObject, PostParams};
use pipewarden::config::Shard;
use pipewarden_tests::swf_support::*;
use pipewarden_tests::{ControlPlane, procfs};

use table::{Row, ServerClock, Servers};

/// Resync passes pipewarden's restart run measures (the first is the restart itself).
const RESTART_PASSES: usize = 3;

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

fn number(name: &str, default: usize) -> Result<usize> {
    std::env::var(name).map_or(Ok(default), |n| n.parse().context(name.to_owned()))
}

async fn parent() -> Result<()> {
    let count = number("PIPEWARDEN_BENCH_SWFS", 2000)?;
    let shards = number("PIPEWARDEN_BENCH_SHARDS", 1)?;
    ensure!(shards >= 1, "PIPEWARDEN_BENCH_SHARDS must be at least 1");
    let rounds = number("PIPEWARDEN_BENCH_ROUNDS", 1)?;
    ensure!(
        rounds >= 1 && (shards == 1 || rounds == 1),
        "PIPEWARDEN_BENCH_ROUNDS must be at least 1, and 1 with PIPEWARDEN_BENCH_SHARDS > 1"
    );
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let upstream_ns = control_plane.ns().await?;
    let pipewarden_ns = control_plane.ns().await?;
    let started = Instant::now();
    seed_many(&client, &upstream_ns, count).await?;
    seed_many(&client, &pipewarden_ns, count).await?;
    eprintln!("seeded 2 x {count} SWFs in {:.1?}", started.elapsed());

    let spec = |role, namespace, outcome, passes, shard| child::Spec {
        role,
        kubeconfig: control_plane.kubeconfig(),
        namespace,
        count,
        outcome,
        passes,
        shard,
    };
    let mut rows = Vec::new();
    let upstream_runs: &[&str] = if shards == 1 {
        &["upstream-style, first pass", "upstream-style, restart"]
    } else {
        &["upstream-style, first pass"]
    };
    for run in upstream_runs {
        let upstream = spec("upstream", &upstream_ns, "", 1, None);
        let row = measure(control_plane, &upstream, run, None).await?;
        eprintln!("{run}: {} SWFs written", row.measured.swf_writes);
        rows.push(row);
    }
    let first_pass = if shards == 1 {
        let first = spec("pipewarden", &pipewarden_ns, "rebuild", 1, None);
        rows.push(measure(control_plane, &first, table::FIRST_PASS, Some(0)).await?);
        let restart = spec(
            "pipewarden",
            &pipewarden_ns,
            "up-to-date",
            RESTART_PASSES,
            None,
        );
        rows.push(measure(control_plane, &restart, "pipewarden, restart", Some(1)).await?);
        rows.len() - 2..rows.len() - 1
    } else {
        let from = rows.len();
        let owned = owned_per_shard(&client, &pipewarden_ns, shards).await?;
        let servers = ServerClock::start(control_plane);
        let children = owned.into_iter().enumerate().map(|(index, owned)| {
            let shard = child::Spec {
                count: owned,
                ..spec(
                    "pipewarden",
                    &pipewarden_ns,
                    "rebuild",
                    1,
                    Some(format!("{index}/{shards}")),
                )
            };
            async move { child::run(&shard).await }
        });
        let (measured, profile) = tokio::join!(
            futures::future::try_join_all(children),
            profile::apiserver(&client, profile::DELAY, profile::SECONDS),
        );
        let servers = servers.stop();
        for (index, measured) in measured?.into_iter().enumerate() {
            let run = format!("pipewarden, shard {index}/{shards}");
            rows.push(Row::new(&run, measured, Some(0), Servers::default()));
        }
        let all = Row::sum(
            &format!("pipewarden, {shards} shards"),
            &rows[from..],
            servers,
        );
        rows.push(all);
        profile::report(profile);
        from..from + shards
    };

    all_rebuilt(&client, [&upstream_ns, &pipewarden_ns], count).await?;
    let written = written_once(count, &rows[first_pass])?;
    // Each round's SWFs are deleted when it ends, so the next starts from the same store.
    if rounds > 1 {
        delete_all(&client, [&upstream_ns, &pipewarden_ns]).await?;
    }
    for round in 2..=rounds {
        let upstream_ns = control_plane.ns().await?;
        let pipewarden_ns = control_plane.ns().await?;
        seed_many(&client, &upstream_ns, count).await?;
        seed_many(&client, &pipewarden_ns, count).await?;
        let baseline = rows.len();
        // The round's own namespace in place of the first round's.
        let upstream = child::Spec {
            namespace: &upstream_ns,
            ..spec("upstream", "", "", 1, None)
        };
        let run = format!("upstream-style, first pass, round {round}");
        rows.push(measure(control_plane, &upstream, &run, None).await?);
        let first = child::Spec {
            namespace: &pipewarden_ns,
            ..spec("pipewarden", "", "rebuild", 1, None)
        };
        let run = format!("{}, round {round}", table::FIRST_PASS);
        rows.push(measure(control_plane, &first, &run, Some(baseline)).await?);
        all_rebuilt(&client, [&upstream_ns, &pipewarden_ns], count).await?;
        written_once(count, &rows[rows.len() - 1..])?;
        delete_all(&client, [&upstream_ns, &pipewarden_ns]).await?;
        eprintln!("round {round} of {rounds}: both sides rebuilt all {count} SWFs");
    }
    table::print(count, &rows);
    println!("\npipewarden's first pass: {written}");
    print_server_memory(control_plane);
    Ok(())
}

/// One child run as a table row, with the servers' CPU over it; `baseline` is the row its
/// ratios are taken against.
async fn measure(
    control_plane: &ControlPlane,
    spec: &child::Spec<'_>,
    run: &str,
    baseline: Option<usize>,
) -> Result<Row> {
    let servers = ServerClock::start(control_plane);
    let measured = child::run(spec).await?;
    Ok(Row::new(run, measured, baseline, servers.stop()))
}

/// Checks that every SWF in each namespace is on the target.
async fn all_rebuilt(client: &kube::Client, namespaces: [&str; 2], count: usize) -> Result<()> {
    for namespace in namespaces {
        let all = list(client, namespace).await?;
        let stale = all.iter().filter(|swf| !on_target(swf)).count();
        ensure!(
            all.len() == count && stale == 0,
            "{namespace}: {stale} SWFs not rebuilt"
        );
    }
    Ok(())
}

async fn delete_all(client: &kube::Client, namespaces: [&str; 2]) -> Result<()> {
    for namespace in namespaces {
        swfs(client, namespace)
            .delete_collection(&Default::default(), &Default::default())
            .await
            .with_context(|| format!("deleting the SWFs in {namespace}"))?;
    }
    Ok(())
}

/// How many of the SWFs in `namespace` each of `shards` shards owns, counted here so that no
/// shard process holds a list of them all.
async fn owned_per_shard(
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> Result<Vec<usize>> {
    let shards: Vec<Shard> = (0..count)
        .map(|index| Shard::parse(&format!("{index}/{count}")))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    let all = swfs(client, namespace)
        .list_metadata(&Default::default())
        .await?;
    Ok(shards
        .iter()
        .map(|shard| {
            all.items
                .iter()
                .filter(|swf| shard.owns(swf.metadata.uid.as_deref().unwrap_or_default()))
                .count()
        })
        .collect())
}

/// Checks that pipewarden's first pass wrote each of the `count` SWFs exactly once, over all
/// its processes.
fn written_once(count: usize, rows: &[Row]) -> Result<String> {
    let mut writes: BTreeMap<&str, usize> = BTreeMap::new();
    for name in rows.iter().flat_map(|row| &row.measured.written) {
        *writes.entry(name).or_default() += 1;
    }
    let once = writes.values().filter(|n| **n == 1).count();
    let more = writes.len() - once;
    let never = count.saturating_sub(writes.len());
    ensure!(
        once == count && more == 0,
        "SWF writes: {once} SWFs written once, {more} more than once, {never} never"
    );
    Ok(format!(
        "each of the {count} SWFs written exactly once ({} process{})",
        rows.len(),
        if rows.len() == 1 { "" } else { "es" }
    ))
}

fn print_server_memory(control_plane: &ControlPlane) {
    let peaks: Vec<String> = control_plane
        .server_pids()
        .iter()
        .filter_map(|(name, pid)| {
            let kib = procfs::memory_kib(pid.as_deref()?, "VmHWM");
            Some(format!("{name} {:.0} MiB", kib as f64 / 1024.0))
        })
        .collect();
    println!(
        "peak RSS of the control plane over the bench: {}",
        peaks.join(", ")
    );
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

/// Creates [`jobs`], 16 at a time, with a progress line every 10,000.
async fn seed_many(client: &kube::Client, namespace: &str, count: usize) -> Result<()> {
    let api = swfs(client, namespace);
    let started = Instant::now();
    futures::stream::iter(jobs(namespace, count)?)
        .map(|swf| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &swf).await }
        })
        .buffer_unordered(16)
        .enumerate()
        .map(|(done, created)| {
            if (done + 1) % 10_000 == 0 {
                eprintln!(
                    "{namespace}: {} SWFs created ({:.0?})",
                    done + 1,
                    started.elapsed()
                );
            }
            created
        })
        .try_for_each(|_| async { Ok(()) })
        .await
        .context("seeding")
}
