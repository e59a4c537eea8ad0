//! The Helm chart `deploy/helm/pipewarden`: linted, rendered and installed from a copy with the
//! built policy added by the chart's own `add-policy.sh`, by the `helm` that
//! `tests/control-plane/build.sh --only helm` builds.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail, ensure};
use kube::api::DynamicObject;

use super::{TempDir, copy_tree, documents, repo_path};
use crate::binaries::bin_dir;

/// The `helm` binary, or an error giving the command that builds it.
pub fn helm() -> Result<PathBuf> {
    let (dir, origin) = bin_dir();
    let helm = dir.join("helm");
    ensure!(
        helm.is_file(),
        "helm not found in {} ({origin}): build it with `tests/control-plane/build.sh --only helm` \
         (or `make control-plane`)",
        dir.display()
    );
    Ok(helm)
}

/// A copy of `deploy/helm/` whose chart holds `wasm` (through the chart's `add-policy.sh`);
/// `None` leaves the chart without a policy.
pub struct Chart {
    _copy: TempDir,
    pub dir: PathBuf,
}

impl Chart {
    pub fn with_policy(wasm: Option<&Path>) -> Result<Chart> {
        let copy = TempDir::new("helm")?;
        let helm_dir = copy.path().join("helm");
        copy_tree(&repo_path("deploy/helm"), &helm_dir)?;
        // What `add-policy.sh` may have left in the repository's chart is not the test's.
        for file in ["policy.wasm", "policy.sha256"] {
            let _ = std::fs::remove_file(helm_dir.join("pipewarden/policy").join(file));
        }
        if let Some(wasm) = wasm {
            let output = Command::new(helm_dir.join("add-policy.sh"))
                .arg(wasm)
                .output()
                .context("running deploy/helm/add-policy.sh")?;
            ensure!(
                output.status.success(),
                "add-policy.sh: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(Chart {
            dir: helm_dir.join("pipewarden"),
            _copy: copy,
        })
    }

    /// `helm <command...> <chart> --set <each of sets>`: stdout, or the error with stderr.
    pub fn run(&self, command: &[&str], sets: &[&str]) -> Result<String> {
        let chart = self.dir.display().to_string();
        let mut args = command.to_vec();
        args.push(&chart);
        for set in sets {
            args.extend(["--set", set]);
        }
        run_helm(&args)
    }

    /// `helm template pipewarden <chart> -n kubeflow --set ...`, as objects: what an install
    /// creates (the `helm test` pod is left out: it exists only while `helm test` runs).
    pub fn template(&self, sets: &[&str]) -> Result<Vec<DynamicObject>> {
        let args = ["template", "pipewarden", "-n", "kubeflow", "--skip-tests"];
        documents(&self.run(&args, sets)?)
    }
}

/// `helm <args>`: stdout, or an error with the arguments and stderr.
pub fn run_helm(args: &[&str]) -> Result<String> {
    let output = Command::new(helm()?)
        .args(args)
        .output()
        .context("running helm")?;
    if !output.status.success() {
        bail!(
            "helm {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}
