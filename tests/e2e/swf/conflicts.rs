//! A concurrent writer doing what KFP's own SWF controller does (read the whole object, change
//! status and labels, write the whole object back) in a tight loop while pipewarden rebuilds:
//! no status update is lost, the rebuild lands, and conflict retries stay bounded.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result, ensure};
use kube::ResourceExt as _;
use kube::api::PostParams;
use pipewarden::controller::swf::MAX_WRITE_ATTEMPTS;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;
use serde_json::json;

const STATUS_LABEL: &str = "scheduledworkflows.kubeflow.org/status";

/// Successful full writes per SWF name.
type Landed = Arc<Mutex<BTreeMap<String, u64>>>;

fn workflow_index(swf: &kube::api::DynamicObject) -> Result<u64> {
    swf.data["status"]["trigger"]["lastWorkflowIndex"]
        .as_u64()
        .context("status.trigger.lastWorkflowIndex")
}

/// Bumps `status.trigger.lastWorkflowIndex` and flips a label with full PUTs, round the SWFs,
/// until `stop`; a conflict is met as KFP's controller meets it: read again next time round.
async fn kfp_status_writer(
    client: kube::Client,
    namespace: String,
    names: Vec<String>,
    landed: Landed,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let api = swfs(&client, &namespace);
    while !stop.load(Ordering::Relaxed) {
        for name in &names {
            let mut swf = api.get(name).await?;
            let index = workflow_index(&swf)? + 1;
            swf.data["status"]["trigger"]["lastWorkflowIndex"] = json!(index);
            let status = if index % 2 == 0 { "Enabled" } else { "Running" };
            swf.labels_mut().insert(STATUS_LABEL.into(), status.into());
            match api.replace(name, &PostParams::default(), &swf).await {
                Ok(_) => *landed.lock().unwrap().entry(name.clone()).or_default() += 1,
                Err(kube::Error::Api(status)) if status.is_conflict() => {}
                Err(error) => return Err(error.into()),
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kfp_status_writer_loses_nothing_and_the_rebuild_lands() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let namespaces = std::slice::from_ref(&namespace);
    let seeded = seed(&client, &namespace, "kfp-2.3", "daily", 10).await?;
    let names: Vec<String> = seeded.iter().map(|s| s.name_any()).collect();
    let initial: BTreeMap<String, u64> = seeded
        .iter()
        .map(|s| Ok((s.name_any(), workflow_index(s)?)))
        .collect::<Result<_>>()?;

    let landed = Landed::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(kfp_status_writer(
        client.clone(),
        namespace.clone(),
        names.clone(),
        landed.clone(),
        stop.clone(),
    ));
    pipewarden_tests::wait::until("the writer under way", WAIT, || async {
        Ok((landed.lock().unwrap().values().sum::<u64>() >= 20).then_some(()))
    })
    .await?;

    let running = ControllerArgs::new(namespaces)
        .set("--swf-resync", "2s")
        .start(control_plane)
        .await?;
    let result = wait_for_all(
        &client,
        namespaces,
        "every SWF rebuilt despite the writer",
        |swf| stamped_version(swf) == Some(TARGET),
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    writer.await??;
    result?;
    let conflicts = running.writes("conflict");
    let attempts = running.writes_total();
    let passes_that_wrote: u64 = ["rebuild", "conflicts-exhausted", "gone", "write-failed"]
        .iter()
        .map(|outcome| running.decisions(outcome))
        .sum();
    let exhausted = running.handle.metrics().swf.conflicts_exhausted.get();
    ensure!(
        exhausted == running.decisions("conflicts-exhausted"),
        "exhausted counted {exhausted} times, reported {}",
        running.decisions("conflicts-exhausted")
    );
    running.stop().await;
    pipewarden_tests::log(format_args!(
        "swf_conflicts: {attempts} write attempts in {passes_that_wrote} passes, \
         {conflicts} conflicts, {exhausted} passes out of attempts"
    ));
    // The race was on: the writer kept the object moving under the controller.
    ensure!(
        conflicts > 0,
        "no conflict at all: the writer did not race the controller"
    );
    ensure!(
        attempts <= u64::from(MAX_WRITE_ATTEMPTS) * passes_that_wrote,
        "{attempts} write attempts in {passes_that_wrote} passes: retries not bounded"
    );

    let landed = landed.lock().unwrap().clone();
    for swf in list(&client, &namespace).await? {
        let name = swf.name_any();
        let expected = initial[&name] + landed.get(&name).copied().unwrap_or(0);
        ensure!(
            workflow_index(&swf)? == expected,
            "{name}: status index {} after {} writes from {}: a status update was lost",
            workflow_index(&swf)?,
            landed.get(&name).copied().unwrap_or(0),
            initial[&name]
        );
        ensure!(stamped_version(&swf) == Some(TARGET), "{name}: not stamped");
        let images = driver_images(&swf)?;
        ensure!(
            images
                .iter()
                .all(|i| i == "ghcr.io/kubeflow/kfp-driver:2.17.0"),
            "{name}: the writer undid the rebuild: {images:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_write_that_always_conflicts_is_tried_a_bounded_number_of_times_and_reported()
-> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let namespaces = std::slice::from_ref(&namespace);
    seed(&client, &namespace, "kfp-2.3", "daily", 1).await?;
    let versions = resource_versions(&client, namespaces).await?;

    // One pass only (the resync is far off), every patch of it refused.
    let running = ControllerArgs::new(namespaces)
        .start_always_conflicting(control_plane)
        .await?;
    running.wait_for_decisions("conflicts-exhausted", 1).await?;
    let note = event_note(&client, &namespace, "daily-0", "ConflictsExhausted").await?;
    ensure!(note.contains("next resync"), "note: {note}");
    ensure!(
        running.handle.metrics().swf.conflicts_exhausted.get() == 1,
        "not counted"
    );
    let requests = running.requests.all();
    let patches = requests
        .iter()
        .filter(|(m, _)| m == http::Method::PATCH)
        .count();
    let rereads = requests
        .iter()
        .filter(|(m, path)| m == http::Method::GET && path.ends_with("/scheduledworkflows/daily-0"))
        .count();
    ensure!(
        patches == MAX_WRITE_ATTEMPTS as usize,
        "{patches} patches for {MAX_WRITE_ATTEMPTS} attempts"
    );
    // Each conflict but the last is followed by a fresh read and a new decision on it.
    ensure!(
        rereads == patches - 1,
        "{rereads} re-reads after {patches} conflicts"
    );
    ensure!(
        running.writes("conflict") == patches as u64,
        "conflicts counted"
    );
    ensure!(running.decisions("rebuild") == 0, "a rebuild reported");
    running.stop().await;
    ensure!(
        resource_versions(&client, namespaces).await? == versions,
        "written"
    );
    Ok(())
}
