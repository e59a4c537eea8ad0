//! One kube-apiserver on loopback, with the flags controller-runtime's envtest uses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::Namespace;
use kube::client::ConfigExt as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use tower::{BoxError, ServiceBuilder};

use crate::credentials::{
    random_token, write_admin_token_file, write_kubeconfig, write_service_account_keys,
};
use crate::supervise::{Supervised, state_dir};
use crate::wait;

const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest a single readiness poll may take before it counts as "not yet".
const POLL_TIMEOUT: Duration = Duration::from_secs(5);

pub struct ApiServer {
    pub url: String,
    /// The self-signed serving certificate (with its CA) the apiserver wrote to `--cert-dir`.
    pub ca: PathBuf,
    /// Admin kubeconfig (a `system:masters` token).
    pub kubeconfig: PathBuf,
    pub config: Config,
    process: Supervised,
}

impl ApiServer {
    /// Starts kube-apiserver against `etcd_url` and waits for `/readyz` and namespace `default`.
    pub async fn start(bin: &Path, etcd_url: &str, port: u16) -> Result<Self> {
        let dir = state_dir("kube-apiserver")?;
        let url = format!("https://127.0.0.1:{port}");
        let token = random_token()?;
        let tokens = write_admin_token_file(&dir, &token)?;
        let (sa_key, sa_pub) = write_service_account_keys(&dir)?;
        let cert_dir = dir.join("certs");
        let mut args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", cert_dir.display()),
            format!("--service-account-issuer={url}"),
            format!("--service-account-key-file={}", sa_pub.display()),
            format!("--service-account-signing-key-file={}", sa_key.display()),
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=RBAC".to_owned(),
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            // No controller-manager runs, so nothing would create the default ServiceAccounts.
            "--disable-admission-plugins=ServiceAccount".to_owned(),
            "--allow-privileged=true".to_owned(),
            "--endpoint-reconciler-type=none".to_owned(),
            // `/debug/pprof`: `make bench-swf SHARDS=N` samples the API server's CPU.
            "--profiling=true".to_owned(),
            // Image volumes (beta, off by default before 1.35): the image-volume overlay's
            // dry-run needs the field kept.
            "--feature-gates=ImageVolume=true".to_owned(),
        ];
        // A bench that fills the cluster past what this machine's apiserver can cache names
        // its flags here (`make bench-exit-memory`); the tests never set it.
        if let Ok(extra) = std::env::var("PIPEWARDEN_APISERVER_EXTRA_ARGS") {
            args.extend(extra.split_whitespace().map(str::to_owned));
        }
        let process = Supervised::spawn("kube-apiserver", dir.clone(), bin, &args)?;

        let ca = cert_dir.join("apiserver.crt");
        wait::until(
            "kube-apiserver to write its serving certificate",
            READY_TIMEOUT,
            || async {
                process.ensure_running()?;
                Ok(std::fs::metadata(&ca)
                    .is_ok_and(|m| m.len() > 0)
                    .then_some(()))
            },
        )
        .await?;
        let kubeconfig = dir.join("kubeconfig.yaml");
        write_kubeconfig(&kubeconfig, &url, &ca, "admin", &token)?;
        let config = config_from(&kubeconfig).await?;
        let server = Self {
            url,
            ca,
            kubeconfig,
            config,
            process,
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn wait_ready(&self) -> Result<()> {
        let client = quiet_client(&self.config)?;
        wait::until("kube-apiserver /readyz", READY_TIMEOUT, || async {
            self.process.ensure_running()?;
            let readyz = http::Request::get("/readyz").body(Vec::new())?;
            let answer = tokio::time::timeout(POLL_TIMEOUT, client.request_text(readyz)).await;
            Ok(answer.ok().and_then(Result::ok).map(|_| ()))
        })
        .await?;
        let namespaces: Api<Namespace> = Api::all(client);
        wait::until("namespace default", READY_TIMEOUT, || async {
            Ok(namespaces.get_opt("default").await?.map(|_| ()))
        })
        .await
    }

    /// Kills the apiserver, as a crash would; etcd and its files stay.
    pub async fn stop(&mut self) -> Result<()> {
        self.process.stop_server().await
    }

    /// Starts it again on the same port, files and etcd, and waits until it is ready.
    pub async fn start_again(&mut self) -> Result<()> {
        self.process.start_server()?;
        self.wait_ready().await
    }

    pub fn server_pid(&self) -> Option<String> {
        self.process.server_pid()
    }

    /// Where this apiserver keeps its files; removed when it stops.
    pub fn dir(&self) -> &Path {
        self.process.dir()
    }
}

/// A client for expected waits (a starting apiserver, a CRD being established). kube's own
/// client logs every 5xx answer at ERROR level, which would read as failures; this one sends the
/// same requests, with the same credentials, without that logging.
pub fn quiet_client(config: &Config) -> Result<Client> {
    let https = config.rustls_https_connector()?;
    let transport = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .map_err(BoxError::from)
        .service(transport);
    Ok(Client::new(service, config.default_namespace.clone()))
}

/// A client configuration from a kubeconfig file.
pub async fn config_from(kubeconfig: &Path) -> Result<Config> {
    let file = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading kubeconfig {}", kubeconfig.display()))?;
    Ok(Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?)
}
