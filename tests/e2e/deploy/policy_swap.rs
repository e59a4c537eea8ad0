//! A policy swapped on disk, as a ConfigMap update swaps it in the pod's volume: the new policy
//! is validated and put in force without a restart; a broken one (garbage bytes, or a pin that
//! does not match) is refused and counted, and the previous one keeps deciding.

use std::time::Instant;

use anyhow::{Result, ensure};
use kube::api::DynamicObject;
use pipewarden::controller::ControllerHandle;
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

const CA_FLAG: &str = "--ca_cert_path";

fn loads(outcome: &str) -> String {
    format!(r#"pipewarden_policy_loads_total{{outcome="{outcome}"}}"#)
}

fn digest(replica: &ControllerHandle) -> String {
    replica.ctx.policy.current().policy.digest().to_owned()
}

fn stamped(swf: &DynamicObject) -> bool {
    pipewarden_tests::swf_support::stamped_version(swf) == Some(TARGET)
}

fn has_ca_flag(swf: &DynamicObject) -> bool {
    pipewarden_tests::swf_support::launcher_args(swf).is_ok_and(|launchers| {
        launchers
            .iter()
            .all(|args| args.iter().any(|a| a == CA_FLAG))
    })
}

/// Seeds one KFP 2.3 SWF named `{prefix}-0` and returns it once the controller stamped it.
async fn rebuilt(client: &kube::Client, namespace: &str, prefix: &str) -> Result<DynamicObject> {
    pipewarden_tests::swf_support::seed(client, namespace, "kfp-2.3", prefix, 1).await?;
    let name = format!("{prefix}-0");
    let what = format!("{name} stamped");
    let all = pipewarden_tests::swf_support::wait_for_all(
        client,
        &[namespace.to_owned()],
        &what,
        |swf| kube::ResourceExt::name_any(swf) != name || stamped(swf),
    )
    .await?;
    Ok(all
        .into_iter()
        .find(|s| kube::ResourceExt::name_any(s) == name)
        .expect("seeded"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_swapped_on_disk_is_used_and_a_broken_one_is_refused() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let dir = TempDir::new("policy-volume")?;
    let mut volume = PolicyVolume::new(dir.path());
    let default = policy_files(&built_policy("kfp-default"), &repo_path(DEFAULT_SETTINGS))?;
    let downstream = policy_files(
        &built_policy("kfp-downstream-example"),
        &repo_path(DOWNSTREAM_SETTINGS),
    )?;
    volume.publish(&default)?;

    let mut flags = base_flags(&namespace);
    flags.retain(|flag| !flag.starts_with("--policy=") && !flag.starts_with("--settings="));
    flags.extend([
        format!("--policy={}", volume.path("policy.wasm").display()),
        format!(
            "--policy-sha256-file={}",
            volume.path("policy.sha256").display()
        ),
        format!("--settings={}", volume.path("settings.json").display()),
        "--policy-reload-seconds=1".into(),
    ]);
    let replica = start_replica(client.clone(), &flags).await?;
    let addr = replica.http_addr;
    let default_digest = digest(&replica);
    ensure!(scrape(addr, &loads("loaded")).await? == 1.0);
    ensure!(!has_ca_flag(&rebuilt(&client, &namespace, "before").await?));

    // The distribution's policy and settings arrive as one ConfigMap update.
    let swapped_at = Instant::now();
    volume.publish(&downstream)?;
    let downstream_digest = sha256_pin(&downstream[0].1)?;
    wait_for("the downstream policy in force", || {
        digest(&replica) == downstream_digest
    })
    .await?;
    println!("policy swapped {:?} after the update", swapped_at.elapsed());
    ensure!(default_digest != downstream_digest);
    ensure!(scrape(addr, &loads("loaded")).await? == 2.0);
    ensure!(scrape(addr, &loads("refused")).await? == 0.0);
    ensure!(has_ca_flag(&rebuilt(&client, &namespace, "after").await?));

    // Broken: bytes that are no component (pinned correctly), then a pin that does not match.
    let garbage = b"not a wasm component".to_vec();
    let garbage_pin = format!("{}\n", sha256_pin(&garbage)?).into_bytes();
    let broken = [
        vec![
            ("policy.wasm", garbage),
            ("policy.sha256", garbage_pin),
            ("settings.json", downstream[2].1.clone()),
        ],
        vec![
            default[0].clone(),
            downstream[1].clone(),
            default[2].clone(),
        ],
    ];
    for (n, files) in broken.iter().enumerate() {
        volume.publish(files)?;
        let refused = (n + 1) as f64;
        pipewarden_tests::wait::until("the broken policy refused", WAIT, || async {
            Ok((scrape(addr, &loads("refused")).await? == refused).then_some(()))
        })
        .await?;
        ensure!(
            digest(&replica) == downstream_digest,
            "swapped to a broken policy"
        );
    }
    ensure!(scrape(addr, &loads("loaded")).await? == 2.0);
    // The previous policy still decides.
    ensure!(has_ca_flag(&rebuilt(&client, &namespace, "still").await?));
    let (status, _) = http_get(addr, "/readyz").await?;
    ensure!(status == 200, "/readyz {status}");
    replica.stop().await;
    Ok(())
}
