//! The compiled-policy cache as the base Deployment ships it: the binary run with the
//! manifest's environment and volume layout, its cache volume made as the kubelet makes an
//! emptyDir (root's, mode 0777: here the test user's, 0777). The first start compiles the
//! policy into a 0700 subdirectory it creates; a restart on the same volume loads it from
//! there. Before, the volume's mode turned the cache off and every start compiled.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Stdio;

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

/// Runs the binary until it serves `/readyz`, then stops it; returns its log.
async fn start_once(
    binary: &std::path::Path,
    volumes: &std::path::Path,
    namespace: &str,
    kubeconfig: &std::path::Path,
    run: usize,
) -> Result<String> {
    let http_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let pod = Pod {
        name: "pipewarden-0",
        namespace,
        http_port,
    };
    let log = volumes.join(format!("run-{run}.log"));
    let mut child = tokio::process::Command::new(binary)
        .arg("run")
        .env_clear()
        .envs(deployment_env(volumes, &pod)?)
        .env("KUBECONFIG", kubeconfig)
        .env("PIPEWARDEN_NAMESPACES", namespace)
        .env("PIPEWARDEN_TARGET_VERSION", TARGET)
        .env("PIPEWARDEN_SWF_LOOP", "false")
        .env("PIPEWARDEN_EXIT_GATE", "false")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let addr = ([127, 0, 0, 1], http_port).into();
    let ready = pipewarden_tests::wait::until("/readyz", WAIT, || async {
        Ok(matches!(http_get(addr, "/readyz").await, Ok((200, _))).then_some(()))
    })
    .await;
    let _ = child.kill().await;
    ready?;
    Ok(std::fs::read_to_string(log)?)
}

#[tokio::test]
async fn the_shipped_pod_loads_its_policy_from_the_cache_volume_on_restart() -> Result<()> {
    let binary = pipewarden_binary()?;
    let control_plane = shared().await?;
    let namespace = control_plane.ns().await?;
    let dir = TempDir::new("cache-volume")?;
    let policy_dir = dir.path().join("policy");
    std::fs::create_dir_all(&policy_dir)?;
    let files = policy_files(&built_policy("kfp-default"), &repo_path(DEFAULT_SETTINGS))?;
    PolicyVolume::new(&policy_dir).publish(&files)?;
    // The `compiled` volume, as an emptyDir comes: writable by anyone in the pod.
    let volume = dir.path().join("compiled");
    std::fs::create_dir_all(&volume)?;
    std::fs::set_permissions(&volume, std::fs::Permissions::from_mode(0o777))?;

    let kubeconfig = control_plane.kubeconfig();
    let first = start_once(&binary, dir.path(), &namespace, kubeconfig, 1).await?;
    let second = start_once(&binary, dir.path(), &namespace, kubeconfig, 2).await?;
    let code = |log: &str| {
        log.lines()
            .find(|line| line.contains("\"policy loaded\""))
            .and_then(|line| {
                let value: serde_json::Value = serde_json::from_str(line).ok()?;
                value["fields"]["code"].as_str().map(str::to_owned)
            })
    };
    pipewarden_tests::log(format_args!(
        "cache volume: first start {:?}, restart {:?}",
        code(&first),
        code(&second)
    ));
    ensure!(code(&first).as_deref() == Some("Compiled"), "{first}");
    ensure!(code(&second).as_deref() == Some("Cached"), "{second}");
    let private = std::fs::metadata(volume.join("compiled"))?;
    ensure!(private.permissions().mode() & 0o777 == 0o700);
    ensure!(
        !first.contains("compiled-policy cache off"),
        "the cache was turned off: {first}"
    );
    Ok(())
}
