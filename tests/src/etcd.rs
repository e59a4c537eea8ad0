//! One etcd member on loopback, for one kube-apiserver.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::supervise::{Supervised, state_dir};
use crate::wait;

pub struct Etcd {
    pub url: String,
    /// Server version as etcd reports it on `/version`, e.g. `3.6.16`.
    pub version: String,
    client_port: u16,
    process: Supervised,
}

impl Etcd {
    /// Starts etcd on `client_port` and `peer_port` and waits until it reports healthy.
    pub async fn start(bin: &Path, client_port: u16, peer_port: u16) -> Result<Self> {
        let dir = state_dir("etcd")?;
        let url = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let args = [
            "--name=pipewarden".to_owned(),
            format!("--data-dir={}", dir.join("data").display()),
            format!("--listen-client-urls={url}"),
            format!("--advertise-client-urls={url}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=pipewarden={peer}"),
            // Throwaway data: durability is not worth the fsync latency.
            "--unsafe-no-fsync=true".to_owned(),
            "--log-level=warn".to_owned(),
            // Room for the 50,000-SWF bench (two copies, rewritten once each): 8 GiB, etcd's
            // largest recommended quota, instead of the 2 GiB default.
            "--quota-backend-bytes=8589934592".to_owned(),
        ];
        let process = Supervised::spawn("etcd", dir, bin, &args)?;
        wait::until(
            "etcd to report healthy",
            Duration::from_secs(20),
            || async {
                process.ensure_running()?;
                let health = get(client_port, "/health").await.unwrap_or_default();
                Ok(health.contains(r#""health":"true""#).then_some(()))
            },
        )
        .await?;
        let mut etcd = Self {
            url,
            version: String::new(),
            client_port,
            process,
        };
        etcd.version = etcd.server_version().await?;
        Ok(etcd)
    }

    pub fn server_pid(&self) -> Option<String> {
        self.process.server_pid()
    }

    async fn server_version(&self) -> Result<String> {
        let body = get(self.client_port, "/version").await?;
        let info: serde_json::Value =
            serde_json::from_str(&body).context("parsing etcd /version")?;
        info["etcdserver"]
            .as_str()
            .map(str::to_owned)
            .context("etcd /version has no etcdserver")
    }
}

/// A plain HTTP/1.0 GET on loopback; returns the body of a 200 response.
pub(crate) async fn get(port: u16, path: &str) -> Result<String> {
    let exchange = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        anyhow::Ok(response)
    };
    let response = tokio::time::timeout(Duration::from_secs(2), exchange).await??;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        bail!("GET {path}: {}", head.lines().next().unwrap_or_default());
    }
    Ok(body.to_owned())
}
