//! The real `pipewarden run`, configured by the base Deployment's environment, stopped with
//! SIGTERM as the kubelet stops a pod: it releases the lease and exits 0, and a running standby
//! takes over without waiting for the lease (15 s) to expire. The time is printed.

use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_the_lease_and_the_standby_takes_over_at_once() -> Result<()> {
    let binary = pipewarden_binary()?;
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let dir = TempDir::new("sigterm")?;
    let policy_dir = dir.path().join("policy");
    std::fs::create_dir_all(&policy_dir)?;
    let files = policy_files(&built_policy("kfp-default"), &repo_path(DEFAULT_SETTINGS))?;
    PolicyVolume::new(&policy_dir).publish(&files)?;
    let http_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let pod = Pod {
        name: "pipewarden-0",
        namespace: &namespace,
        http_port,
    };
    let log_path = dir.path().join("pipewarden.log");
    let mut process = tokio::process::Command::new(&binary)
        .arg("run")
        .env_clear()
        .envs(deployment_env(dir.path(), &pod)?)
        .env("KUBECONFIG", control_plane.kubeconfig())
        .env("PIPEWARDEN_NAMESPACES", &namespace)
        .env("PIPEWARDEN_TARGET_VERSION", TARGET)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path)?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;

    pipewarden_tests::wait::until("the process to hold the lease", WAIT, || async {
        let holder = lease_holder(&client, &namespace, "pipewarden").await?;
        Ok((holder.as_deref() == Some(pod.name)).then_some(()))
    })
    .await?;
    let addr = ([127, 0, 0, 1], http_port).into();
    pipewarden_tests::wait::until("/readyz", WAIT, || async {
        Ok(matches!(http_get(addr, "/readyz").await, Ok((200, _))).then_some(()))
    })
    .await?;
    ensure!(scrape(addr, "pipewarden_leader").await? == 1.0);

    let mut flags = base_flags(&namespace);
    flags.extend(leader_flags(&namespace, "pipewarden", "standby", 15));
    let standby = start_replica(client.clone(), &flags).await?;
    ensure!(!leads(&standby));

    let pid = process.id().context("no pid")?.to_string();
    let terminated = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()?;
    ensure!(kill.success(), "kill -TERM {pid}");
    let status = tokio::time::timeout(WAIT, process.wait()).await??;
    println!("SIGTERM: exited {status} after {:?}", terminated.elapsed());
    wait_for("the standby to take over", || leads(&standby)).await?;
    println!(
        "SIGTERM: the standby took over {:?} after the signal (lease 15s)",
        terminated.elapsed()
    );
    ensure!(status.success(), "exit status {status}");
    let log = std::fs::read_to_string(&log_path)?;
    let released = log.lines().any(|line| {
        serde_json::from_str::<serde_json::Value>(line)
            .is_ok_and(|entry| entry["fields"]["message"] == "released the lease")
    });
    ensure!(
        released,
        "no JSON log line saying the lease was released:\n{log}"
    );
    standby.stop().await;
    Ok(())
}
