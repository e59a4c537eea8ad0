//! A controller run in-process from `pipewarden run` flags, on whatever client the test gives it
//! (a ServiceAccount's token, a partitioned connection), and what it counted.

use anyhow::Result;
use clap::Parser as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use pipewarden::controller::{ControllerHandle, RunArgs};
use pipewarden::metrics::{Label, OutcomeLabel, SwfDecisionLabel};
use pipewarden::swf::outcome::SwfDecision;

use super::{DEFAULT_SETTINGS, TARGET, built_policy, init_logs, repo_path, wait_for};

/// Flags every test replica gets: the default policy, rebuild policy `always` for [`TARGET`],
/// only `namespace` watched, an HTTP port of its own, and policy deadlines that do not depend
/// on how busy the machine running the tests is.
pub fn base_flags(namespace: &str) -> Vec<String> {
    vec![
        format!("--policy={}", built_policy("kfp-default").display()),
        format!("--settings={}", repo_path(DEFAULT_SETTINGS).display()),
        format!("--namespaces={namespace}"),
        "--rebuild-policy=always".into(),
        format!("--target-version={TARGET}"),
        "--http-addr=127.0.0.1:0".into(),
        "--decision-timeout-ms=5000".into(),
        "--render-timeout-ms=5000".into(),
    ]
}

/// Flags for one of several replicas electing a leader on the Lease `lease` in `namespace`.
pub fn leader_flags(namespace: &str, lease: &str, identity: &str, seconds: u32) -> Vec<String> {
    vec![
        "--leader-elect".into(),
        format!("--lease-namespace={namespace}"),
        format!("--lease-name={lease}"),
        format!("--lease-duration-seconds={seconds}"),
        format!("--identity={identity}"),
    ]
}

/// Parses `flags` as `pipewarden run` does.
pub fn run_args(flags: &[String]) -> Result<RunArgs> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    let argv = std::iter::once("pipewarden".to_owned()).chain(flags.iter().cloned());
    Ok(Cli::try_parse_from(argv)?.run)
}

/// Starts a controller with `flags` on `client` and waits until it is ready.
pub async fn start_replica(client: Client, flags: &[String]) -> Result<ControllerHandle> {
    init_logs();
    let handle = pipewarden::controller::start(run_args(flags)?, client).await?;
    wait_for("the controller to be ready", || {
        handle.ctx.readiness.waiting().is_empty()
    })
    .await?;
    Ok(handle)
}

/// The controller's counters by outcome.
#[derive(Clone, Copy, Debug)]
pub enum Counted {
    SwfDecisions,
    SwfWrites,
    ExitNotifications,
    PolicyLoads,
}

/// How many times `what` ended with `outcome`, e.g. `count(&h, Counted::SwfWrites, "ok")`.
pub fn count(handle: &ControllerHandle, what: Counted, outcome: &str) -> u64 {
    let label = OutcomeLabel {
        outcome: outcome.to_owned(),
    };
    let metrics = handle.metrics();
    match what {
        Counted::SwfDecisions => {
            let outcome = SwfDecision::from_label(outcome).expect("an SWF decision");
            let label = SwfDecisionLabel { outcome };
            metrics.swf.decisions.get_or_create(&label).get()
        }
        Counted::SwfWrites => metrics.swf.writes.get_or_create(&label).get(),
        Counted::ExitNotifications => metrics.exit.notifications.get_or_create(&label).get(),
        Counted::PolicyLoads => metrics.policy.loads.get_or_create(&label).get(),
    }
}

/// SWF write requests of every outcome.
pub fn swf_writes(handle: &ControllerHandle) -> u64 {
    ["ok", "conflict", "gone", "error"]
        .iter()
        .map(|outcome| count(handle, Counted::SwfWrites, outcome))
        .sum()
}

/// True while the replica says it may write, by its gauge and its context.
pub fn leads(handle: &ControllerHandle) -> bool {
    handle.metrics().info.leader.get() == 1 && handle.ctx.may_write()
}

/// Who holds the Lease `namespace/name`, if anyone.
pub async fn lease_holder(client: &Client, namespace: &str, name: &str) -> Result<Option<String>> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let lease = leases.get_opt(name).await?;
    Ok(lease
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty()))
}
