//! The exit gate on a real control plane: Argo's stale-copy sequence as real Workflows, stale copies
//! injected beside the watch, a webhook receiver that refuses at first, and the catch-up window.

use std::collections::BTreeMap;

use anyhow::{Result, ensure};
use kube::ResourceExt as _;
use kube::api::{DeleteParams, Patch, PatchParams};
use pipewarden::controller::exit_gate::Handled;
use pipewarden::engine::EventKind::{Modified, Relisted};
use pipewarden::exit::decision::ExitDecision;
use pipewarden_tests::exit_support::*;
use pipewarden_tests::shared;
use serde_json::json;

const NAME: &str = "nightly-etl";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stale_copy_sequence_notifies_each_real_completion_once() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let receiver = Receiver::start().await?;
    let controller = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;
    let api = workflows(&client, &namespace);

    // U1: submitted, running, progressing, then succeeded: notified once.
    let new = submit(&api, NAME).await?;
    let running = set_phase(&api, &new, "Running", None).await?;
    let progressing = set_phase(&api, &running, "Running", None).await?;
    let done = set_phase(&api, &progressing, "Succeeded", Some(&timestamp(0))).await?;
    let u1_key = completion_key(&done)?;
    wait_for_sent(&api, NAME, &u1_key).await?;

    // Copies a lagging cache delivers after the completion, with their old resourceVersions.
    let stale = [
        (Modified, as_json(&progressing)),
        (Relisted, as_json(&progressing)),
        (Modified, stale_failure(&progressing)),
        (Relisted, as_json(&new)),
    ];
    for (kind, copy) in &stale {
        let handled = controller.inject(*kind, copy).await?;
        let rejected = Handled {
            decision: ExitDecision::RejectStale,
            notification: None,
        };
        ensure!(
            handled == rejected,
            "{kind:?} copy at rv {}: {handled:?}",
            copy["metadata"]["resourceVersion"]
        );
    }

    // A later write to the completed workflow is newer than the tombstone: processed, not re-sent.
    let archived = json!({"metadata": {"labels": {"workflows.argoproj.io/workflow-archiving-status": "Archived"}}});
    api.patch(NAME, &PatchParams::default(), &Patch::Merge(&archived))
        .await?;

    // Deleted, then re-created under the same name: a new uid, processed on its own.
    api.delete(NAME, &DeleteParams::default()).await?;
    let u1 = done.uid().unwrap_or_default();
    let recreated = pipewarden_tests::wait::until("the name to be free", WAIT, || async {
        Ok(submit(&api, NAME).await.ok())
    })
    .await?;
    let u2 = recreated.uid().unwrap_or_default();
    ensure!(u1 != u2, "a re-created workflow has a new uid");
    let u2_running = set_phase(&api, &recreated, "Running", None).await?;
    // The name-keyed logic of Argo 3.5 rejected exactly this.
    let handled = controller.inject(Modified, &as_json(&u2_running)).await?;
    ensure!(
        handled.decision == ExitDecision::Process,
        "re-created workflow: {handled:?}"
    );
    let u2_done = set_phase(&api, &u2_running, "Failed", Some(&timestamp(0))).await?;
    let u2_key = completion_key(&u2_done)?;
    wait_for_sent(&api, NAME, &u2_key).await?;

    // Both marked sent: nothing is in flight, so the counts are final.
    let expected = BTreeMap::from([(u1_key.clone(), 1), (u2_key.clone(), 1)]);
    ensure!(
        receiver.per_key() == expected,
        "deliveries {:?}",
        receiver.per_key()
    );
    ensure!(
        receiver.requests() == 2,
        "{} webhook requests",
        receiver.requests()
    );
    let events = notification_events(&client, &namespace).await?;
    let per_uid = BTreeMap::from([(u1, 1), (u2, 1)]);
    ensure!(events == per_uid, "ExitNotification Events {events:?}");
    let first = &receiver.accepted()[0].body;
    ensure!(
        first["idempotencyKey"] == json!(u1_key)
            && first["phase"] == json!("Succeeded")
            && first["name"] == json!(NAME)
            && first["namespace"] == json!(namespace),
        "payload {first}"
    );
    ensure!(controller.decisions("reject-stale") >= stale.len() as u64);
    controller.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_receiver_gets_the_same_key_until_it_accepts() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    // Three refusals, five attempts: the fourth gets through.
    let receiver = Receiver::refusing_first(3).await?;
    let flags = [
        receiver.flag(),
        "--exit-attempts=5".into(),
        "--exit-retry-delay=1s".into(),
    ];
    let controller = Controller::start(control_plane, &namespace, &flags).await?;
    let api = workflows(&client, &namespace);
    let running = set_phase(&api, &submit(&api, NAME).await?, "Running", None).await?;
    let done = set_phase(&api, &running, "Failed", Some(&timestamp(0))).await?;
    let key = completion_key(&done)?;
    wait_for_sent(&api, NAME, &key).await?;

    ensure!(receiver.per_key() == BTreeMap::from([(key.clone(), 1)]));
    let keys = receiver.request_keys();
    ensure!(
        keys.len() == 4 && keys.iter().all(|k| *k == key),
        "request keys {keys:?}"
    );
    ensure!(controller.attempt_failures("deliver") == 3);
    // The metric follows the mark the test saw: wait for it, then hold it to exactly that.
    controller.wait_for_notifications("sent", 1).await?;
    ensure!(controller.notifications("sent") == 1);
    // A CloudEvent in binary mode.
    let first = &receiver.seen()[0];
    for (header, value) in [
        ("ce-specversion", "1.0"),
        ("ce-id", key.as_str()),
        ("ce-type", "io.pipewarden.workflow.completed.v1"),
        ("ce-source", "/pipewarden/exit-gate"),
        ("ce-subject", &format!("{namespace}/{NAME}")),
        ("content-type", "application/json"),
    ] {
        ensure!(
            first.headers.get(header).map(String::as_str) == Some(value),
            "{header}: {:?}",
            first.headers.get(header)
        );
    }
    ensure!(
        first.headers.get("ce-time")
            == done.data["status"]["finishedAt"]
                .as_str()
                .map(str::to_string)
                .as_ref()
    );
    controller.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_before_the_catch_up_window_are_reported_not_notified() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    // Completed before pipewarden was installed: two hours ago, and a minute ago.
    let old = submit(&api, "old").await?;
    let old = set_phase(&api, &old, "Failed", Some(&timestamp(7200))).await?;
    let recent = submit(&api, "recent").await?;
    let recent = set_phase(&api, &recent, "Failed", Some(&timestamp(60))).await?;

    let receiver = Receiver::start().await?;
    let controller = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;
    let recent_key = completion_key(&recent)?;
    wait_for_sent(&api, "recent", &recent_key).await?;
    controller.wait_for_notifications("skipped-old", 1).await?;

    ensure!(receiver.per_key() == BTreeMap::from([(recent_key, 1)]));
    // Counted, marked and recorded: never silently skipped.
    let old_key = completion_key(&old)?;
    ensure!(
        mark(&api, "old").await?.as_deref() == Some(format!("skipped/{old_key}").as_str()),
        "{:?}",
        mark(&api, "old").await?
    );
    let skipped = events_with_reason(&client, &namespace, "ExitNotificationSkipped").await?;
    ensure!(
        skipped == BTreeMap::from([(old.uid().unwrap_or_default(), 1)]),
        "{skipped:?}"
    );
    // A restart finds it marked and leaves it alone, without reporting it again.
    controller.stop().await;
    let again = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;
    again.wait_for_notifications("already-skipped", 1).await?;
    ensure!(again.notifications("skipped-old") == 0);
    again.stop().await;
    Ok(())
}
