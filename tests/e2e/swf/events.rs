//! Events of a mass rebuild on the real API server: the first ten SWFs of a namespace get a
//! `Rebuilt` Event of their own, the rest one `Rebuilt` Event about the namespace, created in
//! it, with their count and first names.

use anyhow::{Result, ensure};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use pipewarden::metrics::ReasonLabel;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;

const SWFS: usize = 14;

#[tokio::test]
async fn past_ten_rebuilt_swfs_in_a_namespace_the_rest_share_one_event_about_it() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed_many(&client, &namespace, SWFS).await?;
    let running = ControllerArgs::new(std::slice::from_ref(&namespace))
        .start(control_plane)
        .await?;
    running.wait_for_decisions("rebuild", SWFS as u64).await?;

    // The combined one is created at the next summary (every 30 s).
    let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
    let rebuilt = || async {
        let list = events.list(&ListParams::default()).await?.items;
        anyhow::Ok(
            list.into_iter()
                .filter(|e| e.reason.as_deref() == Some("Rebuilt"))
                .collect::<Vec<_>>(),
        )
    };
    let found = pipewarden_tests::wait::until("the combined Event", WAIT, || async {
        let found = rebuilt().await?;
        let combined = found.iter().any(|e| kind(e) == "Namespace");
        Ok(combined.then_some(found))
    })
    .await?;
    let own = found
        .iter()
        .filter(|e| kind(e) == "ScheduledWorkflow")
        .count();
    let combined: Vec<&Event> = found.iter().filter(|e| kind(e) == "Namespace").collect();
    ensure!(own == 10, "{own} Rebuilt Events about SWFs, expected 10");
    ensure!(combined.len() == 1, "{} combined Events", combined.len());
    let note = combined[0].note.clone().unwrap_or_default();
    ensure!(
        note.starts_with("4 more SWFs in this namespace: daily-"),
        "combined note: {note}"
    );
    ensure!(note.contains(&running.policy_digest()), "note: {note}");
    let regarding = combined[0].regarding.clone().unwrap_or_default();
    ensure!(regarding.name.as_deref() == Some(namespace.as_str()));
    let label = ReasonLabel {
        reason: "Rebuilt".into(),
    };
    let counted = running
        .handle
        .metrics()
        .scale
        .swf_events_combined
        .get_or_create(&label)
        .get();
    ensure!(counted == 4, "combined counter: {counted}");
    running.stop().await;
    Ok(())
}

fn kind(event: &Event) -> &str {
    event
        .regarding
        .as_ref()
        .and_then(|r| r.kind.as_deref())
        .unwrap_or_default()
}
