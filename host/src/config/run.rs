//! Flags of `pipewarden run`, and what is refused before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::bail;

use super::duration::parse_duration;
use super::floor::{Floor, SECOND, check};
use super::settings::read_settings;
use super::{ClusterArgs, ExitArgs, LeaderArgs, PolicyArgs, ReportArgs, Shard, SwfArgs};
use crate::swf::api_server_env::DeploymentRef;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Policy settings (JSON or YAML), validated by the policy at load.
    #[arg(help_heading = "Policy", long, env = "PIPEWARDEN_SETTINGS")]
    pub settings: Option<PathBuf>,
    /// Refuse settings whose file does not have this digest (sha256:<hex> of its bytes, as
    /// `sha256sum` prints it): driver images and spec patches are as trusted as the policy.
    #[arg(
        help_heading = "Policy",
        long,
        env = "PIPEWARDEN_SETTINGS_SHA256",
        requires = "settings"
    )]
    pub settings_sha256: Option<String>,
    /// A file holding the settings pin; re-read on every (re)load. Keep it apart from the
    /// settings it pins (the shipped manifests set --settings-sha256 in the Deployment):
    /// whoever may edit the settings could otherwise edit their pin too.
    #[arg(
        help_heading = "Policy",
        long,
        env = "PIPEWARDEN_SETTINGS_SHA256_FILE",
        requires = "settings",
        conflicts_with = "settings_sha256"
    )]
    pub settings_sha256_file: Option<PathBuf>,
    /// Read the KFP API server's environment from its Deployment, `deployment/NAMESPACE/NAME`
    /// (e.g. deployment/kubeflow/ml-pipeline), with the ConfigMap values it names, and hand
    /// it to the policy beside --settings; re-read at every reload check, so a changed
    /// environment re-renders. Secrets are never read.
    #[arg(help_heading = "Policy", long, env = "PIPEWARDEN_SETTINGS_FROM", value_parser = DeploymentRef::parse)]
    pub settings_from: Option<DeploymentRef>,
    /// Namespaces to watch, comma-separated; all when empty.
    #[arg(
        help_heading = "Controller",
        long,
        env = "PIPEWARDEN_NAMESPACES",
        value_delimiter = ','
    )]
    pub namespaces: Vec<String>,
    /// Decisions and writes in flight at once, per loop.
    #[arg(
        help_heading = "Controller",
        long,
        env = "PIPEWARDEN_CONCURRENCY",
        default_value_t = 8
    )]
    pub concurrency: usize,
    /// Address for /healthz, /readyz and /metrics.
    #[arg(
        help_heading = "HTTP",
        long,
        env = "PIPEWARDEN_HTTP_ADDR",
        default_value = "0.0.0.0:9090"
    )]
    pub http_addr: SocketAddr,
    /// How often to look for a changed policy, settings or pin file; 0 turns reloading off.
    #[arg(
        help_heading = "Policy",
        long,
        env = "PIPEWARDEN_POLICY_RELOAD_SECONDS",
        default_value_t = 10
    )]
    pub policy_reload_seconds: u64,
    /// How long a loop's watch may keep failing before /readyz reports the loop unready.
    #[arg(help_heading = "Controller", long, env = "PIPEWARDEN_WATCH_GRACE", default_value = "30s", value_parser = parse_duration)]
    pub watch_grace: std::time::Duration,
    /// Handle only this shard of the SWFs and Workflows, `INDEX/COUNT` (e.g. 0/2): those whose
    /// uid hashes to INDEX. Each shard elects its leader on a Lease of its own.
    #[arg(help_heading = "Controller", long, env = "PIPEWARDEN_SHARD", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub leader: LeaderArgs,
    #[command(flatten)]
    pub exit: ExitArgs,
    #[command(flatten)]
    pub swf: SwfArgs,
    #[command(flatten)]
    pub reports: ReportArgs,
    /// The API server's URL, named in connection errors; `run` takes it from the kubeconfig.
    #[arg(skip)]
    pub api_server_url: Option<String>,
}

impl RunArgs {
    /// What can be refused before anything starts: flags below their floor, missing settings.
    pub fn check(&self) -> anyhow::Result<()> {
        // Unreadable settings are reported by the policy load, in its order; here only their
        // budget matters, held to the same floors as the flags.
        let budget = read_settings(self.settings.as_ref())
            .map(|settings| settings.budget)
            .unwrap_or_default();
        self.check_floors(&self.policy.with_settings_budget(&budget))?;
        if self.swf.enabled && self.settings.is_none() && self.settings_from.is_none() {
            bail!(
                "--settings (PIPEWARDEN_SETTINGS) or --settings-from (PIPEWARDEN_SETTINGS_FROM) \
                 is required by the SWF loop, which renders; without the SWF loop \
                 (--swf-loop=false) they are not"
            );
        }
        Ok(())
    }

    /// Every floor of `run`; `policy` is the policy flags with the settings' budget filled in.
    pub fn check_floors(&self, policy: &PolicyArgs) -> anyhow::Result<()> {
        let mut floors = policy.floors();
        floors.push(Floor::count(
            "--concurrency",
            "PIPEWARDEN_CONCURRENCY",
            self.concurrency as u64,
            1,
        ));
        floors.extend(self.leader.floors());
        floors.push(Floor::duration(
            "--watch-grace",
            Some("PIPEWARDEN_WATCH_GRACE"),
            self.watch_grace,
            SECOND,
        ));
        floors.extend(self.swf.floors());
        floors.extend(self.exit.floors());
        floors.extend(self.reports.floors());
        check(&floors)?;
        self.check_pool(policy)
    }

    /// Each loop makes up to `--concurrency` decisions at once, each in its own pooled
    /// instance; beyond the pool a decision fails instead of waiting, so the pool must hold
    /// both loops' worth.
    fn check_pool(&self, policy: &PolicyArgs) -> anyhow::Result<()> {
        let pool = policy.resolved_budget().pool_size as usize;
        let needed = 2 * self.concurrency;
        if pool < needed {
            bail!(
                "--policy-pool-size (PIPEWARDEN_POLICY_POOL_SIZE) is {pool}; --concurrency {} \
                 lets the two loops run {needed} decisions at once: raise the pool or lower \
                 --concurrency",
                self.concurrency
            );
        }
        Ok(())
    }
}
