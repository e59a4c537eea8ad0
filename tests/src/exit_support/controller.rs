//! The controller run in-process, as `pipewarden run` would run it, plus the exit gate's
//! test-only hook: events injected beside the watch, each acknowledged once handled.

use crate::ControlPlane;
use anyhow::{Context as _, Result};
use clap::Parser as _;
use pipewarden::controller::exit_gate::{Handled, InjectedEvent};
use pipewarden::controller::{ControllerHandle, Hooks, RunArgs, start_with};
use pipewarden::engine::EventKind;
use pipewarden::exit::decision::{ExitDecision, Step};
use pipewarden::metrics::SinkOutcomeLabels;
use pipewarden::metrics::{ExitDecisionLabel, Label, OutcomeLabel, StepLabel};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{DEFAULT_SETTINGS, WAIT, default_policy, init_logs, repo_path};

/// A controller started by a test, watching only the test's namespace.
pub struct Controller {
    pub handle: ControllerHandle,
    inject: mpsc::Sender<InjectedEvent>,
}

impl Controller {
    /// Parses `flags` (`--flag=value`) as `pipewarden run` does, starts, waits until ready.
    pub async fn start(
        control_plane: &ControlPlane,
        namespace: &str,
        flags: &[String],
    ) -> Result<Controller> {
        Controller::start_with_client(control_plane.client()?, namespace, flags).await
    }

    /// [`Controller::start`] talking to the API server through `client` (e.g. one with
    /// faults injected).
    pub async fn start_with_client(
        client: kube::Client,
        namespace: &str,
        flags: &[String],
    ) -> Result<Controller> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        init_logs();
        // The default policy's shipped settings, unless the test gives its own.
        let settings = flags
            .iter()
            .all(|flag| !flag.starts_with("--settings="))
            .then(|| format!("--settings={}", repo_path(DEFAULT_SETTINGS).display()));
        let argv = [
            "pipewarden".to_string(),
            format!("--policy={}", default_policy().display()),
            "--http-addr=127.0.0.1:0".into(),
            format!("--namespaces={namespace}"),
        ]
        .into_iter()
        .chain(settings)
        .chain(flags.iter().cloned());
        let args = Cli::try_parse_from(argv)?.run;
        let (inject, events) = mpsc::channel(1024);
        let hooks = Hooks {
            exit_events: Some(events),
            ..Hooks::default()
        };
        let handle = start_with(args, client, hooks).await?;
        crate::wait::until("the controller to be ready", WAIT, || async {
            Ok(handle.ctx.readiness.waiting().is_empty().then_some(()))
        })
        .await?;
        Ok(Controller { handle, inject })
    }

    /// Hands the exit gate `workflow` as if the watch had delivered it; returns how it was
    /// handled (decision, and the notification outcome if it led to exit processing).
    pub async fn inject(&self, kind: EventKind, workflow: &Value) -> Result<Handled> {
        let (tell, handled) = oneshot::channel();
        self.inject
            .send(InjectedEvent {
                kind,
                workflow: workflow.clone(),
                handled: Some(tell),
            })
            .await
            .ok()
            .context("the exit gate stopped taking events")?;
        handled.await.context("the injected event was dropped")
    }

    /// Workflow events decided so far with this outcome (`process`, `reject-stale`, ...).
    pub fn decisions(&self, outcome: &str) -> u64 {
        let label = ExitDecisionLabel {
            outcome: ExitDecision::from_label(outcome).expect("an exit decision"),
        };
        self.handle
            .metrics()
            .exit
            .decisions
            .get_or_create(&label)
            .get()
    }

    /// Exit processing outcomes so far (`sent`, `already-notified`, `unconfirmed`, ...).
    pub fn notifications(&self, outcome: &str) -> u64 {
        let label = OutcomeLabel {
            outcome: outcome.to_owned(),
        };
        self.handle
            .metrics()
            .exit
            .notifications
            .get_or_create(&label)
            .get()
    }

    /// Failed attempts of the action path at `step` (`read`, `claim`, `event`, `deliver`,
    /// `mark`).
    pub fn attempt_failures(&self, step: &str) -> u64 {
        let label = StepLabel {
            step: Step::from_label(step).expect("a step of the action path"),
        };
        self.handle
            .metrics()
            .exit
            .attempt_failures
            .get_or_create(&label)
            .get()
    }

    /// Completions given up on.
    pub fn gave_up(&self) -> u64 {
        self.handle.metrics().exit.gave_up.get()
    }

    /// Webhook requests so far with this outcome (`ok`, `rejected`, `timeout`, `error`).
    pub fn webhook_requests(&self, outcome: &str) -> u64 {
        let label = OutcomeLabel {
            outcome: outcome.to_owned(),
        };
        self.handle
            .metrics()
            .exit
            .webhook_requests
            .get_or_create(&label)
            .get()
    }

    /// Deliveries to `sink` so far with this outcome (`ok`, `timeout`, `retryable`, ...).
    pub fn deliveries(&self, sink: &str, outcome: &str) -> u64 {
        let labels = SinkOutcomeLabels {
            sink: sink.to_owned(),
            outcome: outcome.to_owned(),
        };
        self.handle
            .metrics()
            .exit
            .deliveries
            .get_or_create(&labels)
            .get()
    }

    /// Waits until at least `count` exit processings ended with `outcome`.
    pub async fn wait_for_notifications(&self, outcome: &str, count: u64) -> Result<()> {
        let what = format!("{count} `{outcome}` exit notification outcomes");
        crate::wait::until(&what, WAIT, || async {
            Ok((self.notifications(outcome) >= count).then_some(()))
        })
        .await
    }

    /// Stops it abruptly, as a killed process: nothing in flight is finished.
    pub async fn stop(self) {
        self.handle.stop().await;
    }
}
