//! A nats-server with JetStream on loopback (built by `tests/control-plane/build.sh`), for the
//! exit gate's NATS sink.

use std::time::Duration;

use anyhow::{Context as _, Result};
use async_nats::jetstream::{self, stream};

use crate::supervise::{Supervised, state_dir};
use crate::wait;

pub struct NatsServer {
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
    process: Supervised,
}

impl NatsServer {
    /// Starts a server with JetStream (its store in a fresh directory) on a free loopback port
    /// and waits until a client connects.
    pub async fn start() -> Result<NatsServer> {
        let bin = crate::binaries::tool("nats-server")?;
        let dir = state_dir("nats")?;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
        let port = listener.local_addr()?.port();
        drop(listener);
        let args = [
            "-a".to_owned(),
            "127.0.0.1".to_owned(),
            "-p".to_owned(),
            port.to_string(),
            "-js".to_owned(),
            "-sd".to_owned(),
            dir.join("jetstream").display().to_string(),
        ];
        let process = Supervised::spawn("nats-server", dir, &bin, &args)?;
        let server = NatsServer {
            url: format!("nats://127.0.0.1:{port}"),
            process,
        };
        wait::until(
            "nats-server to take clients",
            Duration::from_secs(20),
            || async {
                server.process.ensure_running()?;
                Ok(async_nats::connect(&server.url).await.ok().map(drop))
            },
        )
        .await?;
        Ok(server)
    }

    /// A JetStream context on a new connection.
    pub async fn jetstream(&self) -> Result<jetstream::Context> {
        let client = async_nats::connect(&self.url)
            .await
            .with_context(|| format!("connecting to {}", self.url))?;
        Ok(jetstream::new(client))
    }

    /// Creates the stream `name` capturing `subject`, dropping a message whose `Nats-Msg-Id`
    /// it stored within `duplicate_window`.
    pub async fn stream(
        &self,
        name: &str,
        subject: &str,
        duplicate_window: Duration,
    ) -> Result<stream::Stream> {
        let config = stream::Config {
            name: name.to_owned(),
            subjects: vec![subject.to_owned()],
            duplicate_window,
            ..Default::default()
        };
        self.jetstream()
            .await?
            .create_stream(config)
            .await
            .with_context(|| format!("creating the stream {name}"))
    }

    /// The last lines of the server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        self.process.log_tail(20)
    }
}
