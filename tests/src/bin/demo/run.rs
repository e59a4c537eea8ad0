//! The demo's main act: the controller, with the default policy, on the seeded objects.

use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Parser as _;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt as _};
use pipewarden::controller::exit_gate::{Handled, InjectedEvent};
use pipewarden::controller::{ControllerHandle, Hooks, RunArgs, start_with};
use pipewarden::engine::EventKind;
use pipewarden_tests::repo::{locate_policy, repo_path};
use pipewarden_tests::resources::{swf_resource, workflow_resource};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

const WAIT: Duration = Duration::from_secs(60);

pub struct Running {
    pub handle: ControllerHandle,
    inject: mpsc::Sender<InjectedEvent>,
}

/// Starts `pipewarden run` in this process, as the CLI would, and waits until it is ready.
pub async fn start(client: Client) -> Result<Running> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    let mut argv = vec![
        "pipewarden".to_string(),
        format!("--policy={}", locate_policy("kfp-default")?.display()),
        format!("--target-version={}", crate::target()),
        "--http-addr=127.0.0.1:0".into(),
        // Events about the controller go to its pod, as POD_NAME and POD_NAMESPACE say.
        "--identity=pipewarden-demo".into(),
        "--lease-namespace=kubeflow".into(),
    ];
    if crate::api_owned() {
        // As the shipped installs run it: the API server's own environment.
        argv.push(format!(
            "--settings-from=deployment/{}",
            crate::seed::API_SERVER
        ));
    } else {
        argv.push(format!("--settings={}", settings_file().display()));
    }
    let args = Cli::try_parse_from(argv)?.run;
    let (inject, events) = mpsc::channel(16);
    let hooks = Hooks {
        exit_events: Some(events),
        ..Hooks::default()
    };
    let handle = start_with(args, client, hooks).await?;
    pipewarden_tests::wait::until("the controller to be ready", WAIT, || async {
        Ok(handle.ctx.readiness.waiting().is_empty().then_some(()))
    })
    .await?;
    Ok(Running { handle, inject })
}

impl Running {
    /// Waits until the SWF loop made at least `count` decisions.
    pub async fn swf_decisions(&self, count: u64) -> Result<()> {
        pipewarden_tests::wait::until("a decision for every SWF", WAIT, || async {
            Ok((counter(&self.handle, "swf_decisions") >= count).then_some(()))
        })
        .await
    }

    /// Hands the exit gate a copy of a workflow as a lagging watch cache would.
    pub async fn inject(&self, workflow: &Value) -> Result<Handled> {
        let (tell, handled) = oneshot::channel();
        let event = InjectedEvent {
            kind: EventKind::Modified,
            workflow: workflow.clone(),
            handled: Some(tell),
        };
        self.inject
            .send(event)
            .await
            .ok()
            .context("the exit gate stopped")?;
        handled.await.context("the injected event was dropped")
    }
}

/// The shipped settings of the target release (`policies/kfp-default/settings/kfp-<v>.json`),
/// or, for a version without one, `{}`: its default install, if the policy knows it.
pub fn settings_file() -> std::path::PathBuf {
    let shipped = repo_path(&pipewarden_tests::repo::release_settings(crate::target()));
    if shipped.is_file() {
        shipped
    } else {
        repo_path("tests/data/settings/default-install.json")
    }
}

/// Whether the policy compiles for the target and who writes SWFs, as
/// `pipewarden_target_info` says.
pub fn target_support(handle: &ControllerHandle) -> String {
    let shown = handle.metrics().target();
    match (shown.owner.as_str(), shown.supported.as_str()) {
        ("kfp-api", _) => "multi-user: KFP's API owns every schedule, nothing written".into(),
        (_, "true") => format!("supported: {}", shown.proof),
        (_, "false") => "unsupported: nothing written".into(),
        _ => "support unknown".into(),
    }
}

/// Sum of a counter family over its labels, from the controller's own metrics.
pub fn counter(handle: &ControllerHandle, family: &str) -> u64 {
    metric_lines(handle, family)
        .iter()
        .map(|(_, value)| value)
        .sum()
}

/// `(labels, value)` of each line of `pipewarden_<family>_total`.
pub fn metric_lines(handle: &ControllerHandle, family: &str) -> Vec<(String, u64)> {
    let prefix = format!("pipewarden_{family}_total");
    handle
        .metrics()
        .encode()
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(&prefix)?;
            let (labels, value) = rest.rsplit_once(' ')?;
            Some((
                labels.trim_matches(|c| c == '{' || c == '}').to_string(),
                value.parse().ok()?,
            ))
        })
        .collect()
}

/// Argo finishing a running workflow: status and labels in one write, as its controller does.
/// Returns the object as it was before, which a lagging cache could still hand out.
pub async fn complete(client: &Client, namespace: &str, name: &str) -> Result<Value> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &workflow_resource());
    let before = api.get(name).await?;
    let patch = json!({
        "metadata": {"labels": {"workflows.argoproj.io/phase": "Succeeded", "workflows.argoproj.io/completed": "true"}},
        "status": {"phase": "Succeeded", "startedAt": Timestamp::now().to_string(), "finishedAt": Timestamp::now().to_string()}
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(serde_json::to_value(&before)?)
}

/// KFP #11296's reproduction: a merge patch that replaces the embedded workflow with junk.
pub async fn corrupt(client: &Client, namespace: &str, name: &str) -> Result<String> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &swf_resource());
    let patch = json!({"spec": {"workflow": {"spec": {"dynamicKey1": "dynamicValue1", "dynamicKey2": "dynamicValue2"}}}});
    let swf = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(swf.resource_version().unwrap_or_default())
}

/// Waits until the SWF's embedded workflow is a real workflow again.
pub async fn repaired(client: &Client, namespace: &str, name: &str) -> Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &swf_resource());
    pipewarden_tests::wait::until("the corrupted SWF to be repaired", WAIT, || async {
        let swf = api.get(name).await?;
        let embedded = swf.data["spec"]["workflow"]["spec"].as_str().unwrap_or("");
        Ok(embedded.contains("\"templates\"").then_some(()))
    })
    .await
}

/// Waits until `count` exit notifications were sent.
pub async fn notifications(running: &Running, count: u64) -> Result<()> {
    pipewarden_tests::wait::until("the exit notification", WAIT, || async {
        let sent = metric_lines(&running.handle, "exit_notifications")
            .into_iter()
            .filter(|(labels, _)| labels.contains("\"sent\""))
            .map(|(_, v)| v)
            .sum::<u64>();
        Ok((sent >= count).then_some(()))
    })
    .await
}
