//! The controller run in-process, as `pipewarden run` would run it, on a client that logs every
//! request it sends, so tests count write requests instead of assuming them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::ControlPlane;
use anyhow::Result;
use clap::Parser as _;
use http::Method;
use kube::client::{Body, ClientBuilder};
use pipewarden::controller::{ControllerHandle, RunArgs};
use pipewarden::metrics::{Label, OutcomeLabel, SwfDecisionLabel};
use pipewarden::swf::outcome::SwfDecision;

use super::always_conflict::always_conflict;
use super::{DEFAULT_POLICY, DEFAULT_SETTINGS, TARGET, WAIT, built_policy, repo_path};

/// Command-line flags for one controller; `start` parses them as `pipewarden run` does.
#[derive(Clone)]
pub struct ControllerArgs {
    flags: BTreeMap<String, String>,
}

impl ControllerArgs {
    /// The default policy and settings, rebuild policy `always`, target [`TARGET`], watching
    /// only `namespaces` (so tests running side by side never see each other's SWFs).
    pub fn new(namespaces: &[String]) -> Self {
        let args = ControllerArgs {
            flags: BTreeMap::new(),
        };
        args.policy(DEFAULT_POLICY, DEFAULT_SETTINGS)
            .set("--namespaces", &namespaces.join(","))
            .set("--rebuild-policy", "always")
            .set("--target-version", TARGET)
            .set("--http-addr", "127.0.0.1:0")
            // Policy deadlines are the engine tests' subject; here they must not depend on how
            // busy the machine running the tests is.
            .set("--decision-timeout-ms", "5000")
            .set("--render-timeout-ms", "5000")
    }

    pub fn policy(self, crate_name: &str, settings: &str) -> Self {
        let policy = built_policy(crate_name).display().to_string();
        let settings = repo_path(settings).display().to_string();
        self.set("--policy", &policy).set("--settings", &settings)
    }

    pub fn set(mut self, flag: &str, value: &str) -> Self {
        self.flags.insert(flag.to_owned(), value.to_owned());
        self
    }

    pub fn unset(mut self, flag: &str) -> Self {
        self.flags.remove(flag);
        self
    }

    pub fn parse(&self) -> Result<RunArgs> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        let argv = std::iter::once("pipewarden".to_owned()).chain(
            self.flags
                .iter()
                .map(|(flag, value)| format!("{flag}={value}")),
        );
        Ok(Cli::try_parse_from(argv)?.run)
    }

    pub async fn start(&self, control_plane: &ControlPlane) -> Result<Running> {
        self.start_on(control_plane, false).await
    }

    /// Starts it on a client whose every SWF patch meets 409 Conflict.
    pub async fn start_always_conflicting(&self, control_plane: &ControlPlane) -> Result<Running> {
        self.start_on(control_plane, true).await
    }

    /// Starts it on a client whose every answer comes `delay` late (a slow API server), telling
    /// the returned receiver `namespace/name` of each SWF decision in the order they are made.
    pub async fn start_reporting_decisions(
        &self,
        control_plane: &ControlPlane,
        delay: std::time::Duration,
    ) -> Result<(Running, tokio::sync::mpsc::UnboundedReceiver<String>)> {
        super::init_logs();
        let requests = RequestLog::default();
        let slow = tower::util::MapFutureLayer::new(move |answer| async move {
            let answer = answer.await;
            tokio::time::sleep(delay).await;
            answer
        });
        let client = ClientBuilder::try_from(control_plane.config().clone())?
            .with_layer(&slow)
            .with_layer(&requests.layer())
            .build();
        let (tell, decisions) = tokio::sync::mpsc::unbounded_channel();
        let hooks = pipewarden::controller::Hooks {
            swf_decisions: Some(tell),
            ..Default::default()
        };
        let handle = pipewarden::controller::start_with(self.parse()?, client, hooks).await?;
        Ok((Running { handle, requests }, decisions))
    }

    async fn start_on(&self, control_plane: &ControlPlane, conflicting: bool) -> Result<Running> {
        super::init_logs();
        let requests = RequestLog::default();
        let client = requests.client(control_plane.config().clone(), conflicting)?;
        let handle = pipewarden::controller::start(self.parse()?, client).await?;
        Ok(Running { handle, requests })
    }
}

/// A controller started by a test.
pub struct Running {
    pub handle: ControllerHandle,
    /// Every request the controller's client sent.
    pub requests: RequestLog,
}

/// Every outcome an SWF decision is counted under (`pipewarden_swf_decisions_total{outcome}`).
pub const DECISION_OUTCOMES: [&str; 16] = [
    "rebuild",
    "up-to-date",
    "skip",
    "not-rebuildable",
    "unsupported-target",
    "upstream-owned",
    "not-adopted",
    "restored",
    "would-rebuild",
    "would-restore",
    "render-failed",
    "policy-error",
    "conflicts-exhausted",
    "write-loop",
    "gone",
    "write-failed",
];

