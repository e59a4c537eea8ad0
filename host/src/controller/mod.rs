//! `pipewarden run`: the controller. Loops fetch, call the policy through the engine and the
//! pure logic, and write; everything they decide is in `swf` and `exit`.

pub mod context;
pub mod exit_gate;
pub mod health;
pub mod leadership;
pub mod list_turns;
pub mod reports;
pub mod swf;
pub mod watch_health;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::watch;

use crate::cluster::policy_handle::PolicyHandle;
use crate::cluster::policy_load::load_policy_keeping_refused;
use crate::cluster::policy_reload;
use crate::cluster::settings_source::{SettingsPin, SettingsSource};
pub use crate::config::RunArgs;
use crate::metrics::Metrics;
use context::Context;

/// A started controller: its loops and HTTP server run until `stop`, or until dropped.
pub struct ControllerHandle {
    pub ctx: Context,
    /// Where /healthz, /readyz and /metrics are served (the bound port, if 0 was asked).
    pub http_addr: SocketAddr,
    tasks: tokio::task::JoinSet<anyhow::Result<()>>,
    /// Set when this replica takes part in leader election, to release the lease on shutdown.
    leader: Option<crate::config::LeaderArgs>,
    /// Cleared once the loops are stopped: a stopped replica does not write.
    writer: watch::Sender<bool>,
}

impl ControllerHandle {
    pub fn metrics(&self) -> &Metrics {
        &self.ctx.metrics
    }

    /// Stop every loop at once, as a killed process would: nothing is flushed or finished,
    /// and the lease is left to expire.
    pub async fn stop(mut self) {
        self.halt().await;
    }

    /// Stop as on SIGTERM: the loops first, so nothing writes once the lease is given up, then
    /// give the lease up, so a standby takes over at once.
    pub async fn shutdown(mut self) {
        self.halt().await;
        if let Some(args) = &self.leader
            && let Err(error) = leadership::Elector::release(self.ctx.client.clone(), args).await
        {
            tracing::warn!(
                error = format!("{error:#}"),
                "could not release the lease; a standby takes over when it expires"
            );
        }
    }

    async fn halt(&mut self) {
        self.tasks.shutdown().await;
        self.writer.send_replace(false);
        self.ctx.metrics.info.leader.set(0);
    }

    /// Wait until a task fails (they run forever otherwise).
    pub async fn wait(&mut self) -> anyhow::Result<()> {
        match self.tasks.join_next().await {
            Some(Ok(result)) => result,
            Some(Err(join_error)) => Err(join_error.into()),
            None => Ok(()),
        }
    }
}

/// Load the policy, then start the HTTP server and the loops against `client`.
pub async fn start(args: RunArgs, client: kube::Client) -> anyhow::Result<ControllerHandle> {
    start_with(args, client, Hooks::default()).await
}

