//! A CPU profile of kube-apiserver while the shards run: its own `/debug/pprof/profile`
//! (profiling is on by default), saved beside the bench binary and summarised by `go tool
//! pprof -top` (Go is already needed to build the control plane).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::AsyncReadExt as _;

/// How long into the pass the profile starts (the shards list and elect their leaders first).
pub const DELAY: Duration = Duration::from_secs(5);
/// How long it samples.
pub const SECONDS: u64 = 30;

/// Samples kube-apiserver's CPU for `seconds` after `delay`; returns where it was saved.
pub async fn apiserver(client: &kube::Client, delay: Duration, seconds: u64) -> Result<PathBuf> {
    tokio::time::sleep(delay).await;
    let request =
        http::Request::get(format!("/debug/pprof/profile?seconds={seconds}")).body(Vec::new())?;
    let mut body = Vec::new();
    client
        .request_stream(request)
        .await
        .context("GET /debug/pprof/profile")?
        .read_to_end(&mut body)
        .await?;
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .context("the bench binary's directory")?;
    let path = dir.join("bench-swf-kube-apiserver.pprof");
    std::fs::write(&path, body)?;
    Ok(path)
}

/// Prints where the profile is and its top functions by own CPU time.
pub fn report(profile: Result<PathBuf>) {
    let path = match profile {
        Ok(path) => path,
        Err(e) => return println!("\nno kube-apiserver profile: {e:#}"),
    };
    println!(
        "\nkube-apiserver CPU profile, {SECONDS} s from {} s into the shards' pass: {}",
        DELAY.as_secs(),
        path.display()
    );
    let top = std::process::Command::new("go")
        .args(["tool", "pprof", "-top", "-nodecount=20"])
        .arg(&path)
        .output();
    match top {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            // From the summary line on: the file header names the binary's path.
            let from = text.find("Showing nodes").unwrap_or(0);
            println!("{}", text[from..].trim_end());
        }
        Ok(out) => println!(
            "go tool pprof failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => println!("go tool pprof: {e} (read the profile with `go tool pprof -top FILE`)"),
    }
}
