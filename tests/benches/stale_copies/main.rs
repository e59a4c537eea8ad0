//! Seed 001 on the real components: Argo v3.6.7's and v4.0.7's workflow controllers, each
//! managing a namespace of its own, and pipewarden watching both, all behind the same
//! stale-copy proxy. N workflows shaped like seed 001's (exit handler whose one step runs when
//! `{{workflow.status}} != Succeeded`) run in each namespace and all succeed; 10 s after each
//! completion (pods gone) the proxy replays the workflow's last Running copy (its old resourceVersion) into
//! every watch stream. Counted: how often each Argo ran the exit handler's step for a workflow
//! that Succeeded (the pod Argo created for it is the evidence), and pipewarden's false
//! notifications, beside the stale copies each was fed, the real completions each handled, and
//! pipewarden's notification delay after Argo wrote the completion. One run, one table.
//!
//! `make bench-stale` (`STALE_WORKFLOWS=N`, default 50), or
//! `PIPEWARDEN_BENCH_STALE_WORKFLOWS=N cargo bench -p pipewarden-tests --bench stale_copies`
//! after `tests/control-plane/build.sh --argo-v3` and `make policies`.

#[path = "../../e2e/argo/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use pipewarden_tests::argo::{
    ArgoStack, ArgoVersion, Completion, Consumer, ControllerSpec, Replay,
};
use pipewarden_tests::exit_support::{Controller, Receiver, wait_for_sent};
use support::*;

/// How long after a completion its stale copy follows: long enough for the workflow's pods to be
/// garbage-collected (Argo deletes them 5 s after they complete) and for its last node to be past
/// Argo's 10 s grace for a recently started pod, as in seed 001's story; and for pipewarden's
/// claim and mark to be written, so nothing newer replaces the stale copy in Argo's cache.
const DELAY: Duration = Duration::from_secs(10);
/// After the last stale copy, how long Argo gets to act on it (requeues included).
const SETTLE: Duration = Duration::from_secs(30);

fn main() -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench())
}

struct Side {
    version: ArgoVersion,
    namespace: String,
    exit_pods: ExitPods,
    names: Vec<String>,
    done: BTreeMap<String, kube::api::DynamicObject>,
}

