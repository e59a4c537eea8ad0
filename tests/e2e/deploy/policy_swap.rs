//! A policy swapped on disk, as a ConfigMap update swaps it in the pod's volume: the new policy
//! is validated and put in force without a restart; a broken one (garbage bytes, or a pin that
//! does not match) is refused and counted, and the previous one keeps deciding. Settings pinned
//! with --settings-sha256-file load only with their pin.

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

/// The driver image every driver template of `swf` runs.
fn driver_image(swf: &DynamicObject) -> Result<String> {
    let images = pipewarden_tests::swf_support::driver_images(swf)?;
    ensure!(!images.is_empty(), "no driver template");
    ensure!(
        images.iter().all(|i| i == &images[0]),
        "drivers differ: {images:?}"
    );
    Ok(images[0].clone())
}

/// Settings pinned by a pin file in the same volume: changed settings whose pin was not
/// updated with them are refused and counted, once, and the previous settings keep rendering;
/// settings and pin updated together are loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_changed_without_their_pin_are_refused_and_the_previous_ones_render() -> Result<()>
{
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let dir = TempDir::new("settings-pin")?;
    let mut volume = PolicyVolume::new(dir.path());
    let mut files = policy_files(&built_policy("kfp-default"), &repo_path(DEFAULT_SETTINGS))?;
    let settings_pin = |settings: &[u8]| -> Result<(&'static str, Vec<u8>)> {
        Ok((
            "settings.sha256",
            format!("{}\n", sha256_pin(settings)?).into_bytes(),
        ))
    };
    files.push(settings_pin(&files[2].1)?);
    volume.publish(&files)?;

    let mut flags = base_flags(&namespace);
    flags.retain(|flag| !flag.starts_with("--policy=") && !flag.starts_with("--settings="));
    flags.extend([
        format!("--policy={}", volume.path("policy.wasm").display()),
        format!("--settings={}", volume.path("settings.json").display()),
        format!(
            "--settings-sha256-file={}",
            volume.path("settings.sha256").display()
        ),
        "--policy-reload-seconds=1".into(),
    ]);
    let replica = start_replica(client.clone(), &flags).await?;
    let addr = replica.http_addr;
    let shipped = driver_image(&rebuilt(&client, &namespace, "before").await?)?;
    ensure!(shipped == "ghcr.io/kubeflow/kfp-driver:2.17.0", "{shipped}");

    // Someone who can edit the settings but not the pin points the drivers elsewhere.
    let settings = String::from_utf8(files[2].1.clone())?;
    let forged = settings.replace(&shipped, "registry.example/kfp-driver:forged");
    ensure!(forged != settings);
    volume.publish(&[
        files[0].clone(),
        files[1].clone(),
        ("settings.json", forged.clone().into_bytes()),
        files[3].clone(),
    ])?;
    pipewarden_tests::wait::until("the changed settings refused", WAIT, || async {
        Ok((scrape(addr, &loads("refused")).await? == 1.0).then_some(()))
    })
    .await?;
    ensure!(driver_image(&rebuilt(&client, &namespace, "forged").await?)? == shipped);

    // The same settings with their pin, as one update: loaded.
    volume.publish(&[
        files[0].clone(),
        files[1].clone(),
        ("settings.json", forged.clone().into_bytes()),
        settings_pin(forged.as_bytes())?,
    ])?;
    pipewarden_tests::wait::until("the pinned settings loaded", WAIT, || async {
        Ok((scrape(addr, &loads("loaded")).await? == 2.0).then_some(()))
    })
    .await?;
    ensure!(
        driver_image(&rebuilt(&client, &namespace, "pinned").await?)?
            == "registry.example/kfp-driver:forged"
    );
    ensure!(
        scrape(addr, &loads("refused")).await? == 1.0,
        "one refusal, not one per poll"
    );
    replica.stop().await;
    Ok(())
}
