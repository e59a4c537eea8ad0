//! The pipewarden demo: a real control plane seeded with ScheduledWorkflows and Workflows as
//! KFP and Argo leave them, then the controller with the default policy on them, then what it
//! did, as tables.
//!
//! `--target=VERSION` renders for another KFP release (default 2.17.0; `make demo TARGET=2.16.1`),
//! with that release's shipped settings. `--hold` keeps the control plane up (and prints its
//! kubeconfig) until Ctrl-C. The
//! controller's own log goes to a file (`--log=PATH`, by default `target/demo/pipewarden.log`),
//! so it never lands between the tables; the demo prints where it is and what it holds.

mod compile_check;
mod controller_log;
mod report;
mod run;
mod seed;
mod table;

use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context as _, Result};
use pipewarden_tests::ControlPlane;

/// The running Argo workflow the demo completes, and the SWF it corrupts once rebuilt.
const WORKFLOW: (&str, &str) = ("data-eng", "nightly-etl-4x9vq");
const SWF: (&str, &str) = ("kubeflow-user-team-a", "dailyechox7k2p");

/// The KFP version the demo renders for: `--target=VERSION`, 2.17.0 unless given.
pub fn target() -> &'static str {
    static TARGET: OnceLock<String> = OnceLock::new();
    TARGET.get_or_init(|| {
        std::env::args()
            .skip(1)
            .find_map(|arg| arg.strip_prefix("--target=").map(str::to_owned))
            .unwrap_or_else(|| "2.17.0".to_owned())
    })
}

/// Whether the target's KFP API server owns every schedule in multi-user mode (2.18 on, as the
/// release ledger says): the demo then installs KFP's API server as its multi-user manifests
/// do, and pipewarden writes nothing.
pub fn api_owned() -> bool {
    use kfp_compiler::release::ledger::{Entry, Owner, api_owned_since};
    match Entry::find(target()) {
        Some(entry) => entry.owner == Owner::ApiOwnedInMultiUser,
        None => version_key(target()) >= version_key(api_owned_since()),
    }
}

fn version_key(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

#[tokio::main]
async fn main() -> Result<()> {
    let hold = std::env::args().skip(1).any(|arg| arg == "--hold");
    let log = controller_log::path(std::env::args().skip(1))?;
    // Every decision line (PIPEWARDEN_LOG=debug: the up-to-date ones too), kept off the tables.
    pipewarden::logging::init_to_file(&log, "info")
        .with_context(|| format!("cannot write the controller log {}", log.display()))?;

    let started = Instant::now();
    let control_plane = ControlPlane::start().await?;
    let versions = control_plane.versions();
    phase(
        "control plane",
        started,
        format!(
            "kube-apiserver {}, etcd {}, CRDs installed",
            versions.apiserver, versions.etcd
        ),
    );
    let client = control_plane.client()?;

    let started = Instant::now();
    let seeded = seed::seed(&client).await?;
    phase("seed", started, seeded.summary());
    inventory(&client, "before").await?;

    let started = Instant::now();
    let running = run::start(client.clone()).await?;
    let swfs = seeded.count("ScheduledWorkflow") as u64;
    running.swf_decisions(swfs).await?;
    let policy = running.handle.ctx.policy.current();
    phase(
        "controller",
        started,
        format!(
            "policy {} ({}), target KFP {} ({}), {} SWF decisions, {} writes",
            policy.policy.label(),
            &policy.policy.digest()[..19],
            target(),
            run::target_support(&running.handle),
            run::counter(&running.handle, "swf_decisions"),
            run::counter(&running.handle, "swf_writes"),
        ),
    );

    let started = Instant::now();
    let stale = run::complete(&client, WORKFLOW.0, WORKFLOW.1).await?;
    run::notifications(&running, 1).await?;
    let handled = running.inject(&stale).await?;
    phase(
        "exit gate",
        started,
        format!(
            "{}/{} completed: one exit notification; its stale Running copy: {}",
            WORKFLOW.0, WORKFLOW.1, handled.decision
        ),
    );

    let started = Instant::now();
    if !run::target_support(&running.handle).starts_with("supported") {
        phase(
            "drift",
            started,
            "skipped: where the SWF loop writes nothing, restores included, nothing is restored"
                .into(),
        );
    } else {
        run::corrupt(&client, SWF.0, SWF.1).await?;
        run::repaired(&client, SWF.0, SWF.1).await?;
        phase(
            "drift",
            started,
            format!(
                "{}/{} overwritten as in KFP #11296's reproduction, restored from its last good \
                 render",
                SWF.0, SWF.1
            ),
        );
    }

    inventory(&client, "after").await?;
    println!("\nwhat pipewarden did (its Events):");
    let events = report::events(&client).await?;
    println!("\ncounters:");
    report::counters(&running.handle);
    println!();
    phase("report", started, format!("{events} Events"));
    println!("demo: controller log   {}", controller_log::summary(&log)?);

    if hold {
        println!("kubeconfig: {}", control_plane.kubeconfig().display());
        println!("holding the control plane with the controller running; Ctrl-C to stop");
        tokio::signal::ctrl_c().await?;
    }
    let started = Instant::now();
    running.handle.shutdown().await;
    drop(control_plane);
    phase(
        "stop",
        started,
        "controller and control plane stopped".to_owned(),
    );
    Ok(())
}

async fn inventory(client: &kube::Client, when: &str) -> Result<()> {
    let rows = table::inventory(client).await?;
    println!("\nobjects {when}:");
    table::print(&rows);
    println!();
    Ok(())
}

/// One line per phase: name, duration, what it did.
fn phase(name: &str, started: Instant, detail: String) {
    println!("demo: {name:<14} {:>6.1?}  {detail}", started.elapsed());
}
