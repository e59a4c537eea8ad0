//! How long after Argo completes a workflow its exit notification leaves, at rising rates, on
//! Argo v4.0.7's own controller (with kwok for pods). For each rate of `EXIT_RATES` (per minute)
//! workflows shaped like seed 001's (every one with the exit handler; every other one fails, so
//! Argo runs the handler's step) are submitted at that pace for `EXIT_SECONDS`, and pipewarden
//! (in this process, on a runtime of its own, the default policy, talking to the API server
//! directly) notifies a receiver on loopback. Rates run one after the other on the same control
//! plane, Argo and pipewarden; the workflows are deleted between rates. Per rate, from first
//! sightings with millisecond clocks (`rate.rs`):
//!
//! - the delay from the API server first serving the completed workflow, on a watch of the
//!   bench's own (`served.rs`), to the receiver's 2xx; and from Argo's `status.finishedAt`
//!   (whole seconds, truncated: reads up to 1 s high) to the 2xx;
//! - Argo's own reaction time: its main pod first seen done -> its exit handler's pod first
//!   seen (`pods.rs`);
//! - the completion rate Argo reached, and CPU-seconds (`cpu.rs`).
//!
//! A rate is sustained when Argo completed at least [`SUSTAINED`] of it; the goal is judged at
//! the highest sustained rate. Argo runs with `--qps=200 --burst=300` (its defaults, 20 and 30,
//! cap it near two workflows a second). `make bench-exit`.

mod cpu;
mod pods;
mod rate;
mod served;
mod sightings;
mod table;
// Only a part of it: the workflows and their completion keys.
#[allow(unused_imports)]
#[path = "../../e2e/argo/support/mod.rs"]
mod support;

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::argo::{ArgoStack, ArgoVersion, ControllerSpec};
use pipewarden_tests::exit_support::{Controller, Receiver};

/// Flags that let Argo keep up with the rate (see the module comment).
const ARGO_FLAGS: [&str; 2] = ["--qps=200", "--burst=300"];
/// Sustained: Argo's completion rate at least this share of the rate submitted.
const SUSTAINED: f64 = 0.9;
/// The goal: p99 from first served to the 2xx at the highest sustained rate.
const GOAL: Duration = Duration::from_millis(500);

fn main() -> Result<()> {
    // pipewarden alone on this runtime, so the CPU of its threads is pipewarden's; idle
    // blocking threads stay, so none takes its CPU time away when it ends (`cpu.rs`).
    let pipewarden = tokio::runtime::Builder::new_multi_thread()
        .thread_name(cpu::THREAD)
        .thread_keep_alive(Duration::from_secs(24 * 3600))
        .enable_all()
        .build()?;
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench(pipewarden.handle().clone()));
    pipewarden.shutdown_background();
    outcome
}

fn setting<T: std::str::FromStr>(name: &str, default: &str) -> Result<Vec<T>>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    text.split(',')
        .map(|n| n.trim().parse().with_context(|| format!("{name}={text}")))
        .collect()
}

async fn bench(runtime: tokio::runtime::Handle) -> Result<()> {
    let rates: Vec<usize> = setting("PIPEWARDEN_BENCH_EXIT_RATES", "250,500,1000,2000")?;
    let seconds: u64 = setting("PIPEWARDEN_BENCH_EXIT_SECONDS", "60")?[0];
    ensure!(
        seconds > 0 && rates.iter().all(|r| *r > 0),
        "rates and seconds must be > 0"
    );
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let pods = pods::PodTimes::watch(&client, &namespace).await?;
    let served = served::FirstServed::watch(&client, &namespace).await?;
    let argo = ControllerSpec {
        version: ArgoVersion::V4,
        managed: Some(namespace.clone()),
        flags: ARGO_FLAGS.iter().map(|f| (*f).to_owned()).collect(),
    };
    let stack = ArgoStack::start(control_plane, &[argo]).await?;
    let receiver = Receiver::start().await?;
    let (ns, flags) = (namespace.clone(), [receiver.flag()]);
    let pipewarden = runtime
        .spawn(async move { Controller::start(control_plane, &ns, &flags).await })
        .await??;

    let bench = rate::Bench {
        api: support::workflows(&client, &namespace),
        served: &served,
        pods: &pods,
        receiver: &receiver,
        pipewarden: &pipewarden,
        clock: (Instant::now(), SystemTime::now()),
    };
    let mut measured = Vec::new();
    for (index, per_minute) in rates.iter().enumerate() {
        if index > 0 {
            bench.clear().await?;
        }
        measured.push(bench.run(index, *per_minute, seconds).await?);
    }
    stack.controller().ensure_running()?;
    report(&measured, seconds, stack.controller().version.tag());
    runtime.spawn(pipewarden.stop()).await?;
    Ok(())
}

