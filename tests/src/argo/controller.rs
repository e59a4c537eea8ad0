//! Argo's workflow controller as a process, talking to the API server through the stale-copy
//! proxy, with its ConfigMap in a namespace of its own.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use serde_json::json;

use super::proxy::StaleProxy;
use crate::ControlPlane;
use crate::supervise::{Supervised, state_dir};
use crate::wait;

/// The Argo releases the stack can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgoVersion {
    /// v3.6.7: the Argo of KFP 2.14, with #12198 as merged (its stale-copy guard never matches).
    V3,
    /// v4.0.7: the uid/resourceVersion stale-copy fix (#16357).
    V4,
}

impl ArgoVersion {
    /// The binary `tests/control-plane/build.sh` writes.
    pub fn binary(self) -> &'static str {
        match self {
            ArgoVersion::V3 => "argo-v3-workflow-controller",
            ArgoVersion::V4 => "argo-v4-workflow-controller",
        }
    }

    pub fn tag(self) -> &'static str {
        match self {
            ArgoVersion::V3 => "v3.6.7",
            ArgoVersion::V4 => "v4.0.7",
        }
    }
}

/// The controller's ConfigMap (`workflow-controller-configmap`): Argo's defaults, without the
/// metrics and telemetry servers (fixed ports; several controllers may run side by side).
const CONFIG: [(&str, &str); 2] = [
    ("metricsConfig", "enabled: false\n"),
    ("telemetryConfig", "enabled: false\n"),
];

/// Environment Argo reads: no leader election (one replica), and a requeue time of 1 s instead
/// of 10 s (how soon a workflow waiting on its pods is looked at again; Argo's own e2e setting),
/// which only shortens waits.
const ENVIRONMENT: [&str; 2] = ["LEADER_ELECTION_DISABLE=true", "DEFAULT_REQUEUE_TIME=1s"];

/// A running Argo workflow controller.
pub struct ArgoController {
    pub version: ArgoVersion,
    /// The namespace holding its ConfigMap.
    pub namespace: String,
    process: Supervised,
}

impl ArgoController {
    /// Starts `version`'s controller behind `proxy`, its ConfigMap in a new namespace named
    /// after `name`; managing all namespaces, or only `managed` (`--namespaced`); `flags` follow
    /// the harness's own. Waits until its caches synced and its workers run.
    pub async fn start(
        control_plane: &ControlPlane,
        proxy: &StaleProxy,
        version: ArgoVersion,
        managed: Option<&str>,
        flags: &[String],
        name: &str,
    ) -> Result<Self> {
        let binary = super::built(version.binary())?;
        let client = control_plane.client()?;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let namespace = namespaces
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        generate_name: Some(format!("{name}-")),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await
            .context("creating the Argo controller's namespace")?
            .metadata
            .name
            .context("a created namespace has a name")?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, &namespace);
        let config = ConfigMap {
            metadata: ObjectMeta {
                name: Some("workflow-controller-configmap".into()),
                ..Default::default()
            },
            data: Some(
                CONFIG
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        };
        config_maps.create(&PostParams::default(), &config).await?;

        let dir = state_dir(version.binary())?;
        let kubeconfig = dir.join("kubeconfig.yaml");
        let file = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": proxy.url}}],
            "users": [{"name": "argo", "user": {}}],
            "contexts": [{"name": "argo", "context": {
                "cluster": "proxy", "user": "argo", "namespace": namespace,
            }}],
            "current-context": "argo",
        });
        std::fs::write(&kubeconfig, serde_json::to_vec_pretty(&file)?)?;
        let mut args: Vec<String> = ENVIRONMENT.iter().map(|e| (*e).to_owned()).collect();
        args.push(binary.display().to_string());
        args.extend([
            format!("--kubeconfig={}", kubeconfig.display()),
            format!(
                "--executor-image=quay.io/argoproj/argoexec:{}",
                version.tag()
            ),
            "--loglevel=info".to_owned(),
        ]);
        if let Some(managed) = managed {
            args.extend([
                "--namespaced".to_owned(),
                format!("--managed-namespace={managed}"),
            ]);
        }
        args.extend(flags.iter().cloned());
        let process = Supervised::spawn(
            version.binary(),
            dir,
            std::path::Path::new("/usr/bin/env"),
            &args,
        )?;
        let controller = ArgoController {
            version,
            namespace,
            process,
        };
        // Logged once the informers synced, right before the workers start.
        wait::until(
            &format!("Argo {} to sync its caches", version.tag()),
            Duration::from_secs(120),
            || async {
                controller.process.ensure_running()?;
                Ok(controller
                    .log()
                    .contains("Starting CronWorkflow controller")
                    .then_some(()))
            },
        )
        .await?;
        Ok(controller)
    }

    /// Everything the controller logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.process.dir().join("server.log")).unwrap_or_default()
    }

    /// Log lines containing all of `words`.
    pub fn log_lines(&self, words: &[&str]) -> Vec<String> {
        self.log()
            .lines()
            .filter(|line| words.iter().all(|w| line.contains(w)))
            .map(str::to_owned)
            .collect()
    }

    /// How often Argo logged rejecting a stale copy of a completed workflow (v4.0.7, #16357),
    /// per `namespace/name`.
    pub fn stale_copies_rejected(&self) -> BTreeMap<String, usize> {
        let mut rejected = BTreeMap::new();
        for line in self.log_lines(&["Rejecting stale copy of a completed workflow"]) {
            let key = line
                .split_whitespace()
                .find_map(|field| field.strip_prefix("key="))
                .unwrap_or_default()
                .trim_matches('"')
                .to_owned();
            *rejected.entry(key).or_default() += 1;
        }
        rejected
    }

    /// Fails with the tail of the controller's log if it exited.
    pub fn ensure_running(&self) -> Result<()> {
        self.process.ensure_running()
    }
}
