//! The default install writes nothing. The real `pipewarden run`, configured as the base
//! Deployment configures it, meets an SWF compiled by an older KFP and a workflow that just
//! completed, with a webhook receiver: it says what it would do (a WouldRebuild Event, an
//! ExitNotificationObserved Event, `pipewarden_mode_info{mode="report-only"}`) and writes no
//! SWF, no workflow mark and no POST. The same run with the `enforce` component's environment
//! rebuilds the SWF and POSTs once: the counts that are 0 above are not 0 by construction.

use std::process::Stdio;

use anyhow::{Context as _, Result, ensure};
use kube::ResourceExt as _;
use pipewarden::exit::notification::NOTIFICATION_ANNOTATION;
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::exit_support::{Receiver, set_phase, submit, timestamp, workflows};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::{event_note, seed, swfs};

/// What one install did.
struct Seen {
    swf_rewritten: bool,
    workflow_marked: bool,
    posts: usize,
    mode: String,
}

async fn install(enforce: bool) -> Result<Seen> {
    let binary = pipewarden_binary()?;
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let dir = TempDir::new("first-install")?;
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

    let swf = seed(&client, &namespace, "kfp-2.3", "nightly", 1)
        .await?
        .remove(0);
    let api = workflows(&client, &namespace);
    let running = set_phase(&api, &submit(&api, "etl").await?, "Running", None).await?;
    let done = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
    let receiver = Receiver::start().await?;

    let mut env = deployment_env(dir.path(), &pod)?;
    if enforce {
        env.extend(enforce_env()?);
    }
    let mut process = tokio::process::Command::new(&binary)
        .arg("run")
        .env_clear()
        .envs(env)
        .env("KUBECONFIG", control_plane.kubeconfig())
        .env("PIPEWARDEN_NAMESPACES", &namespace)
        .env("PIPEWARDEN_TARGET_VERSION", TARGET)
        .env("PIPEWARDEN_EXIT_WEBHOOK_URL", &receiver.url)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("pipewarden.log"))?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;

    let (swf_reason, workflow_reason) = match enforce {
        true => ("Rebuilt", "ExitNotification"),
        false => ("WouldRebuild", "ExitNotificationObserved"),
    };
    let name = swf.name_any();
    event_note(&client, &namespace, &name, swf_reason).await?;
    event_note(&client, &namespace, "etl", workflow_reason).await?;
    if enforce {
        wait_for("the POST", || receiver.requests() > 0).await?;
        pipewarden_tests::wait::until("the sent mark", WAIT, || async {
            let workflow = api.get("etl").await?;
            let mark = workflow.annotations().get(NOTIFICATION_ANNOTATION).cloned();
            Ok(mark.filter(|mark| mark.starts_with("sent/")))
        })
        .await?;
    }
    let addr = ([127, 0, 0, 1], http_port).into();
    let (_, metrics) = http_get(addr, "/metrics").await?;
    let mode = metrics
        .lines()
        .find(|line| line.starts_with("pipewarden_mode_info{"))
        .unwrap_or_default()
        .to_owned();
    let swf_now = swfs(&client, &namespace).get(&name).await?;
    let workflow_now = api.get("etl").await?;
    let _ = process.kill().await;
    Ok(Seen {
        swf_rewritten: swf_now.resource_version() != swf.resource_version(),
        workflow_marked: workflow_now.resource_version() != done.resource_version()
            || workflow_now
                .annotations()
                .contains_key(NOTIFICATION_ANNOTATION),
        posts: receiver.requests(),
        mode,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_install_reports_what_it_would_do_and_writes_nothing() -> Result<()> {
    let seen = install(false).await?;
    println!(
        "default install: SWF rewritten {}, workflow marked {}, POSTs {}; {}",
        seen.swf_rewritten, seen.workflow_marked, seen.posts, seen.mode
    );
    ensure!(!seen.swf_rewritten, "the report-only install wrote the SWF");
    ensure!(
        !seen.workflow_marked,
        "the report-only install marked the workflow"
    );
    ensure!(
        seen.posts == 0,
        "the report-only install POSTed {}",
        seen.posts
    );
    ensure!(
        seen.mode.contains(r#"rebuild_policy="disable""#)
            && seen.mode.contains(r#"exit_mode="observe""#)
            && seen.mode.contains(r#"mode="report-only""#)
            && seen.mode.ends_with(" 1"),
        "{}",
        seen.mode
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_enforce_component_turns_both_writes_on() -> Result<()> {
    let seen = install(true).await?;
    println!(
        "enforce: SWF rewritten {}, workflow marked {}, POSTs {}; {}",
        seen.swf_rewritten, seen.workflow_marked, seen.posts, seen.mode
    );
    ensure!(seen.swf_rewritten && seen.workflow_marked && seen.posts == 1);
    ensure!(seen.mode.contains(r#"mode="enforce""#), "{}", seen.mode);
    Ok(())
}
