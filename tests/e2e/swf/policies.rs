//! One host binary, two policies: the downstream example adds its launcher flag to SWFs that
//! lack it; the default policy does not. Swapping policies at the same KFP version is picked up
//! under the `always` rebuild policy.

use anyhow::{Result, ensure};
use kube::api::DynamicObject;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;

const CA_FLAG: &str = "--ca_cert_path";
const CA_BUNDLE: &str = "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem";

fn has_ca_flag(swf: &DynamicObject) -> Result<bool> {
    let launchers = launcher_args(swf)?;
    let with_flag = |args: &Vec<String>| {
        args.windows(2)
            .any(|pair| pair[0] == CA_FLAG && pair[1] == CA_BUNDLE)
    };
    Ok(launchers.iter().all(with_flag))
}

fn on_target(swf: &DynamicObject) -> bool {
    stamped_version(swf) == Some(TARGET)
        && driver_images(swf).is_ok_and(|images| {
            !images.is_empty()
                && images
                    .iter()
                    .all(|i| i == "ghcr.io/kubeflow/kfp-driver:2.17.0")
        })
}

#[tokio::test]
async fn only_the_downstream_policy_adds_its_launcher_flag() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let default_ns = vec![control_plane.ns().await?];
    let downstream_ns = vec![control_plane.ns().await?];
    seed(&client, &default_ns[0], "kfp-2.3", "daily", 2).await?;
    seed(&client, &downstream_ns[0], "kfp-2.3", "daily", 2).await?;

    let default_args = ControllerArgs::new(&default_ns);
    let default = default_args.start(control_plane).await?;
    let downstream = ControllerArgs::new(&downstream_ns)
        .policy(DOWNSTREAM_POLICY, DOWNSTREAM_SETTINGS)
        .start(control_plane)
        .await?;
    ensure!(
        default.policy_digest() != downstream.policy_digest(),
        "same policy twice"
    );

    let by_default = wait_for_all(&client, &default_ns, "default render", on_target).await?;
    let by_downstream =
        wait_for_all(&client, &downstream_ns, "downstream render", on_target).await?;
    for swf in &by_default {
        ensure!(
            !launcher_args(swf)?.concat().iter().any(|a| a == CA_FLAG),
            "default added it"
        );
    }
    for swf in &by_downstream {
        ensure!(
            has_ca_flag(swf)?,
            "downstream did not add {CA_FLAG} {CA_BUNDLE}"
        );
    }
    let note = event_note(&client, &downstream_ns[0], "daily-0", "Rebuilt").await?;
    ensure!(note.contains(&downstream.policy_digest()), "note: {note}");
    downstream.stop().await;
    default.stop().await;

    // The distribution installs its policy; the KFP version does not change.
    let swapped = default_args
        .policy(DOWNSTREAM_POLICY, DOWNSTREAM_SETTINGS)
        .start(control_plane)
        .await?;
    let rebuilt = wait_for_all(
        &client,
        &default_ns,
        "the flag added after the swap",
        |swf| on_target(swf) && has_ca_flag(swf).unwrap_or(false),
    )
    .await?;
    ensure!(rebuilt.len() == 2, "{} SWFs", rebuilt.len());
    swapped.wait_for_decisions("rebuild", 2).await?;
    ensure!(
        swapped.writes_total() == 2,
        "writes: {}",
        swapped.writes_total()
    );
    swapped.stop().await;
    Ok(())
}
