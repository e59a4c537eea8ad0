//! Where each process runs: with two CPUs or more, the control plane (etcd, kube-apiserver) on
//! CPU 0 and each measured child on CPU 1 (`taskset`, util-linux), so a side's wall time shows
//! the side, not its contention with the servers. `PIPEWARDEN_BENCH_PIN=0` leaves them to the
//! scheduler.

use anyhow::{Context as _, Result};
use pipewarden_tests::ControlPlane;

/// The CPU the control plane is pinned to.
const SERVERS: usize = 0;
/// The CPU measured children are pinned to.
const CHILDREN: usize = 1;

fn wanted() -> bool {
    std::env::var("PIPEWARDEN_BENCH_PIN").as_deref() != Ok("0")
        && std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

/// Pins every thread of the control plane's servers to [`SERVERS`]; says what it did.
pub fn servers(control_plane: &ControlPlane) -> Result<String> {
    if !wanted() {
        return Ok("not pinned (PIPEWARDEN_BENCH_PIN=0, or one CPU)".into());
    }
    for (name, pid) in control_plane.server_pids() {
        let Some(pid) = pid else { continue };
        let status = std::process::Command::new("taskset")
            .args(["-a", "-p", "-c", &SERVERS.to_string(), &pid])
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("taskset for {name} (util-linux)"))?;
        anyhow::ensure!(status.success(), "taskset {name}: {status}");
    }
    Ok(format!(
        "control plane on CPU {SERVERS}, each measured process on CPU {CHILDREN}"
    ))
}

/// The CPU a measured child runs on, when pinned.
pub fn child_cpu() -> Option<usize> {
    wanted().then_some(CHILDREN)
}