async fn bench() -> Result<()> {
    let count: usize = std::env::var("PIPEWARDEN_BENCH_STALE_WORKFLOWS")
        .map(|n| n.parse().context("PIPEWARDEN_BENCH_STALE_WORKFLOWS"))
        .unwrap_or(Ok(50))?;
    let started = Instant::now();
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let mut sides = Vec::new();
    for version in [ArgoVersion::V3, ArgoVersion::V4] {
        let namespace = control_plane.ns().await?;
        sides.push(Side {
            version,
            exit_pods: ExitPods::watch(&client, &namespace).await?,
            namespace,
            names: (0..count).map(|i| format!("seed-001-{i}")).collect(),
            done: BTreeMap::new(),
        });
    }
    let specs: Vec<ControllerSpec> = sides
        .iter()
        .map(|side| ControllerSpec {
            version: side.version,
            managed: Some(side.namespace.clone()),
            flags: Vec::new(),
        })
        .collect();
    let stack = ArgoStack::start(control_plane, &specs).await?;
    for side in &sides {
        stack.proxy.replay(&side.namespace, Replay::after(DELAY));
    }
    let receiver = Receiver::start().await?;
    let through_proxy = kube::Client::try_from(stack.proxy.client_config()?)?;
    let watched = sides
        .iter()
        .map(|s| s.namespace.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let flags = [receiver.flag(), "--decision-timeout-ms=5000".to_owned()];
    let pipewarden = Controller::start_with_client(through_proxy, &watched, &flags).await?;
    eprintln!(
        "stack up in {:.1?}: Argo v3.6.7 on {}, Argo v4.0.7 on {}, pipewarden on both, all behind {}",
        started.elapsed(),
        sides[0].namespace,
        sides[1].namespace,
        stack.proxy.url
    );

    // N seed-001 workflows per controller, all to succeed.
    for side in &sides {
        let api = workflows(&client, &side.namespace);
        for name in &side.names {
            let spec = seed_001_spec(true, Outcome::Succeed);
            create(&api, &workflow(name, "seed-001", spec)?).await?;
        }
    }
    eprintln!("submitted {count} workflows to each Argo");
    for side in &mut sides {
        let api = workflows(&client, &side.namespace);
        side.done = wait_complete(&api, &side.names).await?;
        let phases: BTreeMap<&str, usize> =
            side.done.values().fold(BTreeMap::new(), |mut phases, w| {
                *phases.entry(phase(w)).or_default() += 1;
                phases
            });
        eprintln!("Argo {}: {phases:?}", side.version.tag());
    }
    let mut real = BTreeMap::new();
    for side in &sides {
        let api = workflows(&client, &side.namespace);
        for (name, workflow) in &side.done {
            let key = completion_key(workflow)?;
            wait_for_sent(&api, name, &key).await?;
            real.insert(key, (side.namespace.clone(), name.clone()));
        }
    }
    eprintln!("pipewarden: {} completions notified", real.len());

    // The stale copies reach every watch; then Argo gets its chance to act on them.
    let fed = |namespace: &str, consumer| stack.proxy.injected(namespace, consumer).len();
    let all_fed = pipewarden_tests::wait::until(
        "a stale copy per completion in every watch",
        WAIT,
        || async {
            let done = sides.iter().all(|side| {
                fed(&side.namespace, Consumer::Argo) >= count
                    && fed(&side.namespace, Consumer::Pipewarden) >= count
            });
            Ok(done.then_some(()))
        },
    )
    .await;
    if let Err(e) = all_fed {
        eprintln!("not every stale copy was delivered: {e:#}");
    }
    let last = stack
        .proxy
        .injections()
        .iter()
        .map(|i| i.at)
        .max()
        .unwrap_or_else(Instant::now);
    let settle_until = last + SETTLE;
    eprintln!(
        "stale copies fed: {} ({} completions had no older Running copy to replay); settling {SETTLE:?} after the last one",
        stack.proxy.injections().len(),
        stack.proxy.without_stale_copy()
    );
    while Instant::now() < settle_until {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let false_runs: usize = sides
            .iter()
            .map(|s| {
                s.exit_pods
                    .per_workflow()
                    .values()
                    .map(BTreeSet::len)
                    .sum::<usize>()
            })
            .sum();
        eprintln!(
            "  {}s left: exit-handler pods so far {false_runs}, pipewarden rejected {} stale copies",
            settle_until
                .saturating_duration_since(Instant::now())
                .as_secs(),
            pipewarden.decisions("reject-stale")
        );
    }

    // The figures.
    let mut rows = Vec::new();
    for side in &sides {
        let pods = side.exit_pods.per_workflow();
        let workflows_fired = pods.len();
        let pods_created: usize = pods.values().map(BTreeSet::len).sum();
        let ran_once = side
            .done
            .values()
            .filter(|w| exit_step_phase(w).is_ok_and(|p| p == "Skipped"))
            .count();
        let controller = stack
            .controllers
            .iter()
            .find(|c| c.version == side.version)
            .context("the controller")?;
        let rejected = controller.stale_copies_rejected();
        let rejected: usize = rejected
            .iter()
            .filter(|(key, _)| key.starts_with(&format!("{}/", side.namespace)))
            .map(|(_, n)| n)
            .sum();
        // Seed 001: the write-back of what Argo made of the stale copy fails, after the fact.
        let in_namespace = format!("namespace={}", side.namespace);
        let refused = controller
            .log_lines(&["must never update completed workflows", &in_namespace])
            .len();
        rows.push([
            format!(
                "Argo {}{}",
                side.version.tag(),
                if side.version == ArgoVersion::V3 {
                    " (KFP 2.14)"
                } else {
                    ""
                }
            ),
            count.to_string(),
            fed(&side.namespace, Consumer::Argo).to_string(),
            format!(
                "{workflows_fired} ({pods_created} exit-handler pods, {refused} write-backs refused, {rejected} copies rejected)"
            ),
            format!("{ran_once}/{count} (exit handler ran, step skipped)"),
            "-".to_owned(),
        ]);
    }
    let per_key = receiver.per_key();
    let false_notifications: usize = per_key
        .iter()
        .map(|(key, n)| if real.contains_key(key) { n - 1 } else { *n })
        .sum();
    let notified = real.keys().filter(|k| per_key.contains_key(*k)).count();
    let completions: BTreeMap<(String, String), Completion> = sides
        .iter()
        .flat_map(|s| stack.proxy.completions(&s.namespace))
        .map(|c| ((c.uid.clone(), c.started_at.clone()), c))
        .collect();
    let mut delays: Vec<Duration> = receiver
        .accepted()
        .iter()
        .filter_map(|delivery| {
            let mut parts = delivery.key.splitn(3, '/');
            let run = (parts.next()?.to_owned(), parts.next()?.to_owned());
            Some(
                delivery
                    .at
                    .saturating_duration_since(completions.get(&run)?.seen),
            )
        })
        .collect();
    delays.sort();
    let percentile = |p: usize| {
        delays
            .get((delays.len() * p).div_ceil(100).saturating_sub(1))
            .map_or("-".to_owned(), |d| {
                format!("{:.1} ms", d.as_secs_f64() * 1000.0)
            })
    };
    let fed_pipewarden: usize = sides
        .iter()
        .map(|s| fed(&s.namespace, Consumer::Pipewarden))
        .sum();
    rows.push([
        "pipewarden (both namespaces)".to_owned(),
        (2 * count).to_string(),
        fed_pipewarden.to_string(),
        format!(
            "{false_notifications} false notifications ({} copies rejected)",
            pipewarden.decisions("reject-stale")
        ),
        format!("{notified}/{}", real.len()),
        format!("{} / {}", percentile(50), percentile(99)),
    ]);
    print_table(count, &rows);
    if let Some(path) = std::env::var_os("PIPEWARDEN_BENCH_ARGO_LOGS") {
        // The controllers' logs, for reading what each made of the stale copies.
        let dir = std::path::PathBuf::from(path);
        std::fs::create_dir_all(&dir)?;
        for controller in &stack.controllers {
            let file = dir.join(format!("{}.log", controller.version.binary()));
            std::fs::write(&file, controller.log())?;
            eprintln!("wrote {}", file.display());
        }
    }
    pipewarden.stop().await;
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let kib: u64 = info
                .lines()
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some(format!("{} GiB", kib / 1024 / 1024))
        })
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!("{cores} cores ({cpu}), {memory}, load average {load}")
}

fn print_table(count: usize, rows: &[[String; 6]]) {
    let header = [
        "run",
        "workflows",
        "stale copies fed",
        "false exit-handler runs / false notifications",
        "real completions notified",
        "delay p50 / p99",
    ];
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let line = |cells: &[&str]| {
        cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC");
    println!();
    println!(
        "seed 001 live: {count} workflows per Argo controller, all Succeeded; stale copy {DELAY:?} after each completion"
    );
    println!("{now}, {}", machine());
    println!("{}", line(&header));
    for row in rows {
        println!("{}", line(&row.each_ref().map(String::as_str)));
    }
    println!("(delay: from the proxy first passing on Argo's completed copy to the webhook's 2xx)");
}