fn report(measured: &[rate::Measured], seconds: u64, argo: &str) {
    println!(
        "\nWorkflows like seed 001's (every other one failing, so Argo runs its exit handler's \
         step), submitted for {seconds} s at each rate, one rate after the other; Argo {argo} {}; \
         every completion got exactly one 2xx. Delay: from the API server first serving the \
         completed workflow (a watch of the bench's own) to the receiver's 2xx.\n",
        ARGO_FLAGS.join(" ")
    );
    let rows: Vec<Vec<String>> = measured
        .iter()
        .map(|m| {
            let mut row = vec![
                m.per_minute.to_string(),
                format!("{:.0}", m.argo_per_minute),
            ];
            row.extend(table::delay_cells(&m.from_served));
            let window = m.window.as_secs_f64();
            row.extend([
                format!("{window:.0} s"),
                format!("{:.1}", m.cpu.pipewarden),
                format!("{:.0}%", 100.0 * m.cpu.pipewarden / window),
                format!("{:.1}", m.cpu.process),
                format!("{:.0}", m.events as f64 / window),
            ]);
            row
        })
        .collect();
    table::print(
        &[
            "RATE/MIN",
            "ARGO/MIN",
            "N",
            "P50",
            "P99",
            "MAX",
            "WINDOW",
            "PW CPU-S",
            "PW CORE",
            "PROC CPU-S",
            "EVENTS/S",
        ],
        rows,
    );
    println!(
        "\nARGO/MIN: completions first served, first to last. WINDOW: first submission to last \
         2xx. PW CPU-S: pipewarden's runtime threads; PW CORE: of one core over the window. \
         PROC CPU-S: the whole bench process, which also holds the bench's own watches \
         (workflows, pods), the receiver, the submitter and the Argo stack's stand-ins and \
         stale-copy proxy. EVENTS/S: workflow events through the gate.\n"
    );
    let mut rows = Vec::new();
    for m in measured {
        for (what, delays) in [
            ("pipewarden: finishedAt (whole s) -> 2xx", &m.from_finished),
            ("Argo: main pod done -> exit-handler pod", &m.argo_handler),
        ] {
            let mut row = vec![m.per_minute.to_string(), what.to_owned()];
            row.extend(table::delay_cells(delays));
            rows.push(row);
        }
    }
    table::print(&["RATE/MIN", "DELAY", "N", "P50", "P99", "MAX"], rows);
    println!(
        "\nfinishedAt has one-second resolution (Argo truncates it): that row reads up to 1 s high."
    );
    verdict(measured);
}

/// The highest sustained rate and whether the goal is met there.
fn verdict(measured: &[rate::Measured]) {
    let rule = format!(
        "sustained: Argo completed at least {:.0}% of the rate submitted",
        SUSTAINED * 100.0
    );
    let Some(top) = measured
        .iter()
        .filter(|m| m.argo_per_minute >= SUSTAINED * m.per_minute as f64)
        .max_by_key(|m| m.per_minute)
    else {
        println!("no rate sustained ({rule}): the goal is not judged");
        return;
    };
    let p99 = table::percentiles(&top.from_served).map_or(Duration::MAX, |[_, p99, _]| p99);
    let met = if p99 <= GOAL {
        "MET".to_owned()
    } else {
        format!("NOT MET, over by {}", table::ms(p99 - GOAL))
    };
    println!(
        "highest sustained rate: {}/min (Argo {:.0}/min; {rule}); goal p99 <= {} from first \
         served to 2xx there: p99 {}, {met}",
        top.per_minute,
        top.argo_per_minute,
        table::ms(GOAL),
        table::ms(p99)
    );
}
