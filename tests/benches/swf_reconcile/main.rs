//! Reconciling N stale SWFs on the local control plane: pipewarden's loop beside two baselines,
//! each side on its own copy of the same fleet (`side.rs`: by default a real-looking fleet made
//! from every release's own compiler output, over 50 namespaces, in a stated mix):
//!
//! - **KFP's path**: what KFP's API server does at each start (`ReconcileSwfCrs`): for each
//!   job, compile its pipeline natively (`kfp-compiler` built for this machine, standing in for
//!   KFP's Go compiler), GET the SWF, PUT it when it differs, one after the other;
//! - **upstream-style**: the same loop with pipewarden's Wasm render of the SWF;
//! - **pipewarden**: its controller, with the default policy.
//!
//! With one shard: a first pass and a restart per side (pipewarden's restart also runs two
//! resyncs, to show its memory stays flat). With SHARDS > 1: the first pass only, pipewarden as
//! that many shard processes at once, each with its own Lease, and a CPU profile of
//! kube-apiserver during it (`profile.rs`). Each run is a process of its own (`child.rs`), so
//! its peak RSS and its CPU time (user + system, over the pass) are its own; requests and the
//! bytes written are counted by a layer on its client; kube-apiserver's and etcd's CPU over
//! each run come from `/proc`. With two CPUs, the control plane runs on one and the measured
//! process on the other (`pin.rs`).
//!
//! With ROUNDS > 1 (one shard), the first passes run again that many times in all, each on a
//! fresh fleet, and the table ends with the median ratios: the machine's speed drifts from one
//! minute to the next, so a ratio is taken only within a round.
//!
//! `make bench-swf` (`SWFS=N`, default 2,000; `SHARDS=N`, default 1; `ROUNDS=N`, default 3;
//! `FLEET=real|uniform`, default real), `make bench-swf-10k`, or `PIPEWARDEN_BENCH_SWFS=N
//! PIPEWARDEN_BENCH_SHARDS=N PIPEWARDEN_BENCH_ROUNDS=N PIPEWARDEN_BENCH_FLEET=real cargo bench
//! -p pipewarden-tests --bench swf_reconcile`. `PIPEWARDEN_BENCH_WRAP="heaptrack -o FILE"` runs
//! pipewarden's child under that command (`child.rs`).

mod child;
mod pin;
mod profile;
mod table;
mod upstream;

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use kube::api::DynamicObject;
use pipewarden::config::Shard;
use pipewarden_tests::swf_support::fleet::Kind;
use pipewarden_tests::swf_support::*;
use pipewarden_tests::{ControlPlane, procfs};

use pipewarden_tests::swf_support::side::{FleetKind, Side};
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

/// The three sides' copies of the fleet, for one round.
struct Sides {
    kfp: Side,
    upstream: Side,
    pipewarden: Side,
}

impl Sides {
    async fn seed(
        client: &kube::Client,
        fleet: FleetKind,
        count: usize,
        round: usize,
    ) -> Result<Sides> {
        let run = std::process::id();
        let side = |role: &str| Side::new(fleet, &format!("bench-{role}-{run}-{round}"), count);
        let sides = Sides {
            kfp: side("kfp")?,
            upstream: side("upstream")?,
            pipewarden: side("pw")?,
        };
        let started = Instant::now();
        for side in [&sides.kfp, &sides.upstream, &sides.pipewarden] {
            side.seed(client).await?;
        }
        eprintln!(
            "seeded 3 x {count} SWFs ({} fleet: {}) in {:.1?}",
            fleet.name(),
            sides.pipewarden.mix(),
            started.elapsed()
        );
        Ok(sides)
    }

    async fn delete(&self, client: &kube::Client) -> Result<()> {
        for side in [&self.kfp, &self.upstream, &self.pipewarden] {
            side.delete(client).await?;
        }
        Ok(())
    }
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
    let fleet = FleetKind::from_env()?;
    let control_plane = pipewarden_tests::shared().await?;
    eprintln!("{}", pin::servers(control_plane)?);
    let client = control_plane.client()?;
    let sides = Sides::seed(&client, fleet, count, 1).await?;

