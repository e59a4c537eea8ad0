//! The SWF loop against a real control plane: SWFs as KFP 2.3 left them are rebuilt and
//! stamped, nothing is written again on restart, a target version bump decides them all again
//! (writing only what the compile changes), and SWFs that cannot be rebuilt cost only
//! themselves.

use anyhow::{Result, ensure};
use kube::ResourceExt as _;
use pipewarden::swf::last_good::LAST_GOOD_ANNOTATION;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;
use serde_json::json;

/// 20 SWFs in 3 namespaces, alternately without and with runtime parameters.
async fn seed_kfp_2_3(client: &kube::Client, namespaces: &[String]) -> Result<usize> {
    let mut seeded = 0;
    for (n, namespace) in namespaces.iter().enumerate() {
        let count = if n == 0 { 8 } else { 6 };
        seeded += seed(client, namespace, "kfp-2.3", "daily", count / 2)
            .await?
            .len();
        seeded += seed(client, namespace, "kfp-2.3-parameters", "params", count / 2)
            .await?
            .len();
    }
    Ok(seeded)
}

#[tokio::test]
async fn kfp_2_3_swfs_are_rebuilt_and_stamped_once_then_left_alone_on_restart() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let mut namespaces = Vec::new();
    for _ in 0..3 {
        namespaces.push(control_plane.ns().await?);
    }
    let seeded = seed_kfp_2_3(&client, &namespaces).await?;
    ensure!(seeded == 20, "seeded {seeded}");
    let before = wait_for_all(&client, &namespaces, "seeded SWFs", |_| true).await?;

    let args = ControllerArgs::new(&namespaces);
    let first = args.start(control_plane).await?;
    let rebuilt = wait_for_all(&client, &namespaces, "every SWF stamped", |swf| {
        stamped_version(swf) == Some(TARGET)
    })
    .await?;
    first.wait_for_decisions("rebuild", 20).await?;
    for swf in &rebuilt {
        let name = swf.name_any();
        let old = before
            .iter()
            .find(|b| b.name_any() == name && b.namespace() == swf.namespace());
        let old = old.expect("seeded");
        ensure!(
            swf.data["status"] == old.data["status"],
            "{name}: status changed"
        );
        ensure!(swf.labels() == old.labels(), "{name}: labels changed");
        ensure!(
            driver_images(swf)?
                .iter()
                .all(|i| i == "ghcr.io/kubeflow/kfp-driver:2.17.0"),
            "{name}: driver images {:?}",
            driver_images(swf)?
        );
        ensure!(
            annotation(swf, LAST_GOOD_ANNOTATION).is_some(),
            "{name}: no record"
        );
        ensure!(
            swf.data["spec"]["workflow"]["parameters"]
                == old.data["spec"]["workflow"]["parameters"],
            "{name}: parameters changed"
        );
    }
    ensure!(first.writes("ok") == 20, "writes: {}", first.writes("ok"));
    ensure!(
        first.writes_total() == 20,
        "write attempts: {}",
        first.writes_total()
    );
    let one = &rebuilt[0];
    let note = event_note(
        &client,
        &one.namespace().unwrap(),
        &one.name_any(),
        "Rebuilt",
    )
    .await?;
    ensure!(
        note.contains(&first.policy_digest()),
        "note without digest: {note}"
    );
    first.stop().await;

    // KFP's apiserver re-renders runtime parameters in map order: reorder them as it would.
    for namespace in &namespaces {
        for i in 0..3 {
            let reordered = json!({"spec": {"workflow": {"parameters": [
                {"name": "threshold", "value": "0.5"},
                {"name": "repeat", "value": "3"},
                {"name": "message", "value": "\"hello world\""},
            ]}}});
            merge_patch(
                &client,
                namespace,
                &format!("params-{i}"),
                &reordered.to_string(),
            )
            .await?;
        }
    }
    let versions = resource_versions(&client, &namespaces).await?;

    let second = args.start(control_plane).await?;
    second.wait_ready().await?;
    second.wait_for_decisions("up-to-date", 20).await?;
    ensure!(second.decisions("rebuild") == 0, "rebuilt again on restart");
    // The 11 SWFs nobody touched since the first pass are up to date by their write-digest
    // stamp, as the API server returned them; the 9 KFP reordered were rendered again.
    let spared = second.handle.metrics().scale.swf_renders_spared.get();
    ensure!(
        spared == 11,
        "renders spared on restart: {spared}, expected 11"
    );
    ensure!(
        second.writes_total() == 0,
        "write metric: {}",
        second.writes_total()
    );
    let writes = second.requests.swf_writes();
    ensure!(writes.is_empty(), "write requests on restart: {writes:?}");
    ensure!(
        resource_versions(&client, &namespaces).await? == versions,
        "resourceVersions moved on restart"
    );
    second.stop().await;
    Ok(())
}

