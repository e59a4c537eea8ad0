//! One measured process: `plan` as `pipewarden plan` runs it (its output to a file), or `run`'s
//! SWF loop to the end of its first pass. The parent starts this binary again with the role and
//! its inputs in the environment and reads the result from a file.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use clap::Parser as _;
use pipewarden::metrics::{Label, SwfDecisionLabel};
use pipewarden::swf::outcome::SwfDecision;
use pipewarden_tests::procfs;
use pipewarden_tests::swf_support::{
    ControllerArgs, DEFAULT_POLICY, DEFAULT_SETTINGS, TARGET, built_policy, repo_path,
};
use serde::{Deserialize, Serialize};

pub const ROLE: &str = "PIPEWARDEN_BENCH_ROLE";
const KUBECONFIG: &str = "KUBECONFIG";
const NAMESPACES: &str = "PIPEWARDEN_BENCH_NAMESPACES";
const COUNT: &str = "PIPEWARDEN_BENCH_COUNT";
const STALE: &str = "PIPEWARDEN_BENCH_STALE";
const RESULT: &str = "PIPEWARDEN_BENCH_RESULT";
/// Time allowed for `run`'s first pass.
const PASS_TIMEOUT: Duration = Duration::from_secs(3600);
/// The Deployment's environment that changes what `run` measures (deploy/base/deployment.yaml).
const DEPLOYMENT_ENV: [(&str, &str); 1] = [("MALLOC_ARENA_MAX", "2")];

#[derive(Debug, Serialize, Deserialize)]
pub struct Measured {
    pub wall_secs: f64,
    pub cpu_secs: f64,
    pub peak_rss_kib: u64,
    /// SWFs decided.
    pub decided: u64,
    /// Bytes `plan` printed.
    pub output_bytes: Option<u64>,
    /// What the run found, in a few words.
    pub said: String,
}

pub struct Spec<'a> {
    pub role: &'static str,
    pub what: &'static str,
    pub kubeconfig: &'a Path,
    /// The namespaces the SWFs are in, comma-separated.
    pub namespaces: &'a str,
    pub count: usize,
    /// How many of them a pass rebuilds.
    pub stale: usize,
    pub dir: &'a Path,
}

pub async fn run(spec: &Spec<'_>) -> Result<Measured> {
    let result = spec
        .dir
        .join(format!("{}.json", spec.what.replace([' ', ','], "-")));
    let output = spec.dir.join("plan.out");
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    if spec.role == "run" {
        command.envs(DEPLOYMENT_ENV);
    }
    let status = command
        .env(ROLE, spec.role)
        .env(KUBECONFIG, spec.kubeconfig)
        .env(NAMESPACES, spec.namespaces)
        .env(COUNT, spec.count.to_string())
        .env(STALE, spec.stale.to_string())
        .env(RESULT, &result)
        .stdout(std::fs::File::create(&output)?)
        .stderr(std::process::Stdio::inherit())
        .status()
        .await?;
    ensure!(status.success(), "{} failed: {status}", spec.what);
    let mut measured: Measured = serde_json::from_slice(&std::fs::read(&result)?)?;
    if spec.role == "plan" {
        measured.output_bytes = Some(std::fs::metadata(&output)?.len());
        measured.said = summary(&output)?;
    }
    Ok(measured)
}

/// The states plan counted, from the first line of its JSON Lines output.
fn summary(output: &Path) -> Result<String> {
    let text = std::fs::read_to_string(output)?;
    let first = text.lines().next().context("plan printed nothing")?;
    let plan: serde_json::Value = serde_json::from_str(first)?;
    let states = plan["summary"]["swfs"]["states"]
        .as_object()
        .context("no summary")?;
    let said: Vec<String> = states
        .iter()
        .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
        .map(|(state, n)| format!("{n} {state}"))
        .collect();
    Ok(said.join(", "))
}

pub fn main(role: &str) -> Result<()> {
    let count: u64 = std::env::var(COUNT)?.parse()?;
    let stale: u64 = std::env::var(STALE)?.parse()?;
    let namespaces = std::env::var(NAMESPACES)?;
    let measured = match role {
        "plan" => plan(&namespaces, count)?,
        "run" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(first_pass(&namespaces, count, stale))?,
        other => anyhow::bail!("unknown role {other}"),
    };
    std::fs::write(std::env::var(RESULT)?, serde_json::to_vec(&measured)?)?;
    Ok(())
}

/// `pipewarden plan -o jsonl` as an operator runs it on the namespaces.
fn plan(namespaces: &str, count: u64) -> Result<Measured> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        plan: pipewarden::config::PlanArgs,
    }
    let policy = built_policy(DEFAULT_POLICY).display().to_string();
    let settings = repo_path(DEFAULT_SETTINGS).display().to_string();
    let args = Cli::try_parse_from([
        "plan",
        "-o",
        "jsonl",
        "--policy",
        &policy,
        "--settings",
        &settings,
        "--target-version",
        TARGET,
        "--namespaces",
        namespaces,
        "--exit-gate=false",
    ])?
    .plan;
    let (started, cpu) = (Instant::now(), procfs::cpu_seconds("self"));
    pipewarden::cli::plan::run(&args)?;
    Ok(Measured {
        wall_secs: started.elapsed().as_secs_f64(),
        cpu_secs: procfs::cpu_seconds("self") - cpu,
        peak_rss_kib: procfs::memory_kib("self", "VmHWM"),
        decided: count,
        output_bytes: None,
        said: String::new(),
    })
}

/// `run`'s SWF loop until every stale SWF was rebuilt once.
async fn first_pass(namespaces: &str, count: u64, stale: u64) -> Result<Measured> {
    let config = kube::Config::infer().await?;
    let client = kube::Client::try_from(config)?;
    let namespaces: Vec<String> = namespaces.split(',').map(str::to_owned).collect();
    let args = ControllerArgs::new(&namespaces)
        .set("--exit-gate", "false")
        .parse()?;
    let (started, cpu) = (Instant::now(), procfs::cpu_seconds("self"));
    let handle = pipewarden::controller::start(args, client).await?;
    let decisions = |outcome: &str| {
        let label = SwfDecisionLabel {
            outcome: SwfDecision::from_label(outcome).expect("an SWF decision"),
        };
        handle.metrics().swf.decisions.get_or_create(&label).get()
    };
    let what = format!("{stale} rebuilds");
    pipewarden_tests::wait::until(&what, PASS_TIMEOUT, || async {
        Ok((decisions("rebuild") >= stale).then_some(()))
    })
    .await?;
    let measured = Measured {
        wall_secs: started.elapsed().as_secs_f64(),
        cpu_secs: procfs::cpu_seconds("self") - cpu,
        peak_rss_kib: procfs::memory_kib("self", "VmHWM"),
        decided: count,
        output_bytes: None,
        said: format!("{} rebuilt", decisions("rebuild")),
    };
    handle.stop().await;
    Ok(measured)
}
