//! The pipewarden demo: a real control plane with ScheduledWorkflows and Workflows as KFP and
//! Argo leave them, shown as a table. Grows into running the controller against them.
//!
//! `--hold` keeps the control plane up (and prints its kubeconfig) until Ctrl-C.

mod seed;
mod table;

use std::time::Instant;

use anyhow::Result;
use pipewarden_tests::ControlPlane;

#[tokio::main]
async fn main() -> Result<()> {
    let hold = std::env::args().skip(1).any(|arg| arg == "--hold");

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

    let started = Instant::now();
    let rows = table::inventory(&client).await?;
    phase("inventory", started, format!("{} objects", rows.len()));
    println!();
    table::print(&rows);
    println!();

    if hold {
        println!("kubeconfig: {}", control_plane.kubeconfig().display());
        println!("holding the control plane; Ctrl-C to stop");
        tokio::signal::ctrl_c().await?;
    }
    let started = Instant::now();
    drop(control_plane);
    phase("stop", started, "control plane stopped".to_owned());
    Ok(())
}

/// One line per phase: name, duration, what it did.
fn phase(name: &str, started: Instant, detail: String) {
    println!("demo: {name:<14} {:>6.1?}  {detail}", started.elapsed());
}
