//! Argo Workflows' own controller on the local control plane, with kwok simulating the nodes and
//! pod lifecycles no kubelet runs here.
//!
//! [`ArgoStack::start`] installs Argo's CRDs (from the module the controller was built from),
//! starts kwok with a node and the pod Stages in [`kwok`], a stand-in for kube-scheduler that binds
//! each new pod to that node ([`scheduler`]), a stand-in for Argo's executor that writes the task
//! results of pods that declare outputs ([`executor`]), the fault-injecting proxy of
//! [`proxy`], and Argo's workflow controller behind that proxy ([`controller`]). Argo decides
//! everything else: phases, exit handlers, retries, status writes, pod garbage collection.
//!
//! What kwok's Stages do with a pod is chosen by annotations the workflow puts on its templates
//! (template `metadata.annotations`, which Argo copies onto the pod):
//!
//! | annotation | effect |
//! | --- | --- |
//! | `pipewarden.test/main-exit-code` | exit code of the `main` container (default 0; not 0: the pod fails, Argo's node is Failed) |
//! | `pipewarden.test/wait-exit-code` | exit code of Argo's `wait` container (not 0: Argo's node is Error) |
//! | `pipewarden.test/run-ms` | how long the containers run (default 1000 ms) |
//! | `pipewarden.test/outputs` | a JSON object of output parameter values the executor stand-in reports |
//!
//! Background work (proxy, scheduler and executor stand-ins) runs on a runtime of its own, so it
//! outlives the `#[tokio::test]` that started it; the processes run under the watchdog of
//! [`crate::supervise`], so nothing outlives the test binary.

pub mod controller;
pub mod executor;
pub mod kwok;
pub mod proxy;
pub mod scheduler;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt as _};
use tokio::sync::OnceCell;

use crate::{ControlPlane, log, wait};

pub use controller::{ArgoController, ArgoVersion};
pub use proxy::{Completion, Consumer, Injection, Replay, StaleProxy};

/// Where `tests/control-plane/build.sh` puts Argo's CRDs, beside the binaries.
pub const CRDS_DIR: &str = "argo-v4-crds";

/// The command that builds a missing Argo or kwok binary.
pub fn build_command(name: &str) -> &'static str {
    match name {
        "argo-v3-workflow-controller" => {
            "`make bench-stale` (or `tests/control-plane/build.sh --argo-v3`)"
        }
        _ => "`make control-plane` (runs tests/control-plane/build.sh)",
    }
}

/// A binary (or directory) `tests/control-plane/build.sh` writes; fails with the command that
/// builds it.
pub fn built(name: &str) -> Result<PathBuf> {
    let (dir, origin) = crate::binaries::bin_dir();
    let path = dir.join(name);
    if !path.exists() {
        bail!(
            "{name} not found in {} ({origin}): build it with {}",
            dir.display(),
            build_command(name)
        );
    }
    Ok(path)
}

/// Fails naming every one of `names` that is missing, with the commands that build them.
pub fn preflight(names: &[&str]) -> Result<()> {
    let (dir, origin) = crate::binaries::bin_dir();
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| !dir.join(name).exists())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut commands: Vec<&str> = missing.iter().map(|name| build_command(name)).collect();
    commands.dedup();
    bail!(
        "Argo test stack: {} not found in {} ({origin}): build with {}",
        missing.join(", "),
        dir.display(),
        commands.join(" and ")
    )
}

/// A multi-threaded runtime of its own on a background thread, for the stack's tasks. Tests each
/// run on a runtime that ends with them; what this one runs lasts as long as the test binary.
pub fn background() -> &'static tokio::runtime::Handle {
    static HANDLE: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let (tell, handle) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("argo-stack".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("argo-stack-worker")
                    .enable_all()
                    .build()
                    .expect("a runtime for the Argo stack");
                let _ = tell.send(runtime.handle().clone());
                runtime.block_on(std::future::pending::<()>());
            })
            .expect("a thread for the Argo stack");
        handle.recv().expect("the Argo stack's runtime")
    })
}

/// Runs `work` on the [`background`] runtime and waits for it from the caller's.
pub async fn on_background<T, F>(work: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    background()
        .spawn(work)
        .await
        .map_err(|e| anyhow!("background task: {e}"))?
}

/// Which Argo controller to start, and what it manages.
#[derive(Clone, Debug)]
pub struct ControllerSpec {
    pub version: ArgoVersion,
    /// Only this namespace (`--namespaced`), or every namespace.
    pub managed: Option<String>,
    /// More flags for the controller (e.g. `--qps`), after the harness's own.
    pub flags: Vec<String>,
}

/// Argo's controllers with what they need around them.
pub struct ArgoStack {
    pub proxy: StaleProxy,
    pub kwok: kwok::Kwok,
    pub scheduler: scheduler::Scheduler,
    pub executor: executor::Executor,
    /// In the order they were asked for.
    pub controllers: Vec<ArgoController>,
}

