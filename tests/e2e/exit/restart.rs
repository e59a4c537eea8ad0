//! The exit gate across restarts: the tombstone cache is gone, the annotation is not. A
//! completion that happened while no controller ran is notified once; one already sent is not
//! sent again; a claim left pending by a killed replica is re-sent with the same key; a stale
//! copy that meets no tombstone is stopped by the fresh read before any side effect; a standby
//! that saw a completion it could not act on notifies it once it holds the lease.

use std::collections::BTreeMap;

use anyhow::{Result, ensure};
use kube::ResourceExt as _;
use kube::api::{Patch, PatchParams};
use pipewarden::engine::EventKind::Modified;
use pipewarden::exit::decision::ExitDecision;
use pipewarden::exit::notification::Mark;
use pipewarden::exit::outcome::Outcome;
use pipewarden_tests::exit_support::*;
use pipewarden_tests::shared;

const NAME: &str = "nightly-etl";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_while_stopped_is_notified_once_after_restart() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let receiver = Receiver::start().await?;
    let api = workflows(&client, &namespace);

    let first = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;
    let running = set_phase(&api, &submit(&api, NAME).await?, "Running", None).await?;
    let handled = first.inject(Modified, &as_json(&running)).await?;
    ensure!(handled.decision == ExitDecision::Process, "{handled:?}");
    // Killed before the workflow completes: nothing finished, nothing flushed.
    first.stop().await;
    let done = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
    let key = completion_key(&done)?;
    ensure!(receiver.requests() == 0, "no controller ran");

    let second = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;
    wait_for_sent(&api, NAME, &key).await?;
    second.stop().await;

    // A third start finds it marked sent and leaves it alone.
    let third = Controller::start(control_plane, &namespace, &[receiver.flag()]).await?;
    third.wait_for_notifications("already-notified", 1).await?;
    ensure!(receiver.per_key() == BTreeMap::from([(key, 1)]));
    ensure!(receiver.requests() == 1, "{} requests", receiver.requests());
    let events = notification_events(&client, &namespace).await?;
    ensure!(
        events == BTreeMap::from([(done.uid().unwrap_or_default(), 1)]),
        "{events:?}"
    );
    third.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_left_pending_is_resent_with_its_key_after_restart() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    let running = set_phase(&api, &submit(&api, NAME).await?, "Running", None).await?;
    let done = set_phase(&api, &running, "Error", Some(&timestamp(0))).await?;
    let key = completion_key(&done)?;
    // A replica claimed this completion and was killed before it marked it sent; its claim
    // expired since, by the clocks. The restarted controller judges it by how long it has seen
    // it unchanged: it takes it over once it has seen it for its 3 s.
    let expired = expired_claim(&key);
    let claim = Mark::Pending(key.clone())
        .patch(&done.resource_version().unwrap_or_default(), Some(&expired));
    api.patch(NAME, &PatchParams::default(), &Patch::Merge(&claim))
        .await?;

    let receiver = Receiver::start().await?;
    let flags = [receiver.flag(), "--exit-sweep-interval=1s".into()];
    let controller = Controller::start(control_plane, &namespace, &flags).await?;
    wait_for_sent(&api, NAME, &key).await?;
    ensure!(
        receiver.request_keys() == vec![key.clone()],
        "{:?}",
        receiver.request_keys()
    );
    // The metric follows the mark the test saw: wait for it, then hold it to exactly that.
    controller.wait_for_notifications("sent", 1).await?;
    ensure!(controller.notifications("sent") == 1);
    controller.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_failure_past_the_tombstone_is_stopped_by_the_fresh_read() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    let receiver = Receiver::start().await?;
    // Tombstones that expire almost at once: what a restart or an eviction leaves.
    let flags = [receiver.flag(), "--tombstone-ttl=1s".into()];
    let controller = Controller::start(control_plane, &namespace, &flags).await?;
    let running = set_phase(&api, &submit(&api, NAME).await?, "Running", None).await?;
    let done = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
    wait_for_sent(&api, NAME, &completion_key(&done)?).await?;

    // Argo's false failure (argo-workflows #12198), offered until the tombstone no longer rejects it.
    let stale = stale_failure(&running);
    let handled = pipewarden_tests::wait::until("the tombstone to expire", WAIT, || async {
        let handled = controller.inject(Modified, &stale).await?;
        Ok((handled.decision != ExitDecision::RejectStale).then_some(handled))
    })
    .await?;
    ensure!(
        handled.decision == ExitDecision::Process
            && handled.notification == Some(Outcome::Unconfirmed),
        "{handled:?}"
    );
    ensure!(receiver.requests() == 1, "{} requests", receiver.requests());
    controller.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_notifies_what_it_saw_once_it_takes_over() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    let receiver = Receiver::start().await?;
    let replica = |identity: &str| {
        vec![
            receiver.flag(),
            "--leader-elect".into(),
            format!("--lease-namespace={namespace}"),
            "--lease-duration-seconds=3".into(),
            format!("--identity={identity}"),
        ]
    };
    let leader = Controller::start(control_plane, &namespace, &replica("a")).await?;
    pipewarden_tests::wait::until("replica a to lead", WAIT, || async {
        Ok((leader.handle.metrics().info.leader.get() == 1).then_some(()))
    })
    .await?;
    let standby = Controller::start(control_plane, &namespace, &replica("b")).await?;
    let running = set_phase(&api, &submit(&api, NAME).await?, "Running", None).await?;

    // The leader dies holding the lease; the workflow completes before the lease runs out.
    leader.stop().await;
    let done = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
    let key = completion_key(&done)?;
    wait_for_sent(&api, NAME, &key).await?;
    ensure!(
        standby.handle.metrics().info.leader.get() == 1,
        "b took over"
    );
    ensure!(receiver.per_key() == BTreeMap::from([(key, 1)]));
    ensure!(receiver.requests() == 1, "{} requests", receiver.requests());
    standby.stop().await;
    Ok(())
}

/// A claim by a replica that stopped 200 s ago, long expired.
fn expired_claim(key: &str) -> pipewarden::exit::claim::Claim {
    use pipewarden::exit::claim::{Claim, Claimant, MarkKey};
    let killed = Claimant {
        holder: "killed-replica".into(),
        epoch: 1,
    };
    let at =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(200);
    Claim::new(
        &killed,
        at,
        std::time::Duration::from_secs(3),
        key,
        &MarkKey::none(),
    )
}
