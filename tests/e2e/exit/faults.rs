//! No completion lost on transient faults: a 500 at each step of the action path (the
//! confirming read, the claim, the Event, the delivery, the sent mark) costs an attempt, not
//! the notification; a receiver failing throughout gets the configured attempts and no more,
//! however often the workflow changes, then the completion is given up with an Event; claims
//! left pending are swept without a restart; a workflow deleted right after completing is
//! notified from its DELETE event.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, ensure};
use futures::{StreamExt as _, TryStreamExt as _, stream};
use kube::ResourceExt as _;
use kube::api::{DeleteParams, Patch, PatchParams};
use pipewarden::exit::notification::Mark;
use pipewarden_tests::exit_support::*;
use pipewarden_tests::shared;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_fault_at_each_step_costs_an_attempt_not_the_notification() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let faults = Faults::default()
        .fail_first(Step::Read, 2)
        .fail_first(Step::Claim, 2)
        .fail_first(Step::Event, 2)
        .fail_first(Step::Mark, 2);
    // And the receiver: two 500s.
    let receiver = Receiver::with(|_, n| Answer::Status(if n < 2 { 500 } else { 200 })).await?;
    let flags = [
        receiver.flag(),
        "--exit-attempts=8".into(),
        "--exit-retry-delay=1s".into(),
        "--exit-retry-max-delay=2s".into(),
    ];
    let controller =
        Controller::start_with_client(faults.client(control_plane)?, &namespace, &flags).await?;
    let api = workflows(&client, &namespace);
    let names: Vec<String> = (0..6).map(|i| format!("faulty-{i}")).collect();
    let mut keys = BTreeMap::new();
    for name in &names {
        let running = set_phase(&api, &submit(&api, name).await?, "Running", None).await?;
        let done = set_phase(&api, &running, "Failed", Some(&timestamp(0))).await?;
        keys.insert(name.clone(), completion_key(&done)?);
    }
    for (name, key) in &keys {
        wait_for_sent(&api, name, key).await?;
    }
    // Every completion delivered exactly once, each with its own Event, though every step
    // failed at least once on the way.
    let expected: BTreeMap<String, usize> = keys.values().map(|k| (k.clone(), 1)).collect();
    ensure!(
        receiver.per_key() == expected,
        "deliveries {:?}",
        receiver.per_key()
    );
    let events = notification_events(&client, &namespace).await?;
    ensure!(
        events.len() == names.len() && events.values().all(|n| *n == 1),
        "Events {events:?}"
    );
    for step in [Step::Read, Step::Claim, Step::Event, Step::Mark] {
        ensure!(
            faults.failed(step) == 2,
            "{step:?} failed {}",
            faults.failed(step)
        );
    }
    for step in ["read", "claim", "event", "deliver", "mark"] {
        ensure!(
            controller.attempt_failures(step) >= 1,
            "no failed {step} attempt counted"
        );
    }
    // The metric follows the mark the test saw: wait for it, then hold it to exactly that.
    controller
        .wait_for_notifications("sent", names.len() as u64)
        .await?;
    ensure!(controller.notifications("sent") == names.len() as u64);
    ensure!(controller.gave_up() == 0);
    controller.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_receiver_gets_the_configured_attempts_then_the_completion_is_given_up()
-> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let receiver = Receiver::with(|_, _| Answer::Status(500)).await?;
    let flags = [
        receiver.flag(),
        "--exit-attempts=3".into(),
        "--exit-retry-delay=1s".into(),
        "--exit-retry-max-delay=1s".into(),
    ];
    let controller = Controller::start(control_plane, &namespace, &flags).await?;
    let api = workflows(&client, &namespace);
    let running = set_phase(&api, &submit(&api, "churn").await?, "Running", None).await?;
    let done = set_phase(&api, &running, "Failed", Some(&timestamp(0))).await?;
    let key = completion_key(&done)?;

    // A label that changes every 200 ms: every change is a watch event showing the same
    // completion, and none may add a retry.
    let churn = {
        let api = api.clone();
        tokio::spawn(async move {
            for i in 0.. {
                let patch = json!({"metadata": {"labels": {"churn": i.to_string()}}});
                let _ = api
                    .patch("churn", &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let failed = format!("failed/{key}");
    pipewarden_tests::wait::until("the completion given up", WAIT, || async {
        Ok((mark(&api, "churn").await?.as_deref() == Some(failed.as_str())).then_some(()))
    })
    .await?;
    // Past the point where more attempts would have come.
    tokio::time::sleep(Duration::from_secs(4)).await;
    churn.abort();
    ensure!(
        receiver.requests_per_key() == BTreeMap::from([(key.clone(), 3)]),
        "requests {:?}",
        receiver.requests_per_key()
    );
    ensure!(controller.gave_up() == 1);
    ensure!(controller.notifications("gave-up") == 1);
    let given_up = events_with_reason(&client, &namespace, "ExitNotificationFailed").await?;
    ensure!(
        given_up == BTreeMap::from([(done.uid().unwrap_or_default(), 1)]),
        "{given_up:?}"
    );
    ensure!(
        controller.decisions("process") >= 5,
        "the churn was decided on"
    );
    controller.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_claims_are_swept_without_a_restart() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    // The sent mark cannot be written for a while: delivered, but left pending.
    let faults = Faults::default().fail_when(Step::Mark, |_| true);
    let receiver = Receiver::start().await?;
    let flags = [
        receiver.flag(),
        "--exit-attempts=2".into(),
        "--exit-retry-delay=1s".into(),
        "--exit-sweep-interval=2s".into(),
    ];
    let controller =
        Controller::start_with_client(faults.client(control_plane)?, &namespace, &flags).await?;
    let api = workflows(&client, &namespace);
    let running = set_phase(&api, &submit(&api, "swept").await?, "Running", None).await?;
    let done = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
    let key = completion_key(&done)?;
    controller.wait_for_notifications("sent", 1).await?;
    ensure!(mark(&api, "swept").await? == Some(format!("pending/{key}")));

    // A claim another replica left on a workflow that was retried since: reported, not sent.
    let retried = set_phase(&api, &submit(&api, "moved-on").await?, "Running", None).await?;
    let old_key = format!(
        "{}/2026-08-04T01:00:03Z/2026-08-04T01:05:00Z/Failed",
        retried.uid().unwrap_or_default()
    );
    let killed = pipewarden::exit::claim::Claimant {
        holder: "killed-replica".into(),
        epoch: 1,
    };
    let at =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(200);
    // Expired long ago by the clocks; judged by how long the sweep sees it unchanged, it
    // expires 3 s after the first sweep saw it.
    let expired = pipewarden::exit::claim::Claim::new(
        &killed,
        at,
        Duration::from_secs(3),
        &old_key,
        &pipewarden::exit::claim::MarkKey::none(),
    );
    let claim = Mark::Pending(old_key).patch(
        &retried.resource_version().unwrap_or_default(),
        Some(&expired),
    );
    api.patch("moved-on", &PatchParams::default(), &Patch::Merge(&claim))
        .await?;

    faults.heal();
    // No restart: the sweep writes the missing mark and reports the superseded claim.
    wait_for_sent(&api, "swept", &key).await?;
    pipewarden_tests::wait::until("the superseded claim reported", WAIT, || async {
        Ok((controller.notifications("superseded") == 1).then_some(()))
    })
    .await?;
    ensure!(
        receiver.per_key() == BTreeMap::from([(key, 1)]),
        "{:?}",
        receiver.per_key()
    );
    ensure!(receiver.requests() == 1);
    controller.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_deleted_right_after_completing_are_notified_from_their_delete_event()
-> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let receiver = Receiver::start().await?;
    let flags = [receiver.flag(), "--exit-retry-delay=1s".into()];
    let controller = Controller::start(control_plane, &namespace, &flags).await?;
    let api = workflows(&client, &namespace);
    let keys: Vec<String> = stream::iter(0..10)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("short-lived-{i}");
                let running = set_phase(&api, &submit(&api, &name).await?, "Running", None).await?;
                let done = set_phase(&api, &running, "Failed", Some(&timestamp(0))).await?;
                // Deleted at once, as a TTL strategy of 0 s or a cleanup job does.
                api.delete(&name, &DeleteParams::default()).await?;
                completion_key(&done)
            }
        })
        .buffer_unordered(10)
        .try_collect()
        .await?;
    pipewarden_tests::wait::until("every deleted completion notified", WAIT, || async {
        Ok((receiver.per_key().len() == keys.len()).then_some(()))
    })
    .await?;
    let expected: BTreeMap<String, usize> = keys.iter().map(|k| (k.clone(), 1)).collect();
    ensure!(receiver.per_key() == expected, "{:?}", receiver.per_key());
    ensure!(receiver.requests() == keys.len());
    let events = notification_events(&client, &namespace).await?;
    ensure!(events.len() == keys.len(), "Events {events:?}");
    controller.stop().await;
    Ok(())
}