/// Test inputs that no flag or environment variable can set; `run` never passes any.
#[doc(hidden)]
#[derive(Default)]
pub struct Hooks {
    /// Workflow events merged into the exit gate's watch stream, e.g. stale copies.
    pub exit_events: Option<tokio::sync::mpsc::Receiver<exit_gate::InjectedEvent>>,
    /// Told `namespace/name` of each SWF decision, in the order they were made.
    pub swf_decisions: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

/// [`start`] with test [`Hooks`].
#[doc(hidden)]
pub async fn start_with(
    args: RunArgs,
    client: kube::Client,
    hooks: Hooks,
) -> anyhow::Result<ControllerHandle> {
    args.check()?;
    let mut args = args;
    let shard = args.shard.unwrap_or_default();
    args.leader.lease_name = shard.lease_name(&args.leader.lease_name);
    let metrics = Arc::new(Metrics::with_swf_namespaces(
        args.reports.metrics_swf_namespaces,
    ));
    report_mode(&args, &metrics);
    metrics.info.set_shard(shard.index, shard.count);
    metrics.completions.set_shard(shard);
    let source = SettingsSource {
        file: args.settings.clone(),
        live: args.settings_from.clone().map(|at| (client.clone(), at)),
        pin: SettingsPin::from_flags(
            args.settings_sha256.as_deref(),
            args.settings_sha256_file.as_ref(),
        ),
    };
    // The settings file is the operator's: unreadable, it stops the start. The API server's
    // install is KFP's: unreadable, it holds the SWF loop until it reads again.
    let file_settings = source.read_file()?;
    let (settings, install) = match source.read_install(&file_settings).await {
        Some(Ok((settings, install))) => (settings, Some(Ok(install))),
        Some(Err(error)) => (file_settings, Some(Err(error))),
        None => (file_settings, None),
    };
    let reload_inputs = policy_reload::Inputs::new(args.policy.clone(), source.clone());
    let reload_inputs = match args.policy_reload_seconds {
        0 => reload_inputs.settings_only(),
        _ => reload_inputs,
    };
    // Taken before the load, so files changed while it runs are reloaded, not missed.
    let loaded_from = reload_inputs.fingerprint(&settings.text);
    let (loaded, refused) =
        load_policy_keeping_refused(&args.policy, &settings, source.is_given(), &metrics)?;
    if let Some(refused) = &refused {
        tracing::error!(
            error = refused.as_str(),
            "settings refused: the SWF loop writes nothing until they change; the exit gate runs"
        );
    }
    let install_facts = policy_reload::install_facts(refused, install.as_ref());
    let elect = args.leader.leader_elect;
    // Without election this replica writes; with it, only once it holds the lease.
    let (writer, may_write) = watch::channel(!elect);
    metrics.info.leader.set(i64::from(!elect));
    let ctx = Context::new(
        client.clone(),
        PolicyHandle::new(loaded, metrics.clone()),
        metrics.clone(),
        args.namespaces.clone(),
        args.concurrency,
        may_write,
    )
    .with_watch_grace(args.watch_grace)
    .with_shard(shard)
    .with_identity(&args.leader.identity())
    .with_own_pod(swf::standing::own_pod(
        &args.leader.lease_namespace,
        args.leader.identity.as_deref(),
    ));
    ctx.install.send_replace(install_facts);
    let ctx = match &args.api_server_url {
        Some(url) => ctx.with_api_server(url),
        None => ctx,
    };
    let listener = tokio::net::TcpListener::bind(args.http_addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.http_addr))?;
    let http_addr = listener.local_addr()?;
    let swf_loop = swf::prepare(&ctx, args.swf, hooks.swf_decisions)?;
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(health::serve(
        listener,
        metrics.clone(),
        ctx.readiness.clone(),
    ));
    if elect {
        let elector = leadership::Elector::new(
            client,
            &args.leader,
            writer.clone(),
            metrics.clone(),
            ctx.api_server.clone(),
        );
        tasks.spawn(elector.run());
    }
    // The API server's install is followed even when policy files are not reloaded.
    if args.policy_reload_seconds > 0 || args.settings_from.is_some() {
        let every = match args.policy_reload_seconds {
            0 => policy_reload::INSTALL_CHECK,
            seconds => std::time::Duration::from_secs(seconds),
        };
        tasks.spawn(policy_reload::watch(
            reload_inputs,
            loaded_from,
            every,
            ctx.policy.clone(),
            ctx.install.clone(),
            metrics,
        ));
    }
    tasks.spawn(reports::run(ctx.clone(), args.reports.clone()));
    if args.exit.exit_gate {
        ctx.readiness.expect("exit");
        tasks.spawn(exit_gate::run(ctx.clone(), args.exit, hooks.exit_events));
    }
    if let Some(swf_loop) = swf_loop {
        tasks.spawn(swf_loop);
    }
    Ok(ControllerHandle {
        ctx,
        http_addr,
        tasks,
        leader: elect.then_some(args.leader),
        writer,
    })
}

/// What this replica may write, in `pipewarden_mode_info` and one log line: a report-only
/// install says so.
fn report_mode(args: &RunArgs, metrics: &Metrics) {
    use crate::config::ExitMode;
    use crate::engine::RebuildPolicy;
    use crate::swf::rebuild_policy_name;
    let rebuild_policy = rebuild_policy_name(args.swf.rebuild_policy);
    let exit_mode = match args.exit.exit_mode {
        ExitMode::Notify => "notify",
        ExitMode::Observe => "observe",
    };
    let swf_writes = args.swf.enabled && args.swf.rebuild_policy != RebuildPolicy::Disable;
    let exit_writes = args.exit.exit_gate && args.exit.exit_mode == ExitMode::Notify;
    metrics
        .info
        .set_mode(rebuild_policy, exit_mode, swf_writes || exit_writes);
    if swf_writes || exit_writes {
        tracing::info!(rebuild_policy, exit_mode, "mode: enforce");
    } else {
        tracing::warn!(
            rebuild_policy,
            exit_mode,
            "mode: report-only: SWFs are decided and not written, completions are decided and \
             not sent (the enforce overlay turns writes on)"
        );
    }
}

/// `pipewarden run`: start, then run until SIGTERM or Ctrl-C, or until a loop fails.
pub async fn run(mut args: RunArgs) -> anyhow::Result<()> {
    args.check()?;
    let config = args.cluster.config().await?;
    args.api_server_url = Some(config.cluster_url.to_string());
    let client = kube::Client::try_from(config).with_context(|| {
        format!(
            "cannot build a Kubernetes client for {}",
            args.api_server_url.as_deref().unwrap_or_default()
        )
    })?;
    let mut handle = start(args, client).await?;
    tokio::select! {
        result = handle.wait() => result,
        _ = shutdown_signal() => {
            tracing::info!("shutting down");
            handle.shutdown().await;
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
