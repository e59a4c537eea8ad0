//! The exit gate's peak memory against what a cluster holds, on the local control plane, with
//! the `pipewarden` binary run as the base Deployment runs it (its environment, the enforce
//! component's notify mode, leader election, `MALLOC_ARENA_MAX=2`), one process per scenario:
//!
//! - **catch-up**: EXIT_MEMORY_WORKFLOWS completed workflows (5,000 unless given) of about
//!   200 KB each (`status.nodes` as Argo writes a 400-node workflow), present before the
//!   controller starts, so it takes the lease and catches up on every one: peak RSS, and each
//!   completion notified exactly once;
//! - **tenant text**: 300 completions whose `status.message` is 1 MiB, against a receiver
//!   answering 413 to everything: peak RSS once every completion was tried, and the largest
//!   body POSTed.
//!
//! Peak RSS is the process's `VmHWM`. `make bench-exit-memory`; not part of `make test`.

mod workflows;

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use futures::{StreamExt as _, stream};
use pipewarden_tests::deploy_support::{
    DEFAULT_SETTINGS, Pod, PolicyVolume, TempDir, built_policy, deployment_env, enforce_env,
    pipewarden_binary, policy_files, repo_path,
};
use pipewarden_tests::exit_support::{Answer, Receiver};
use pipewarden_tests::procfs::memory_kib;

/// How long any one phase may take.
const PHASE: Duration = Duration::from_secs(1800);

fn main() -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench())
}

/// One scenario's figures, a row of the table.
struct Row {
    scenario: String,
    workflows: usize,
    object_kib: usize,
    peak_mib: f64,
    notified: usize,
    posts: usize,
    repeated: usize,
    largest_body_kib: usize,
    seconds: f64,
}

async fn bench() -> Result<()> {
    let count: usize = std::env::var("EXIT_MEMORY_WORKFLOWS")
        .map_or(Ok(5000), |n| n.parse())
        .context("EXIT_MEMORY_WORKFLOWS")?;
    let binary = pipewarden_binary()?;
    let control_plane = pipewarden_tests::shared().await?;
    let mut rows = Vec::new();

    // Catch-up: everything present before the lease is taken.
    let namespace = control_plane.ns().await?;
    let client = control_plane.client()?;
    let api = workflows::api(&client, &namespace);
    let receiver = Receiver::start().await?;
    let started = Instant::now();
    let object = workflows::completed("probe", 400, 0);
    let object_kib = serde_json::to_vec(&object)?.len() / 1024;
    let mut created = 0usize;
    let mut creating = stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                workflows::create(&api, workflows::completed(&format!("big-{i:05}"), 400, 0)).await
            }
        })
        .buffer_unordered(8);
    while let Some(done) = creating.next().await {
        done?;
        created += 1;
        if created.is_multiple_of(500) {
            eprintln!(
                "created {created}/{count} workflows of {object_kib} KiB ({:.0?})",
                started.elapsed()
            );
        }
    }
    let run = Process::start(&binary, control_plane, &namespace, &receiver, &[]).await?;
    let began = Instant::now();
    pipewarden_tests::wait::until("a notification per completion", PHASE, || async {
        let notified = receiver.per_key().len();
        eprintln!(
            "catch-up: {notified}/{count} notified, peak RSS {:.0} MiB",
            run.peak_mib()
        );
        Ok((notified >= count).then_some(()))
    })
    .await?;
    // Give a second POST of any key every chance to show up.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let per_key = receiver.per_key();
    rows.push(Row {
        scenario: "catch-up on taking the lease".into(),
        workflows: count,
        object_kib,
        peak_mib: run.peak_mib(),
        notified: per_key.len(),
        posts: receiver.requests(),
        repeated: per_key.values().filter(|n| **n > 1).count(),
        largest_body_kib: largest_body(&receiver),
        seconds: began.elapsed().as_secs_f64(),
    });
    run.stop().await;

    // Tenant text: 1 MiB messages, a receiver refusing them all.
    let namespace = control_plane.ns().await?;
    let api = workflows::api(&client, &namespace);
    let refusing = Receiver::with(|_, _| Answer::Status(413)).await?;
    let run = Process::start(&binary, control_plane, &namespace, &refusing, &[]).await?;
    let began = Instant::now();
    const MESSAGES: usize = 300;
    let mut creating = stream::iter(0..MESSAGES)
        .map(|i| {
            let api = api.clone();
            async move {
                workflows::create(
                    &api,
                    workflows::completed(&format!("loud-{i:03}"), 10, 1 << 20),
                )
                .await
            }
        })
        .buffer_unordered(8);
    while let Some(done) = creating.next().await {
        done?;
    }
    pipewarden_tests::wait::until("a request per completion", PHASE, || async {
        Ok((refusing.requests_per_key().len() >= MESSAGES).then_some(()))
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(10)).await;
    rows.push(Row {
        scenario: "1 MiB status.message, receiver 413".into(),
        workflows: MESSAGES,
        object_kib: 1024,
        peak_mib: run.peak_mib(),
        notified: refusing.per_key().len(),
        posts: refusing.requests(),
        repeated: 0,
        largest_body_kib: largest_body(&refusing),
        seconds: began.elapsed().as_secs_f64(),
    });
    run.stop().await;

    println!();
    println!(
        "| scenario | workflows | object KiB | peak RSS MiB | goal MiB | notified (2xx) | POSTs | keys POSTed twice | largest body KiB | s |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in &rows {
        println!(
            "| {} | {} | {} | {:.0} | 256 | {} | {} | {} | {} | {:.0} |",
            row.scenario,
            row.workflows,
            row.object_kib,
            row.peak_mib,
            row.notified,
            row.posts,
            row.repeated,
            row.largest_body_kib,
            row.seconds
        );
    }
    ensure!(
        rows[0].notified == count,
        "not every completion was notified"
    );
    ensure!(rows[0].repeated == 0, "a completion was notified twice");
    Ok(())
}