/// A new KFP version is picked up from the API server and every SWF is decided again; with
/// the same compile (same settings) nothing is written: stamps are never written alone.
#[tokio::test]
async fn the_target_is_polled_from_the_kfp_apiserver_and_a_bump_decides_every_swf_again()
-> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespaces = vec![control_plane.ns().await?, control_plane.ns().await?];
    for namespace in &namespaces {
        seed(&client, namespace, "kfp-2.3", "daily", 3).await?;
    }
    let kfp = KfpApi::serve(TARGET).await?;
    let running = ControllerArgs::new(&namespaces)
        .unset("--target-version")
        .set("--kfp-api-url", &kfp.url)
        .set("--kfp-api-poll", "1s")
        .start(control_plane)
        .await?;
    wait_for_all(
        &client,
        &namespaces,
        "SWFs stamped for the polled version",
        |swf| stamped_version(swf) == Some(TARGET),
    )
    .await?;
    running.wait_for_decisions("rebuild", 6).await?;
    // Each write comes back through the watch, known as the loop's own: no new decision.
    running.wait_for_own_writes_seen(6).await?;
    let versions = resource_versions(&client, &namespaces).await?;

    // A patch release whose evidence is incomplete (the ledger's 2.17.2): every SWF decided
    // again, none written.
    kfp.set_tag("2.17.2");
    running.wait_for_decisions("unsupported-target", 6).await?;
    ensure!(
        running.decisions("rebuild") == 6,
        "rebuilds: {}",
        running.decisions("rebuild")
    );
    ensure!(
        running.writes_total() == 6,
        "writes: {}",
        running.writes_total()
    );
    ensure!(
        resource_versions(&client, &namespaces).await? == versions,
        "a bump to an unsupported target wrote"
    );
    running.stop().await;
    Ok(())
}

/// A KFP v2 workflow whose stored pipeline lost its executors: KFP's compile, damaged.
fn damaged_kfp_2_3(namespace: &str) -> Result<kube::api::DynamicObject> {
    let mut swf = fixture("kfp-2.3")?;
    swf.metadata.name = Some("damaged-0".to_owned());
    swf.metadata.namespace = Some(namespace.to_owned());
    let mut workflow = embedded_workflow(&swf)?;
    if let Some(parameters) = workflow["spec"]["arguments"]["parameters"].as_array_mut() {
        parameters.retain(|p| {
            !p["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("implementations-"))
        });
    }
    swf.data["spec"]["workflow"]["spec"] = json!(workflow.to_string());
    Ok(swf)
}

#[tokio::test]
async fn swfs_that_cannot_be_rebuilt_are_reported_and_the_others_are_rebuilt() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed(&client, &namespace, "kfp-2.3", "daily", 4).await?;
    let broken = seed(&client, &namespace, "kfp-2.3-corrupted", "corrupt", 1).await?;
    let broken_version = broken[0].resource_version();
    let damaged = swfs(&client, &namespace)
        .create(&Default::default(), &damaged_kfp_2_3(&namespace)?)
        .await?;

    let running = ControllerArgs::new(std::slice::from_ref(&namespace))
        .start(control_plane)
        .await?;
    let all = wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "the others stamped",
        |swf| swf.name_any().starts_with("daily") == (stamped_version(swf) == Some(TARGET)),
    )
    .await?;
    // No KFP compile left to recover: left as it is, said once.
    running.wait_for_decisions("not-rebuildable", 1).await?;
    let note = event_note(&client, &namespace, "corrupt-0", "NotRebuildable").await?;
    ensure!(
        note.contains("not a workflow compiled by KFP v2"),
        "note: {note}"
    );
    ensure!(note.contains(&running.policy_digest()), "note: {note}");
    // A KFP compile whose stored pipeline is damaged: a render failure, named as such.
    running.wait_for_decisions("render-failed", 1).await?;
    let note = event_note(&client, &namespace, "damaged-0", "RenderFailed").await?;
    ensure!(note.contains("damaged"), "note: {note}");
    ensure!(note.contains("no last good render"), "note: {note}");
    for (name, version) in [
        ("corrupt-0", broken_version),
        ("damaged-0", damaged.resource_version()),
    ] {
        let now = all.iter().find(|s| s.name_any() == name).expect("listed");
        ensure!(now.resource_version() == version, "{name} was written");
    }
    // The series exists at 0 from the start: it must have counted.
    let failures = running.handle.metrics().encode().lines().any(|l| {
        l.strip_prefix(
            "pipewarden_policy_errors_total{export=\"render-swf\",kind=\"guest_error\"} ",
        )
        .is_some_and(|value| value.trim() != "0")
    });
    ensure!(
        failures,
        "no render-swf guest_error in the policy error metric"
    );
    ensure!(
        running.decisions("rebuild") == 4,
        "rebuilds: {}",
        running.decisions("rebuild")
    );

    // Another pass (a label edit wakes it): still not rebuildable, but no second Event.
    merge_patch(
        &client,
        &namespace,
        "corrupt-0",
        r#"{"metadata":{"labels":{"touched":"yes"}}}"#,
    )
    .await?;
    running.wait_for_decisions("not-rebuildable", 2).await?;
    let events = events_about(&client, &namespace, "corrupt-0").await?;
    let said = events.iter().filter(|(r, _)| r == "NotRebuildable").count();
    ensure!(said == 1, "{said} NotRebuildable Events: {events:?}");
    running.stop().await;
    Ok(())
}
