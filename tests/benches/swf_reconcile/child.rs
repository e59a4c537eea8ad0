//! One side of the bench in a process of its own, so its peak RSS (`VmHWM`) is its own: the
//! parent starts this binary again with the role and its inputs in the environment, and reads
//! one `bench-result` line of JSON from its stdout.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use http::Method;
use pipewarden::config::{Shard, read_settings};
use pipewarden::engine::{Policy, PolicyOptions, RenderContext};
use serde::{Deserialize, Serialize};

use crate::upstream;
use pipewarden_tests::procfs;
use pipewarden_tests::swf_support::side::{FleetKind, Side};
use pipewarden_tests::swf_support::*;

pub const ROLE: &str = "PIPEWARDEN_BENCH_ROLE";
const KUBECONFIG: &str = "PIPEWARDEN_BENCH_KUBECONFIG";
const PREFIX: &str = "PIPEWARDEN_BENCH_PREFIX";
const FLEET: &str = "PIPEWARDEN_BENCH_FLEET";
const COUNT: &str = "PIPEWARDEN_BENCH_COUNT";
const OUTCOME: &str = "PIPEWARDEN_BENCH_OUTCOME";
const PASSES: &str = "PIPEWARDEN_BENCH_PASSES";
const SHARD: &str = "PIPEWARDEN_BENCH_SHARD";
/// A command pipewarden's child runs under, e.g. `heaptrack -o target/bench-swf` for a heap
/// profile; what it measures then includes the wrapper's own cost.
const WRAP: &str = "PIPEWARDEN_BENCH_WRAP";
const RESULT_PREFIX: &str = "bench-result ";
/// Time allowed for one pass of the controller.
const PASS_TIMEOUT: Duration = Duration::from_secs(900);
/// The resync when several passes are measured: every SWF decided again this often. A single
/// pass keeps the default (10 minutes): a resync shorter than the pass would decide SWFs again
/// before the pass is over, work the upstream-style run never does.
const RESYNC: &str = "30s";
/// Longer than the Event queue's summary period: combined Events are created by then.
const COMBINED_EVENTS_DUE: Duration = Duration::from_secs(35);

/// What a child measured.
#[derive(Debug, Serialize, Deserialize)]
pub struct Measured {
    pub wall_secs: f64,
    /// CPU seconds of the process over the pass (the API server's own are not in it).
    pub cpu_secs: f64,
    pub swf_reads: usize,
    pub swf_writes: usize,
    pub events: usize,
    pub requests: usize,
    /// Body bytes of the requests that wrote SWFs.
    pub bytes_written: u64,
    pub peak_rss_kib: u64,
    /// RSS at the end of each pass.
    pub rss_after_pass_kib: Vec<u64>,
    /// CPU seconds of each pass: the first decides every SWF, later ones are resyncs.
    #[serde(default)]
    pub cpu_secs_per_pass: Vec<f64>,
    /// Names of the SWFs it wrote, once per write.
    pub written: Vec<String>,
}

/// A child to start: its role and inputs.
pub struct Spec<'a> {
    pub role: &'a str,
    pub kubeconfig: &'a std::path::Path,
    /// The side's fleet, by its namespaces' prefix.
    pub prefix: &'a str,
    pub fleet: FleetKind,
    pub count: usize,
    pub outcome: &'a str,
    pub passes: usize,
    /// `INDEX/COUNT`: the child is that shard of the controller, with a Lease of its own.
    pub shard: Option<String>,
}

/// The environment the Deployment gives pipewarden (`deploy/base/deployment.yaml`) that changes
/// what is measured: glibc's arena cap.
const DEPLOYMENT_ENV: [(&str, &str); 1] = [("MALLOC_ARENA_MAX", "2")];

/// Runs a child to its end and returns what it measured. pipewarden runs with the
/// Deployment's [`DEPLOYMENT_ENV`]; the upstream-style side stands in for a Go process.
pub async fn run(spec: &Spec<'_>) -> Result<Measured> {
    let deployed = (spec.role == "pipewarden")
        .then_some(DEPLOYMENT_ENV)
        .into_iter()
        .flatten();
    let exe = std::env::current_exe()?.into_os_string();
    // Pinned to its own CPU where the control plane is pinned to the other (`pin`).
    let mut argv: Vec<std::ffi::OsString> = match crate::pin::child_cpu() {
        Some(cpu) => vec!["taskset".into(), "-c".into(), cpu.to_string().into()],
        None => Vec::new(),
    };
    if spec.role == "pipewarden" {
        argv.extend(wrapper().into_iter().map(Into::into));
    }
    argv.push(exe);
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    let output = command
        .envs(deployed)
        .env(ROLE, spec.role)
        .env(KUBECONFIG, spec.kubeconfig)
        .env(PREFIX, spec.prefix)
        .env(FLEET, spec.fleet.name())
        .env(COUNT, spec.count.to_string())
        .env(OUTCOME, spec.outcome)
        .env(PASSES, spec.passes.to_string())
        .env(SHARD, spec.shard.as_deref().unwrap_or_default())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success(),
        "{} child failed: {}",
        spec.role,
        output.status
    );
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix(RESULT_PREFIX))
        .context("the child printed no result")?;
    Ok(serde_json::from_str(line)?)
}