fn largest_body(receiver: &Receiver) -> usize {
    receiver
        .seen()
        .iter()
        .map(|d| d.raw.len() / 1024)
        .max()
        .unwrap_or(0)
}

/// The binary as the Deployment runs it, in the enforce component's mode.
struct Process {
    child: tokio::process::Child,
    pid: String,
    _dir: TempDir,
}

impl Process {
    async fn start(
        binary: &std::path::Path,
        control_plane: &pipewarden_tests::ControlPlane,
        namespace: &str,
        receiver: &Receiver,
        extra: &[(&str, &str)],
    ) -> Result<Process> {
        let dir = TempDir::new("exit-memory")?;
        let policy_dir = dir.path().join("policy");
        std::fs::create_dir_all(&policy_dir)?;
        let files = policy_files(&built_policy("kfp-default"), &repo_path(DEFAULT_SETTINGS))?;
        PolicyVolume::new(&policy_dir).publish(&files)?;
        let http_port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let pod = Pod {
            name: "pipewarden-0",
            namespace,
            http_port,
        };
        let child = tokio::process::Command::new(binary)
            .arg("run")
            .env_clear()
            .envs(deployment_env(dir.path(), &pod)?)
            .envs(enforce_env()?)
            .env("KUBECONFIG", control_plane.kubeconfig())
            .env("PIPEWARDEN_NAMESPACES", namespace)
            .env("PIPEWARDEN_SWF_LOOP", "false")
            .env("PIPEWARDEN_EXIT_WEBHOOK_URL", &receiver.url)
            .envs(extra.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("pipewarden.log"))?)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let pid = child.id().context("no pid")?.to_string();
        Ok(Process {
            child,
            pid,
            _dir: dir,
        })
    }

    fn peak_mib(&self) -> f64 {
        memory_kib(&self.pid, "VmHWM") as f64 / 1024.0
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
