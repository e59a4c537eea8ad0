//! A CNCF distribution registry on loopback (plain HTTP), for image and policy-artifact tests.

use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::supervise::{Supervised, state_dir};
use crate::wait;

pub struct Registry {
    /// `127.0.0.1:PORT`, the registry part of a reference.
    pub host: String,
    port: u16,
    process: Supervised,
}

impl Registry {
    /// Starts an empty registry on a free loopback port and waits until `/v2/` answers.
    pub async fn start() -> Result<Self> {
        Self::start_with(None).await
    }

    /// A registry that answers only `user` with `password` (htpasswd, bcrypt), as a private
    /// registry does; anonymous requests get 401.
    pub async fn start_with_login(user: &str, password: &str) -> Result<Self> {
        Self::start_with(Some((user, password))).await
    }

    async fn start_with(login: Option<(&str, &str)>) -> Result<Self> {
        let bin = crate::binaries::tool("registry")?;
        let dir = state_dir("registry")?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
        let port = listener.local_addr()?.port();
        drop(listener);
        let host = format!("127.0.0.1:{port}");
        let config = dir.join("config.yml");
        let mut text = format!(
            "version: 0.1\n\
             log:\n  level: warn\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: {host}\n",
            dir.join("data").display()
        );
        if let Some((user, password)) = login {
            // Cost 4, the minimum: the registry checks it on every request.
            let hash = bcrypt::hash(password, 4).context("hashing the test password")?;
            let htpasswd = dir.join("htpasswd");
            std::fs::write(&htpasswd, format!("{user}:{hash}\n"))
                .context("writing the htpasswd file")?;
            text.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: pipewarden-tests\n    path: {}\n",
                htpasswd.display()
            ));
        }
        std::fs::write(&config, text).context("writing the registry config")?;
        // `env` keeps the registry's tracing from looking for a collector.
        let args = [
            "OTEL_TRACES_EXPORTER=none".to_owned(),
            bin.display().to_string(),
            "serve".to_owned(),
            config.display().to_string(),
        ];
        let process = Supervised::spawn("registry", dir, std::path::Path::new("env"), &args)?;
        let registry = Self {
            host,
            port,
            process,
        };
        wait::until(
            "the registry to answer /v2/",
            Duration::from_secs(20),
            || async {
                registry.process.ensure_running()?;
                // A registry that requires a login answers 401: it is up.
                let answered = match crate::etcd::get(registry.port, "/v2/").await {
                    Ok(_) => true,
                    Err(error) => login.is_some() && error.to_string().contains(" 401 "),
                };
                Ok(answered.then_some(()))
            },
        )
        .await?;
        Ok(registry)
    }

    /// `oci://127.0.0.1:PORT/REPOSITORY`, the form pipewarden's policy flags take.
    pub fn oci(&self, repository: &str) -> String {
        format!("oci://{}/{repository}", self.host)
    }

    /// Where the registry keeps a blob's bytes (filesystem driver layout), for tests that
    /// damage what it serves.
    pub fn blob_file(&self, digest: &str) -> std::path::PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.process
            .dir()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// The last lines of the registry's log, for failure messages.
    pub fn log_tail(&self) -> String {
        self.process.log_tail(20)
    }
}