impl Running {
    /// SWF decisions so far, whatever their outcome.
    pub fn decisions_total(&self) -> u64 {
        DECISION_OUTCOMES
            .iter()
            .map(|outcome| self.decisions(outcome))
            .sum()
    }

    /// SWF decisions so far with this outcome (`rebuild`, `up-to-date`, `restored`, ...).
    pub fn decisions(&self, outcome: &str) -> u64 {
        let label = SwfDecisionLabel {
            outcome: SwfDecision::from_label(outcome).expect("an SWF decision"),
        };
        self.handle
            .metrics()
            .swf
            .decisions
            .get_or_create(&label)
            .get()
    }

    /// SWF write requests so far, counted by the controller's own metric.
    pub fn writes(&self, outcome: &str) -> u64 {
        let label = OutcomeLabel {
            outcome: outcome.to_owned(),
        };
        self.handle.metrics().swf.writes.get_or_create(&label).get()
    }

    pub fn writes_total(&self) -> u64 {
        ["ok", "conflict", "gone", "error", "throttled"]
            .iter()
            .map(|outcome| self.writes(outcome))
            .sum()
    }

    /// The policy's digest, as Events name it.
    pub fn policy_digest(&self) -> String {
        self.handle.ctx.policy.current().policy.digest().to_owned()
    }

    /// Waits until at least `count` decisions with `outcome` were made.
    pub async fn wait_for_decisions(&self, outcome: &str, count: u64) -> Result<()> {
        let what = format!("{count} `{outcome}` decisions");
        crate::wait::until(&what, WAIT, || async {
            Ok((self.decisions(outcome) >= count).then_some(()))
        })
        .await
    }

    /// Watch events of the loop's own writes, recognised without a new decision.
    pub fn own_writes_seen(&self) -> u64 {
        self.handle.metrics().scale.swf_own_writes_seen.get()
    }

    /// Waits until at least `count` of the loop's own writes came back through the watch.
    pub async fn wait_for_own_writes_seen(&self, count: u64) -> Result<()> {
        let what = format!("{count} own writes seen on the watch");
        crate::wait::until(&what, WAIT, || async {
            Ok((self.own_writes_seen() >= count).then_some(()))
        })
        .await
    }

    /// Waits until the loops report ready (every SWF listed).
    pub async fn wait_ready(&self) -> Result<()> {
        crate::wait::until("the controller to be ready", WAIT, || async {
            Ok(self.handle.ctx.readiness.waiting().is_empty().then_some(()))
        })
        .await
    }

    /// Stops it abruptly, as a killed process.
    pub async fn stop(self) {
        self.handle.stop().await;
    }
}

/// Method and path (with query) of every request a client sent.
#[derive(Clone, Default)]
pub struct RequestLog(
    Arc<Mutex<Vec<(Method, String)>>>,
    /// Body bytes of the requests that could change an SWF.
    Arc<std::sync::atomic::AtomicU64>,
);

impl RequestLog {
    /// A client for `config` that logs here before sending; `conflicting` answers every SWF
    /// patch with 409 instead of sending it.
    pub fn client(&self, config: kube::Config, conflicting: bool) -> Result<kube::Client> {
        let layer = self.layer();
        let builder = ClientBuilder::try_from(config)?;
        Ok(if conflicting {
            let builder = builder.with_layer(&always_conflict());
            builder.with_layer(&layer).build()
        } else {
            builder.with_layer(&layer).build()
        })
    }

    /// The layer that logs each request here.
    fn layer(
        &self,
    ) -> tower::util::MapRequestLayer<
        impl Fn(http::Request<Body>) -> http::Request<Body> + Clone + use<>,
    > {
        let (log, bytes) = (self.0.clone(), self.1.clone());
        tower::util::MapRequestLayer::new(move |request: http::Request<Body>| {
            let target = request
                .uri()
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_default();
            if writes_swf(request.method(), &target) {
                let size = http_body::Body::size_hint(request.body());
                bytes.fetch_add(
                    size.exact().unwrap_or(size.lower()),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
            log.lock()
                .expect("request log")
                .push((request.method().clone(), target));
            request
        })
    }

    pub fn all(&self) -> Vec<(Method, String)> {
        self.0.lock().expect("request log").clone()
    }

    /// Requests that could change an SWF: anything but a read of `scheduledworkflows`.
    pub fn swf_writes(&self) -> Vec<(Method, String)> {
        self.all()
            .into_iter()
            .filter(|(method, path)| writes_swf(method, path))
            .collect()
    }

    /// Body bytes sent by the requests that could change an SWF.
    pub fn swf_bytes_written(&self) -> u64 {
        self.1.load(std::sync::atomic::Ordering::Relaxed)
    }
}

fn writes_swf(method: &Method, path: &str) -> bool {
    path.contains("/scheduledworkflows") && method != Method::GET && method != Method::HEAD
}