    let spec = |role, side, outcome, passes, shard| {
        child_spec(control_plane, fleet, role, side, outcome, passes, shard)
    };
    let mut rows = Vec::new();
    let mut kfp_rows = Vec::new();
    for run in [
        "KFP's path (native compile), first pass",
        "KFP's path, restart",
    ] {
        let kfp = spec("kfp", &sides.kfp, "", 1, None);
        kfp_rows.push(rows.len());
        rows.push(measure(control_plane, &kfp, run, None).await?);
    }
    let upstream_runs: &[&str] = if shards == 1 {
        &[
            "upstream-style (Wasm render), first pass",
            "upstream-style, restart",
        ]
    } else {
        &["upstream-style (Wasm render), first pass"]
    };
    for (index, run) in upstream_runs.iter().enumerate() {
        let upstream = spec("upstream", &sides.upstream, "", 1, None);
        let baseline = Some(kfp_rows[index]);
        rows.push(measure(control_plane, &upstream, run, baseline).await?);
    }
    let first_pass = if shards == 1 {
        let first = spec("pipewarden", &sides.pipewarden, "rebuild", 1, None);
        rows.push(measure(control_plane, &first, table::FIRST_PASS, Some(kfp_rows[0])).await?);
        let restart = spec(
            "pipewarden",
            &sides.pipewarden,
            "up-to-date",
            RESTART_PASSES,
            None,
        );
        let run = "pipewarden, restart";
        rows.push(measure(control_plane, &restart, run, Some(kfp_rows[1])).await?);
        rows.len() - 2..rows.len() - 1
    } else {
        let from = rows.len();
        let owned = owned_per_shard(&client, &sides.pipewarden, shards).await?;
        let servers = ServerClock::start(control_plane);
        let children = owned.into_iter().enumerate().map(|(index, owned)| {
            let shard = child::Spec {
                count: owned,
                ..spec(
                    "pipewarden",
                    &sides.pipewarden,
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
            rows.push(Row::new(
                &run,
                measured,
                Some(kfp_rows[0]),
                Servers::default(),
            ));
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

    let checked = on_target(&client, &sides).await?;
    let written = written_once(sides.pipewarden.stale(), &rows[first_pass])?;
    // Each round's SWFs are deleted when it ends, so the next starts from the same store.
    if rounds > 1 {
        sides.delete(&client).await?;
    }
    for round in 2..=rounds {
        let sides = Sides::seed(&client, fleet, count, round).await?;
        let spec =
            |role, side, outcome| child_spec(control_plane, fleet, role, side, outcome, 1, None);
        let baseline = rows.len();
        let run = format!("KFP's path, first pass, round {round}");
        rows.push(measure(control_plane, &spec("kfp", &sides.kfp, ""), &run, None).await?);
        let run = format!("upstream-style, first pass, round {round}");
        let upstream = spec("upstream", &sides.upstream, "");
        rows.push(measure(control_plane, &upstream, &run, Some(baseline)).await?);
        let run = format!("{}, round {round}", table::FIRST_PASS);
        let first = spec("pipewarden", &sides.pipewarden, "rebuild");
        rows.push(measure(control_plane, &first, &run, Some(baseline)).await?);
        on_target(&client, &sides).await?;
        written_once(sides.pipewarden.stale(), &rows[rows.len() - 1..])?;
        sides.delete(&client).await?;
        eprintln!("round {round} of {rounds}: every side reconciled all {count} SWFs");
    }
    table::print(count, fleet, &sides.pipewarden.mix(), &rows);
    println!("\npipewarden's first pass: {written}");
    println!("after the first passes: {checked}");
    print_server_memory(control_plane);
    Ok(())
}

/// A child for `side` in `role`.
fn child_spec<'a>(
    control_plane: &'a ControlPlane,
    fleet: FleetKind,
    role: &'a str,
    side: &'a Side,
    outcome: &'a str,
    passes: usize,
    shard: Option<String>,
) -> child::Spec<'a> {
    child::Spec {
        role,
        kubeconfig: control_plane.kubeconfig(),
        prefix: &side.prefix,
        fleet,
        count: side.count,
        outcome,
        passes,
        shard,
    }
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
    eprintln!("{run}: {} SWFs written", measured.swf_writes);
    Ok(Row::new(run, measured, baseline, servers.stop()))
}

/// Checks that every stale and current SWF of each side now embeds the target's own compile
/// of its pipeline, and that pipewarden left the ones it cannot rebuild as they were.
async fn on_target(client: &kube::Client, sides: &Sides) -> Result<String> {
    let mut checked = 0;
    for side in [&sides.kfp, &sides.upstream, &sides.pipewarden] {
        for job in side.jobs() {
            let job = job?;
            let live = swfs(client, &job.namespace).get(&job.name).await?;
            let expected = side.target_workflow(&job);
            match (job.kind, expected) {
                (Kind::Stale { .. } | Kind::Current, Some(expected)) => {
                    ensure!(
                        embedded(&live) == Some(expected),
                        "{}/{} ({}) does not embed KFP {TARGET}'s compile",
                        job.namespace,
                        job.name,
                        job.kind.label()
                    );
                    checked += 1;
                }
                // The uniform fleet: rebuilt for the target's images.
                (Kind::Stale { .. }, None) => ensure!(
                    driver_images(&live)
                        .is_ok_and(|images| images.iter().all(|i| i.ends_with(TARGET))),
                    "{}/{} not rebuilt",
                    job.namespace,
                    job.name
                ),
                (Kind::NotRebuildable, _) if std::ptr::eq(side, &sides.pipewarden) => ensure!(
                    live.data["spec"]["workflow"] == job.swf.data["spec"]["workflow"],
                    "{}/{}: pipewarden wrote an SWF it cannot rebuild",
                    job.namespace,
                    job.name
                ),
                _ => {}
            }
        }
    }
    Ok(format!(
        "{checked} SWFs over the three sides embed KFP {TARGET}'s own compile of their pipeline \
         exactly; the ones pipewarden cannot rebuild are as they were"
    ))
}

fn embedded(swf: &DynamicObject) -> Option<serde_json::Value> {
    serde_json::from_str(swf.data["spec"]["workflow"]["spec"].as_str()?).ok()
}

/// How many of the side's SWFs each of `shards` shards owns, counted here so that no shard
/// process holds a list of them all.
async fn owned_per_shard(client: &kube::Client, side: &Side, count: usize) -> Result<Vec<usize>> {
    let shards: Vec<Shard> = (0..count)
        .map(|index| Shard::parse(&format!("{index}/{count}")))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    let mut owned = vec![0; count];
    for namespace in side.namespaces() {
        let all = swfs(client, &namespace)
            .list_metadata(&Default::default())
            .await?;
        for swf in all.items {
            let uid = swf.metadata.uid.unwrap_or_default();
            for (index, shard) in shards.iter().enumerate() {
                if shard.owns(&uid) {
                    owned[index] += 1;
                }
            }
        }
    }
    Ok(owned)
}

/// Checks that pipewarden's first pass wrote each of the `stale` SWFs exactly once, over all
/// its processes, and nothing else.
fn written_once(stale: usize, rows: &[Row]) -> Result<String> {
    let mut writes: BTreeMap<&str, usize> = BTreeMap::new();
    for name in rows.iter().flat_map(|row| &row.measured.written) {
        *writes.entry(name).or_default() += 1;
    }
    let once = writes.values().filter(|n| **n == 1).count();
    let more = writes.len() - once;
    ensure!(
        once == stale && more == 0,
        "SWF writes: {once} SWFs written once, {more} more than once; {stale} were stale"
    );
    Ok(format!(
        "each of the {stale} stale SWFs written exactly once ({} process{})",
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
