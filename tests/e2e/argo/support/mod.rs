//! Shared by the tests on Argo's own controller (and `make bench-stale`): workflows as users
//! submit them, the exit-handler pods Argo creates, `argo retry`, and KFP's ScheduledWorkflow
//! controller's instantiation of an SWF.

// The bench uses a part of this module.
#![allow(dead_code)]

pub mod kfp;
pub mod pods;
pub mod workflows;

pub use pods::ExitPods;
pub use workflows::*;

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::ControlPlane;

/// `argo retry [-p NAME=VALUE]... NAME` in Kubernetes API mode (the same module's client and
/// workflow service `cmd/argo` uses), against the API server directly.
pub async fn argo_retry(
    control_plane: &ControlPlane,
    namespace: &str,
    name: &str,
    parameters: &[(&str, &str)],
) -> Result<String> {
    let binary = pipewarden_tests::argo::built("argo-v4-retry")?;
    let mut command = tokio::process::Command::new(&binary);
    command
        .arg(format!(
            "--kubeconfig={}",
            control_plane.kubeconfig().display()
        ))
        .arg("-n")
        .arg(namespace);
    for (parameter, value) in parameters {
        command.arg("-p").arg(format!("{parameter}={value}"));
    }
    let output = command
        .arg(name)
        .output()
        .await
        .with_context(|| format!("running {}", binary.display()))?;
    ensure!(
        output.status.success(),
        "argo retry {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
