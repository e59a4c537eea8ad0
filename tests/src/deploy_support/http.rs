//! The controller's HTTP endpoints as a probe or Prometheus sees them.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// `GET path` on `addr` over plain HTTP/1.1: status code and body.
pub async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("no end of headers")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .context("no status code")?;
    Ok((status, body.to_owned()))
}

/// The value of the sample `series` (name and labels as exposed, e.g.
/// `pipewarden_policy_loads_total{outcome="loaded"}`) in a scrape; 0 when absent.
pub fn sample(scrape: &str, series: &str) -> f64 {
    scrape
        .lines()
        .filter_map(|line| line.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix(' '))
        .find_map(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Scrapes `/metrics` and reads `series`.
pub async fn scrape(addr: SocketAddr, series: &str) -> Result<f64> {
    let (status, body) = http_get(addr, "/metrics").await?;
    anyhow::ensure!(status == 200, "/metrics answered {status}");
    Ok(sample(&body, series))
}
