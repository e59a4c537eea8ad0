//! How long after Argo completes a workflow its exit notification leaves, on Argo v4.0.7's own
//! controller: N workflows shaped like seed 001's (every one with the exit handler; every other
//! one fails, so Argo runs the handler's step) are submitted at a steady rate, and pipewarden
//! (in this process, the default policy, talking to the API server directly) notifies a
//! receiver on loopback. Measured, each from first sightings with millisecond clocks:
//!
//! - pipewarden: from the first watch event carrying the completed workflow (the stale-copy
//!   proxy in front of Argo sees Argo's own watch stream, replaying nothing here) to the
//!   receiver's 2xx; and from Argo's `status.finishedAt` (whole seconds: truncated, so this
//!   figure reads up to 1 s high) to the 2xx;
//! - Argo: from the workflow's main pod first seen done to its exit handler's pod first seen
//!   (`pods.rs`): Argo's own reaction time to the same kind of moment.
//!
//! Argo runs with `--qps=200 --burst=300` (its defaults, 20 and 30, cap it near two workflows a
//! second); everything else is Argo's default. `make bench-exit` (`EXIT_WORKFLOWS=N`, default
//! 1,000; `EXIT_RATE=N` per minute, default 1,000).

mod pods;
// Only a part of it: the workflows and their completion keys.
#[allow(unused_imports)]
#[path = "../../e2e/argo/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::argo::{ArgoStack, ArgoVersion, Completion, ControllerSpec};
use pipewarden_tests::exit_support::{Controller, Receiver};
use support::*;

/// Flags that let Argo keep up with the rate (see the module comment).
const ARGO_FLAGS: [&str; 2] = ["--qps=200", "--burst=300"];
/// The gate's decisions, all of them: events through the gate.
const DECISIONS: [&str; 7] = [
    "process",
    "skip",
    "reject-stale",
    "requeue",
    "error",
    "malformed",
    "delay-dropped",
];

fn main() -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench())
}

fn number(name: &str, default: usize) -> Result<usize> {
    std::env::var(name).map_or(Ok(default), |n| n.parse().context(name.to_owned()))
}