/// The command pipewarden's child runs under, from [`WRAP`] split on spaces (none by default).
fn wrapper() -> Vec<String> {
    std::env::var(WRAP)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The child's `main`.
pub fn main(role: &str) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let measured = runtime.block_on(async {
        match role {
            "kfp" => kfp_side().await,
            "upstream" => upstream_side().await,
            "pipewarden" => pipewarden_side().await,
            other => anyhow::bail!("unknown bench role {other}"),
        }
    })?;
    println!("{RESULT_PREFIX}{}", serde_json::to_string(&measured)?);
    Ok(())
}

fn env(name: &str) -> Result<String> {
    std::env::var(name).with_context(|| name.to_owned())
}

async fn client(log: &RequestLog) -> Result<kube::Client> {
    let kubeconfig = PathBuf::from(env(KUBECONFIG)?);
    let file = kube::config::Kubeconfig::read_from(&kubeconfig)?;
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(file, &options).await?;
    log.client(config, false)
}

/// This child's side of the bench, from its environment.
fn side() -> Result<Side> {
    let fleet = match env(FLEET)?.as_str() {
        "uniform" => FleetKind::Uniform,
        _ => FleetKind::Real,
    };
    Side::new(fleet, &env(PREFIX)?, env(COUNT)?.parse()?)
}

async fn kfp_side() -> Result<Measured> {
    let side = side()?;
    let log = RequestLog::default();
    let client = client(&log).await?;
    let (started, cpu_before) = (Instant::now(), procfs::cpu_seconds("self"));
    upstream::kfp_native(&client, side.jobs(), TARGET).await?;
    let wall = started.elapsed();
    let cpu_secs = procfs::cpu_seconds("self") - cpu_before;
    let rss = procfs::memory_kib("self", "VmRSS");
    Ok(measured(wall, cpu_secs, &log, vec![rss]))
}

async fn upstream_side() -> Result<Measured> {
    let side = side()?;
    let policy = Policy::load(&built_policy(DEFAULT_POLICY), PolicyOptions::default())?;
    let context = RenderContext {
        target_version: Some(TARGET.to_owned()),
        settings: read_settings(Some(&repo_path(DEFAULT_SETTINGS)))?.text,
    };
    let log = RequestLog::default();
    let client = client(&log).await?;
    let (started, cpu_before) = (Instant::now(), procfs::cpu_seconds("self"));
    upstream::wasm_render(&client, side.jobs(), &policy, &context).await?;
    let wall = started.elapsed();
    let cpu_secs = procfs::cpu_seconds("self") - cpu_before;
    let rss = procfs::memory_kib("self", "VmRSS");
    Ok(measured(wall, cpu_secs, &log, vec![rss]))
}