impl ArgoStack {
    /// Installs Argo's CRDs and starts kwok (one node), the stand-ins, the proxy and the
    /// `controllers` behind it; waits until each controller is ready.
    pub async fn start(
        control_plane: &'static ControlPlane,
        controllers: &[ControllerSpec],
    ) -> Result<Self> {
        let started = Instant::now();
        let mut needed = vec![CRDS_DIR, "kwok", "argo-v4-retry"];
        needed.extend(controllers.iter().map(|c| c.version.binary()));
        preflight(&needed)?;
        let controllers = controllers.to_vec();
        on_background(async move {
            let client = control_plane.client()?;
            let crds = install_crds(&client).await?;
            log(format_args!(
                "argo-stack: Argo CRDs established: {} ({:.1?})",
                crds.join(", "),
                started.elapsed()
            ));
            let kwok = kwok::Kwok::start(control_plane).await?;
            log(format_args!(
                "argo-stack: kwok {} ready, node {} ({:.1?})",
                kwok.version,
                kwok.node,
                started.elapsed()
            ));
            let scheduler = scheduler::Scheduler::start(client.clone(), &kwok.node);
            let executor = executor::Executor::start(client.clone());
            let proxy = StaleProxy::start(control_plane.config().clone()).await?;
            log(format_args!(
                "argo-stack: stale-copy proxy at {} ({:.1?})",
                proxy.url,
                started.elapsed()
            ));
            let mut running = Vec::new();
            for spec in &controllers {
                let name = format!("argo-{}", spec.version.tag().replace('.', "-"));
                let controller = ArgoController::start(
                    control_plane,
                    &proxy,
                    spec.version,
                    spec.managed.as_deref(),
                    &spec.flags,
                    &name,
                )
                .await?;
                log(format_args!(
                    "argo-stack: Argo {} workflow controller ready, managing {} ({:.1?})",
                    spec.version.tag(),
                    spec.managed.as_deref().unwrap_or("all namespaces"),
                    started.elapsed()
                ));
                running.push(controller);
            }
            Ok(ArgoStack {
                proxy,
                kwok,
                scheduler,
                executor,
                controllers: running,
            })
        })
        .await
    }

    /// The first controller.
    pub fn controller(&self) -> &ArgoController {
        &self.controllers[0]
    }
}

/// The Argo v4 stack shared by all tests of this test binary, on [`crate::shared`]'s control
/// plane, started on first use.
pub async fn shared_stack() -> Result<&'static ArgoStack> {
    static STACK: OnceCell<Result<ArgoStack, String>> = OnceCell::const_new();
    let started = STACK
        .get_or_init(|| async {
            let control_plane = crate::shared().await.map_err(|e| format!("{e:#}"))?;
            let v4 = ControllerSpec {
                version: ArgoVersion::V4,
                managed: None,
                flags: Vec::new(),
            };
            ArgoStack::start(control_plane, &[v4])
                .await
                .map_err(|e| format!("{e:#}"))
        })
        .await;
    started.as_ref().map_err(|e| anyhow!("{e}"))
}

/// Creates Argo's CRDs (those already there are kept: the Workflow CRD is the same file the
/// control plane installs) and waits until each is established and serves a list.
pub async fn install_crds(client: &Client) -> Result<Vec<String>> {
    let dir = built(CRDS_DIR)?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for path in yaml_files(&dir)? {
        let text = std::fs::read_to_string(&path)?;
        let crd: CustomResourceDefinition =
            serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        match crds.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(e) => return Err(e).with_context(|| format!("creating CRD {}", crd.name_any())),
        }
        names.push(crd.name_any());
    }
    for name in &names {
        wait::until(
            &format!("CRD {name} to be established"),
            Duration::from_secs(60),
            || async {
                let crd = crds.get(name).await?;
                let established = crd
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                Ok(established.then_some(()))
            },
        )
        .await?;
    }
    for resource in ["workflowtaskresults", "workflowtemplates"] {
        let gvk = kube::api::GroupVersionKind::gvk("argoproj.io", "v1alpha1", "");
        let api_resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, resource);
        let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &api_resource);
        wait::until(
            &format!("{resource}.argoproj.io to be listable"),
            Duration::from_secs(60),
            || async {
                match api.list(&kube::api::ListParams::default().limit(1)).await {
                    Ok(_) => Ok(Some(())),
                    Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
                    Err(e) => Err(e.into()),
                }
            },
        )
        .await?;
    }
    names.sort();
    Ok(names)
}

fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(
            "no CRDs in {}: build them with {}",
            dir.display(),
            build_command(CRDS_DIR)
        );
    }
    Ok(files)
}