async fn bench() -> Result<()> {
    let count = number("PIPEWARDEN_BENCH_EXIT_WORKFLOWS", 1000)?;
    let per_minute = number("PIPEWARDEN_BENCH_EXIT_RATE", 1000)?;
    ensure!(
        count > 0 && per_minute > 0,
        "workflows and rate must be > 0"
    );
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let pod_times = pods::PodTimes::watch(&client, &namespace).await?;
    let argo = ControllerSpec {
        version: ArgoVersion::V4,
        managed: Some(namespace.clone()),
        flags: ARGO_FLAGS.iter().map(|f| (*f).to_owned()).collect(),
    };
    let stack = ArgoStack::start(control_plane, &[argo]).await?;
    let receiver = Receiver::start().await?;
    let pipewarden = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;
    // One clock pair maps Argo's wall-clock finishedAt onto the receiver's Instants.
    let (instant_zero, wall_zero) = (Instant::now(), SystemTime::now());

    let api = workflows(&client, &namespace);
    let interval = Duration::from_secs_f64(60.0 / per_minute as f64);
    let names: Vec<String> = (0..count).map(|i| format!("exit-delay-{i:05}")).collect();
    let submitting = Instant::now();
    let mut ticks = tokio::time::interval(interval);
    for (i, name) in names.iter().enumerate() {
        ticks.tick().await;
        let outcome = if i % 2 == 0 {
            Outcome::Fail
        } else {
            Outcome::Succeed
        };
        create(
            &api,
            &workflow(name, "seed-001", seed_001_spec(true, outcome))?,
        )
        .await?;
        if (i + 1) % 100 == 0 {
            eprintln!(
                "submitted {}/{count} ({:.0?}); notifications so far {}",
                i + 1,
                submitting.elapsed(),
                receiver.accepted().len()
            );
        }
    }
    let submitted_in = submitting.elapsed();
    let done = wait_complete(&api, &names).await?;
    pipewarden_tests::wait::until("a notification per completion", WAIT, || async {
        Ok((receiver.per_key().len() >= count).then_some(()))
    })
    .await?;
    let run = submitting.elapsed();
    let events: u64 = DECISIONS.iter().map(|d| pipewarden.decisions(d)).sum();

    // Exactly one 2xx per completion: the delays below are of real, single deliveries.
    let per_key = receiver.per_key();
    let keys: BTreeMap<String, &str> = done
        .iter()
        .map(|(name, w)| Ok((completion_key(w)?, name.as_str())))
        .collect::<Result<_>>()?;
    let repeated = per_key.values().filter(|n| **n > 1).count();
    let missing = keys.keys().filter(|k| !per_key.contains_key(*k)).count();
    ensure!(
        repeated == 0 && missing == 0 && per_key.len() == keys.len(),
        "{repeated} completions notified more than once, {missing} never, {} keys for {} completions",
        per_key.len(),
        keys.len()
    );

    let completions: BTreeMap<(String, String), Completion> = stack
        .proxy
        .completions(&namespace)
        .into_iter()
        .map(|c| ((c.uid.clone(), c.started_at.clone()), c))
        .collect();
    let mut from_seen = Vec::new();
    let mut from_finished = Vec::new();
    for delivery in receiver.accepted() {
        let mut parts = delivery.key.splitn(4, '/');
        let (Some(uid), Some(started), Some(finished)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if let Some(c) = completions.get(&(uid.to_owned(), started.to_owned())) {
            from_seen.push(delivery.at.saturating_duration_since(c.seen));
        }
        if let Some(finished) = wall_instant(finished, instant_zero, wall_zero) {
            from_finished.push(delivery.at.saturating_duration_since(finished));
        }
    }
    let argo_exit = pod_times.exit_handler_delays();
    let seen: Vec<Instant> = completions.values().map(|c| c.seen).collect();
    let span = seen.iter().max().zip(seen.iter().min());
    let completion_rate = span.map_or(0.0, |(last, first)| {
        (seen.len() - 1) as f64 * 60.0 / last.duration_since(*first).as_secs_f64().max(1e-3)
    });

    println!(
        "\n{count} workflows like seed 001's (every other one failing, so Argo runs its exit \
         handler's step), submitted at {per_minute}/min in {:.1?}; Argo completed them at \
         {completion_rate:.0}/min; pipewarden sent {} notifications, each exactly once:\n",
        submitted_in,
        per_key.len()
    );
    let rows = [
        (
            "pipewarden: completion seen on a watch -> receiver's 2xx",
            from_seen,
        ),
        (
            "pipewarden: Argo's finishedAt (whole s) -> receiver's 2xx",
            from_finished,
        ),
        ("Argo: main pod done -> exit-handler pod created", argo_exit),
    ];
    print_table(&rows);
    println!(
        "\nevents through the gate: {events} in {:.1?} ({:.1}/s); Argo {} {}",
        run,
        events as f64 / run.as_secs_f64(),
        stack.controller().version.tag(),
        ARGO_FLAGS.join(" ")
    );
    stack.controller().ensure_running()?;
    pipewarden.stop().await;
    Ok(())
}

/// An RFC 3339 timestamp (Argo's, whole seconds) as an Instant of this process's clock.
fn wall_instant(text: &str, instant_zero: Instant, wall_zero: SystemTime) -> Option<Instant> {
    let at: SystemTime = humantime::parse_rfc3339(text).ok()?;
    match at.duration_since(wall_zero) {
        Ok(after) => Some(instant_zero + after),
        Err(before) => instant_zero.checked_sub(before.duration()),
    }
}

fn print_table(rows: &[(&str, Vec<Duration>)]) {
    let headers = ["delay", "n", "p50", "p99", "max"];
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|(what, delays)| {
            let mut sorted = delays.clone();
            sorted.sort();
            // Nearest rank.
            let at = |p: usize| {
                sorted
                    .get((sorted.len() * p).div_ceil(100).saturating_sub(1))
                    .map_or("-".to_owned(), |d| {
                        format!("{:.0} ms", d.as_secs_f64() * 1e3)
                    })
            };
            [
                (*what).to_owned(),
                sorted.len().to_string(),
                at(50),
                at(99),
                at(100),
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
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(headers.to_vec());
    for row in &cells {
        line(row.iter().map(String::as_str).collect());
    }
}
