//! KFP #11296 reproduced: an SWF's workflow overwritten with the upstream reproduction's merge
//! patch. The policy cannot render it; the controller restores the last good render it recorded
//! on the SWF and says so, unless the rebuild policy is `disable`, where it only reports.

use anyhow::{Result, ensure};
use kube::ResourceExt as _;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;

/// The restored workflow must be the one last written, compared parsed.
async fn corruption_is_restored(rebuild_policy: &str) -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let namespaces = std::slice::from_ref(&namespace);
    seed(&client, &namespace, "kfp-2.3", "daily", 2).await?;
    let running = ControllerArgs::new(namespaces)
        .set("--rebuild-policy", rebuild_policy)
        .start(control_plane)
        .await?;
    let rebuilt = wait_for_all(&client, namespaces, "SWFs stamped", |swf| {
        stamped_version(swf) == Some(TARGET)
    })
    .await?;
    let good = rebuilt
        .iter()
        .find(|s| s.name_any() == "daily-0")
        .expect("seeded");

    merge_patch(&client, &namespace, "daily-0", KFP_11296_CORRUPTION).await?;
    let repaired = wait_for_all(&client, namespaces, "the workflow restored", |swf| {
        embedded_workflow(swf).is_ok()
    })
    .await?;
    let repaired = repaired
        .iter()
        .find(|s| s.name_any() == "daily-0")
        .expect("kept");
    ensure!(
        embedded_workflow(repaired)? == embedded_workflow(good)?,
        "restored workflow differs from the last good render"
    );
    ensure!(
        repaired.data["status"] == good.data["status"],
        "status changed"
    );
    let note = event_note(&client, &namespace, "daily-0", "RestoredFromLastGoodRender").await?;
    ensure!(
        note.contains("not a workflow compiled by KFP v2"),
        "note: {note}"
    );
    ensure!(note.contains(&running.policy_digest()), "note: {note}");
    running.wait_for_decisions("restored", 1).await?;
    ensure!(
        running.decisions("restored") == 1,
        "restores: {}",
        running.decisions("restored")
    );
    running.stop().await;
    Ok(())
}

#[tokio::test]
async fn kfp_11296_corruption_is_restored_under_always() -> Result<()> {
    corruption_is_restored("always").await
}

#[tokio::test]
async fn kfp_11296_corruption_is_restored_under_on_version_change() -> Result<()> {
    corruption_is_restored("on-version-change").await
}

#[tokio::test]
async fn kfp_11296_corruption_under_disable_is_reported_and_left_alone() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let namespaces = std::slice::from_ref(&namespace);
    seed(&client, &namespace, "kfp-2.3", "daily", 1).await?;
    let args = ControllerArgs::new(namespaces);
    let recording = args.start(control_plane).await?;
    wait_for_all(&client, namespaces, "the SWF stamped", |swf| {
        stamped_version(swf) == Some(TARGET)
    })
    .await?;
    recording.stop().await;

    merge_patch(&client, &namespace, "daily-0", KFP_11296_CORRUPTION).await?;
    let versions = resource_versions(&client, namespaces).await?;
    let running = args
        .clone()
        .set("--rebuild-policy", "disable")
        .start(control_plane)
        .await?;
    running.wait_for_decisions("would-restore", 1).await?;
    let note = event_note(
        &client,
        &namespace,
        "daily-0",
        "WouldRestoreFromLastGoodRender",
    )
    .await?;
    ensure!(
        note.contains("not a workflow compiled by KFP v2"),
        "note: {note}"
    );
    ensure!(note.contains("rebuild policy is disable"), "note: {note}");
    ensure!(
        running.requests.swf_writes().is_empty(),
        "wrote under disable"
    );
    ensure!(running.writes_total() == 0, "write metric under disable");
    ensure!(
        resource_versions(&client, namespaces).await? == versions,
        "the corrupted SWF changed"
    );
    let still = list(&client, &namespace).await?;
    ensure!(embedded_workflow(&still[0]).is_err(), "no longer corrupted");
    running.stop().await;
    Ok(())
}
