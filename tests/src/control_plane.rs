//! etcd + kube-apiserver on free loopback ports, with the project's CRDs installed.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client, Config, ResourceExt as _};
use tokio::sync::OnceCell;

use crate::apiserver::{ApiServer, config_from, quiet_client};
use crate::binaries::Binaries;
use crate::credentials::write_kubeconfig;
use crate::{crds, log};

/// Versions the control plane reported once it was up.
#[derive(Debug, Clone)]
pub struct Versions {
    /// kube-apiserver `/version` gitVersion, e.g. `v1.34.4`.
    pub apiserver: String,
    /// etcd `/version` etcdserver, e.g. `3.6.16`.
    pub etcd: String,
}

/// A running control plane. Stops (and removes its files) on drop, or when this process ends.
pub struct ControlPlane {
    // Declaration order is drop order: the apiserver stops before its etcd.
    apiserver: ApiServer,
    etcd: crate::etcd::Etcd,
    versions: Versions,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver from [`Binaries::locate`], and installs the CRDs.
    pub async fn start() -> Result<Self> {
        let binaries = Binaries::locate()?;
        let mut attempt = 1;
        loop {
            match Self::start_with(&binaries).await {
                Err(e) if attempt < 3 && format!("{e:#}").contains("address already in use") => {
                    log(format_args!("control-plane: port taken, retrying ({e:#})"));
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    async fn start_with(binaries: &Binaries) -> Result<Self> {
        let started = Instant::now();
        let [etcd_port, peer_port, apiserver_port] = free_ports()?;
        let etcd = crate::etcd::Etcd::start(&binaries.etcd, etcd_port, peer_port).await?;
        log(format_args!(
            "control-plane: etcd {} healthy at {} ({:.1?})",
            etcd.version,
            etcd.url,
            started.elapsed()
        ));
        let apiserver =
            ApiServer::start(&binaries.kube_apiserver, &etcd.url, apiserver_port).await?;
        // Waits for CRDs go through a client that does not log the expected 404s and 5xx.
        let client = quiet_client(&apiserver.config)?;
        let info = client.apiserver_version().await.context("GET /version")?;
        log(format_args!(
            "control-plane: kube-apiserver {} ready at {} ({:.1?})",
            info.git_version,
            apiserver.url,
            started.elapsed()
        ));
        let crds = crds::install(&client).await?;
        log(format_args!(
            "control-plane: CRDs established: {} ({:.1?})",
            crds.join(", "),
            started.elapsed()
        ));
        let versions = Versions {
            apiserver: info.git_version,
            etcd: etcd.version.clone(),
        };
        Ok(Self {
            apiserver,
            etcd,
            versions,
        })
    }

    /// Kills kube-apiserver, as a crash or an outage would; etcd keeps running. Not for the
    /// [`shared`] control plane: other tests use it.
    pub async fn stop_apiserver(&mut self) -> Result<()> {
        self.apiserver.stop().await?;
        log(format_args!("control-plane: kube-apiserver stopped"));
        Ok(())
    }

    /// Starts kube-apiserver again on the same port, with the same etcd, certificates and
    /// tokens (so existing clients reconnect), and waits until it is ready.
    pub async fn restart_apiserver(&mut self) -> Result<()> {
        let started = Instant::now();
        self.apiserver.start_again().await?;
        log(format_args!(
            "control-plane: kube-apiserver ready again at {} ({:.1?})",
            self.apiserver.url,
            started.elapsed()
        ));
        Ok(())
    }

    /// Versions of the apiserver and etcd this control plane runs.
    pub fn versions(&self) -> &Versions {
        &self.versions
    }

    /// Admin kubeconfig file, e.g. for running the controller binary as a subprocess.
    /// Process ids of kube-apiserver and etcd, for their CPU time and memory ([`crate::procfs`]).
    pub fn server_pids(&self) -> [(&'static str, Option<String>); 2] {
        [
            ("kube-apiserver", self.apiserver.server_pid()),
            ("etcd", self.etcd.server_pid()),
        ]
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.apiserver.kubeconfig
    }

    /// Admin client configuration.
    pub fn config(&self) -> &Config {
        &self.apiserver.config
    }

    /// A new admin client. Make one per test: a client's connections belong to the tokio
    /// runtime that opened them, and each `#[tokio::test]` has its own runtime.
    pub fn client(&self) -> Result<Client> {
        Ok(Client::try_from(self.apiserver.config.clone())?)
    }

    /// A fresh namespace of its own for the calling test.
    pub async fn ns(&self) -> Result<String> {
        let namespaces: Api<Namespace> = Api::all(self.client()?);
        let meta = ObjectMeta {
            generate_name: Some("test-".into()),
            ..Default::default()
        };
        let ns = Namespace {
            metadata: meta,
            ..Default::default()
        };
        Ok(namespaces
            .create(&PostParams::default(), &ns)
            .await?
            .name_any())
    }

    /// Writes a kubeconfig that authenticates with `token` (see
    /// [`service_account_token`](crate::service_account_token)); it lives as long as the apiserver.
    pub fn kubeconfig_for_token(&self, user: &str, token: &str) -> Result<PathBuf> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = self
            .apiserver
            .dir()
            .join(format!("kubeconfig-{user}-{n}.yaml"));
        write_kubeconfig(&path, &self.apiserver.url, &self.apiserver.ca, user, token)?;
        Ok(path)
    }

    /// A client that authenticates with `token`, e.g. as a ServiceAccount under RBAC.
    pub async fn client_for_token(&self, user: &str, token: &str) -> Result<Client> {
        let config = config_from(&self.kubeconfig_for_token(user, token)?).await?;
        Ok(Client::try_from(config)?)
    }
}

/// The control plane shared by all tests of this test binary, started on first use.
/// It stops when the test binary exits (see [`crate::supervise`]).
pub async fn shared() -> Result<&'static ControlPlane> {
    static SHARED: OnceCell<Result<ControlPlane, String>> = OnceCell::const_new();
    let started = SHARED
        .get_or_init(|| async { ControlPlane::start().await.map_err(|e| format!("{e:#}")) })
        .await;
    started.as_ref().map_err(|e| anyhow::anyhow!("{e}"))
}

/// `N` distinct free loopback ports; listeners are held until all are chosen.
fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .context("finding free loopback ports")?;
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<_>>()?;
    Ok(ports.try_into().expect("N ports"))
}
