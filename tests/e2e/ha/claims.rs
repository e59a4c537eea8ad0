//! One delivery per completion across replicas: two controllers that both own the same
//! workflows (two Leases, as overlapping shards would), and a leader stopped with SIGSTOP while
//! its receiver holds its deliveries, a standby taking over meanwhile. Each completion is
//! POSTed exactly once: a claim names its holder, and another replica waits for it to expire.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::{StreamExt as _, stream};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::exit_support::{
    Answer, Controller, Receiver, completion_key, set_phase, submit, timestamp, wait_for_sent,
    workflows,
};
use pipewarden_tests::shared;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_owning_the_same_workflows_post_each_completion_once() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    // Every answer a little late, so both replicas are at the same completions at once.
    let receiver = Receiver::with(|_, _| Answer::Slow(200, Duration::from_millis(300))).await?;
    let replica = |name: &str| {
        vec![
            receiver.flag(),
            "--swf-loop=false".into(),
            "--exit-sweep-interval=2s".into(),
            format!("--identity={name}"),
        ]
    };
    let a = Controller::start(control_plane, &namespace, &replica("replica-a")).await?;
    let b = Controller::start(control_plane, &namespace, &replica("replica-b")).await?;
    let api = workflows(&client, &namespace);
    const COMPLETIONS: usize = 100;
    let keys: Vec<String> = stream::iter(0..COMPLETIONS)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("overlap-{i}");
                let running = set_phase(&api, &submit(&api, &name).await?, "Running", None).await?;
                let phase = if i % 3 == 0 { "Failed" } else { "Succeeded" };
                let done = set_phase(&api, &running, phase, Some(&timestamp(0))).await?;
                anyhow::Ok((name, completion_key(&done)?))
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|done| {
            let (name, key) = done?;
            anyhow::Ok((name, key))
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .map(|(name, key)| {
            let api = api.clone();
            async move {
                wait_for_sent(&api, &name, &key).await?;
                anyhow::Ok(key)
            }
        })
        .collect::<stream::FuturesUnordered<_>>()
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    // Give a second delivery every chance to show up.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let posts = receiver.requests_per_key();
    let twice: Vec<&String> = posts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, _)| k)
        .collect();
    pipewarden_tests::log(format_args!(
        "two owners, {COMPLETIONS} completions: {} keys POSTed, {} more than once; replica-a \
         left {} to the other, replica-b {}",
        posts.len(),
        twice.len(),
        a.notifications("claimed-elsewhere"),
        b.notifications("claimed-elsewhere"),
    ));
    ensure!(twice.is_empty(), "POSTed more than once: {twice:?}");
    ensure!(
        keys.iter().all(|key| posts.get(key) == Some(&1)),
        "every completion POSTed once: {posts:?}"
    );
    ensure!(
        receiver.requests() == COMPLETIONS,
        "{}",
        receiver.requests()
    );
    a.stop().await;
    b.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_mid_delivery_is_not_delivered_for_by_the_standby() -> Result<()> {
    let binary = pipewarden_binary()?;
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    // The first five deliveries are held 20 s: the leader is stopped while they are in flight.
    let receiver = Receiver::with(|_, n| {
        if n < 5 {
            Answer::Slow(200, Duration::from_secs(20))
        } else {
            Answer::Status(200)
        }
    })
    .await?;
    let dir = TempDir::new("sigstop")?;
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
    const LEASE_SECONDS: &str = "3";
    let mut leader = tokio::process::Command::new(&binary)
        .arg("run")
        .env_clear()
        .envs(deployment_env(dir.path(), &pod)?)
        .envs(enforce_env()?)
        .env("KUBECONFIG", control_plane.kubeconfig())
        .env("PIPEWARDEN_NAMESPACES", &namespace)
        .env("PIPEWARDEN_TARGET_VERSION", TARGET)
        .env("PIPEWARDEN_SWF_LOOP", "false")
        .env("PIPEWARDEN_LEASE_DURATION_SECONDS", LEASE_SECONDS)
        .env("PIPEWARDEN_EXIT_WEBHOOK_URL", &receiver.url)
        // Longer than the receiver holds a delivery, and a claim that outlasts both.
        .env("PIPEWARDEN_EXIT_WEBHOOK_TIMEOUT", "30s")
        .env("PIPEWARDEN_EXIT_CLAIM_TTL", "40s")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("leader.log"))?)
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
    let mut flags = base_flags(&namespace);
    flags.extend(leader_flags(&namespace, "pipewarden", "standby", 3));
    flags.extend([
        "--swf-loop=false".into(),
        format!("--exit-webhook-url={}", receiver.url),
        "--exit-webhook-timeout=30s".into(),
        "--exit-claim-ttl=40s".into(),
        "--exit-sweep-interval=2s".into(),
    ]);
    let standby = start_replica(client.clone(), &flags).await?;

    let api = workflows(&client, &namespace);
    let mut done = BTreeMap::new();
    for i in 0..10 {
        let name = format!("held-{i}");
        let running = set_phase(&api, &submit(&api, &name).await?, "Running", None).await?;
        let finished = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
        done.insert(name, completion_key(&finished)?);
    }
    pipewarden_tests::wait::until("five deliveries held", WAIT, || async {
        Ok((receiver.requests() >= 5).then_some(()))
    })
    .await?;
    let pid = leader.id().context("no pid")?.to_string();
    ensure!(
        std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()?
            .success()
    );
    wait_for("the standby to take over", || leads(&standby)).await?;
    tokio::time::sleep(Duration::from_secs(15)).await;
    ensure!(
        std::process::Command::new("kill")
            .args(["-CONT", &pid])
            .status()?
            .success()
    );
    for (name, key) in &done {
        wait_for_sent(&api, name, key).await?;
    }
    // Past every claim's expiry: a takeover would have POSTed by now.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let posts = receiver.requests_per_key();
    pipewarden_tests::log(format_args!(
        "leader stopped 15 s with 5 deliveries held 20 s: {} keys POSTed, {} more than once",
        posts.len(),
        posts.values().filter(|n| **n > 1).count()
    ));
    ensure!(
        done.values().all(|key| posts.get(key) == Some(&1)),
        "every completion POSTed once: {posts:?}"
    );
    standby.stop().await;
    let _ = leader.kill().await;
    Ok(())
}
