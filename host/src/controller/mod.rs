//! `pipewarden run`: the controller. Loops fetch, call the policy through the engine and the
//! pure logic, and write; everything they decide is in `swf` and `exit`.

pub mod context;
pub mod health;
pub mod metrics;
pub mod policy_handle;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::watch;

use crate::cli::policy_args::{PolicyArgs, read_settings};
use context::Context;
use metrics::Metrics;
use policy_handle::{LoadedPolicy, PolicyHandle};

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Policy settings (JSON or YAML), validated by the policy at load.
    #[arg(long, env = "PIPEWARDEN_SETTINGS")]
    pub settings: Option<PathBuf>,
    /// Namespaces to watch, comma-separated; all when empty.
    #[arg(long, env = "PIPEWARDEN_NAMESPACES", value_delimiter = ',')]
    pub namespaces: Vec<String>,
    /// Decisions and writes in flight at once, per loop.
    #[arg(long, env = "PIPEWARDEN_CONCURRENCY", default_value_t = 8)]
    pub concurrency: usize,
    /// Address for /healthz, /readyz and /metrics.
    #[arg(long, env = "PIPEWARDEN_HTTP_ADDR", default_value = "0.0.0.0:9090")]
    pub http_addr: SocketAddr,
}

/// Load and validate the policy, or refuse to start.
pub fn load_policy(
    args: &PolicyArgs,
    settings: Option<&PathBuf>,
    metrics: &Metrics,
) -> anyhow::Result<LoadedPolicy> {
    let attempt = || -> anyhow::Result<LoadedPolicy> {
        let settings = read_settings(settings)?;
        let policy = args.load()?;
        policy
            .validate_settings(&settings)
            .map_err(|e| anyhow::anyhow!("policy {} rejected its settings: {e}", policy.label()))?;
        let report = policy.load_report();
        tracing::info!(
            policy = policy.label(),
            digest = policy.digest(),
            code = ?report.source,
            millis = report.code_time.as_secs_f64() * 1e3,
            "policy loaded and settings validated"
        );
        Ok(LoadedPolicy { policy, settings })
    };
    let result = attempt();
    Metrics::count(
        &metrics.policy_loads,
        if result.is_ok() { "loaded" } else { "refused" },
    );
    result
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let loaded = load_policy(&args.policy, args.settings.as_ref(), &metrics)?;
    let client = kube::Client::try_default()
        .await
        .context("cannot build a Kubernetes client (KUBECONFIG or in-cluster config)")?;
    let (_writer, may_write) = watch::channel(true);
    metrics.leader.set(1);
    let ctx = Context::new(
        client,
        PolicyHandle::new(loaded, metrics.clone()),
        metrics.clone(),
        args.namespaces.clone(),
        args.concurrency,
        may_write,
    );
    let http = tokio::spawn(health::serve(
        args.http_addr,
        metrics,
        ctx.readiness.clone(),
    ));
    tokio::select! {
        result = http => result.context("http server task")?,
        _ = shutdown_signal() => {
            tracing::info!("shutting down");
            Ok(())
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