async fn pipewarden_side() -> Result<Measured> {
    let namespaces = side()?.namespaces();
    let outcome = env(OUTCOME)?;
    let passes: u64 = env(PASSES)?.parse()?;
    let shard = match env(SHARD)?.as_str() {
        "" => None,
        text => Some(Shard::parse(text).map_err(anyhow::Error::msg)?),
    };
    init_logs();
    // A shard's count is of its own SWFs, counted by the parent: a list of them all here would
    // be this process's peak RSS.
    let count: u64 = env(COUNT)?.parse()?;
    let log = RequestLog::default();
    let client = client(&log).await?;
    // Compiled before the clock starts, as `pipewarden precompile` does: the upstream side too
    // loads its policy before its clock starts.
    let cache = std::env::temp_dir().join(format!("pipewarden-bench-{}", std::process::id()));
    let options = PolicyOptions {
        cache_dir: Some(cache.clone()),
        ..PolicyOptions::default()
    };
    Policy::load(&built_policy(DEFAULT_POLICY), options)?;
    // The SWF loop alone: the exit gate would add its own Workflow list and watch.
    let mut args = ControllerArgs::new(&namespaces)
        .set("--exit-gate", "false")
        .set("--cache-dir", &cache.display().to_string());
    if passes > 1 {
        args = args.set("--swf-resync", RESYNC);
    }
    if let Some(shard) = &shard {
        args = args
            .set("--shard", &shard.to_string())
            .set("--lease-namespace", &namespaces[0])
            .set("--identity", &format!("bench-shard-{}", shard.index));
    }
    let mut args = args.parse()?;
    args.leader.leader_elect = shard.is_some();
    let (started, cpu_before) = (Instant::now(), procfs::cpu_seconds("self"));
    let running = Running {
        handle: pipewarden::controller::start(args, client).await?,
        requests: log.clone(),
    };
    let mut wall = Duration::ZERO;
    let mut cpu_secs = 0.0;
    let mut rss_after_pass = Vec::new();
    let mut cpu_per_pass = Vec::new();
    let mut cpu_at_pass_start = cpu_before;
    // A pass is over when every SWF was decided once more (whatever the outcome: a real
    // fleet's are mixed); `outcome` is the one reported.
    for pass in 1..=passes {
        let what = format!("{} decisions", count * pass);
        pipewarden_tests::wait::until(&what, PASS_TIMEOUT, || async {
            Ok((running.decisions_total() >= count * pass).then_some(()))
        })
        .await?;
        if pass == 1 {
            wall = started.elapsed();
            cpu_secs = procfs::cpu_seconds("self") - cpu_before;
            report_other_decisions(&running, &outcome);
        }
        rss_after_pass.push(procfs::memory_kib("self", "VmRSS"));
        let cpu_now = procfs::cpu_seconds("self");
        cpu_per_pass.push(cpu_now - cpu_at_pass_start);
        cpu_at_pass_start = cpu_now;
    }
    // Each rebuild's Event is queued, dropped or combined per namespace (those once per
    // namespace, at the next summary); wait for the queue to drain.
    if outcome == "rebuild" {
        let metrics = running.handle.metrics();
        let rebuilt = running.decisions("rebuild");
        let label = pipewarden::metrics::ReasonLabel {
            reason: "Rebuilt".to_owned(),
        };
        let dropped = metrics.scale.swf_events_dropped.get_or_create(&label).get();
        let combined = metrics
            .scale
            .swf_events_combined
            .get_or_create(&label)
            .get();
        pipewarden_tests::wait::until("the Events", PASS_TIMEOUT, || async {
            let posted = count_events(&log.all()) as u64;
            Ok((posted + dropped + combined >= rebuilt).then_some(()))
        })
        .await?;
        // Combined ones are created at the next summary, within 30 s.
        if combined > 0 {
            tokio::time::sleep(COMBINED_EVENTS_DUE).await;
        }
    }
    running.stop().await;
    let _ = std::fs::remove_dir_all(&cache);
    let mut measured = measured(wall, cpu_secs, &log, rss_after_pass);
    measured.cpu_secs_per_pass = cpu_per_pass;
    Ok(measured)
}

/// Says on stderr how many decisions of the first pass had another outcome than the one
/// measured (e.g. resyncs of SWFs already decided): work the pass did besides its own.
fn report_other_decisions(running: &Running, measured: &str) {
    let others: Vec<String> = DECISION_OUTCOMES
        .into_iter()
        .filter(|outcome| *outcome != measured)
        .map(|outcome| (outcome, running.decisions(outcome)))
        .filter(|(_, n)| *n > 0)
        .map(|(outcome, n)| format!("{n} {outcome}"))
        .collect();
    if !others.is_empty() {
        eprintln!(
            "pipewarden ({measured}): first pass also decided {}",
            others.join(", ")
        );
    }
}

fn measured(wall: Duration, cpu_secs: f64, log: &RequestLog, rss_after_pass: Vec<u64>) -> Measured {
    let requests = &log.all();
    let swf = |r: &&(Method, String)| r.1.contains("/scheduledworkflows");
    let (reads, writes): (Vec<_>, Vec<_>) = requests
        .iter()
        .filter(swf)
        .partition(|r| r.0 == Method::GET);
    let written = writes
        .iter()
        .filter_map(|(_, path)| written_swf(path))
        .collect();
    Measured {
        wall_secs: wall.as_secs_f64(),
        cpu_secs,
        swf_reads: reads.len(),
        swf_writes: writes.len(),
        events: count_events(requests),
        requests: requests.len(),
        bytes_written: log.swf_bytes_written(),
        peak_rss_kib: procfs::memory_kib("self", "VmHWM"),
        rss_after_pass_kib: rss_after_pass,
        cpu_secs_per_pass: Vec::new(),
        written,
    }
}

/// The SWF a write went to: `.../scheduledworkflows/NAME[?query]`.
fn written_swf(path: &str) -> Option<String> {
    let path = path.split('?').next()?;
    let name = path.split_once("/scheduledworkflows/")?.1;
    Some(name.split('/').next()?.to_owned()).filter(|name| !name.is_empty())
}

pub fn count_events(requests: &[(Method, String)]) -> usize {
    requests
        .iter()
        .filter(|(_, path)| path.contains("/events"))
        .count()
}
