//! Observe mode on every path a completion can take: the new leader's catch-up listing, the
//! watch, the sweep of claims a controller in notify mode left pending (a rollback), and a
//! DELETE's final object. Each completion is reported once (an ExitNotificationObserved Event,
//! the `observed` outcome); the controller writes no workflow and POSTs nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Result, ensure};
use http::Method;
use kube::ResourceExt as _;
use kube::api::{Patch, PatchParams};
use kube::client::ClientBuilder;
use pipewarden::engine::EventKind::Deleted;
use pipewarden::exit::claim::{Claim, Claimant, MarkKey};
use pipewarden::exit::decision::ExitDecision;
use pipewarden::exit::notification::Mark;
use pipewarden_tests::exit_support::*;
use pipewarden_tests::intercept::{Intercept, Verdict};
use pipewarden_tests::shared;
use serde_json::json;

/// A claim by a controller in notify mode, written `ago` seconds ago for `ttl` seconds.
fn notifying_claim(key: &str, ago: i64, ttl: u64) -> Claim {
    let enforcer = Claimant {
        holder: "pipewarden-notify-0".into(),
        epoch: 1,
    };
    let at =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(ago);
    Claim::new(
        &enforcer,
        at,
        Duration::from_secs(ttl),
        key,
        &MarkKey::none(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_mode_reports_each_completion_once_on_every_path_and_writes_and_sends_nothing()
-> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    let receiver = Receiver::start().await?;

    // Before the controller starts: a completion a minute old (the catch-up listing), and two
    // a notifying controller claimed before the rollback, one claim expired, one holding.
    let mut expected = BTreeMap::new();
    let before = submit(&api, "before").await?;
    let before = set_phase(&api, &before, "Failed", Some(&timestamp(60))).await?;
    expected.insert(before.uid().unwrap_or_default(), 1);
    for (name, ago, ttl) in [("left-expired", 200, 70), ("left-holding", 5, 600)] {
        let running = set_phase(&api, &submit(&api, name).await?, "Running", None).await?;
        let done = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
        let key = completion_key(&done)?;
        let claim = notifying_claim(&key, ago, ttl);
        let pending =
            Mark::Pending(key).patch(&done.resource_version().unwrap_or_default(), Some(&claim));
        api.patch(name, &PatchParams::default(), &Patch::Merge(&pending))
            .await?;
        expected.insert(done.uid().unwrap_or_default(), 1);
    }

    // Every workflow write the controller makes is counted (none should be).
    let writes = Arc::new(AtomicUsize::new(0));
    let counted = writes.clone();
    let layer = Intercept::new(move |request: &http::Request<_>| {
        if request.uri().path().contains("/workflows") && request.method() != Method::GET {
            counted.fetch_add(1, Ordering::SeqCst);
        }
        Verdict::Pass
    });
    let observing = ClientBuilder::try_from(control_plane.config().clone())?
        .with_layer(&layer)
        .build();
    let flags = [
        receiver.flag(),
        "--exit-mode=observe".into(),
        "--exit-sweep-interval=1s".into(),
        "--leader-elect".into(),
        format!("--lease-namespace={namespace}"),
        "--lease-duration-seconds=3".into(),
        "--identity=observer".into(),
    ];
    let controller = Controller::start_with_client(observing, &namespace, &flags).await?;

    // After it started: a completion on the watch, and a DELETE's final object of one the
    // controller never saw complete.
    let running = set_phase(&api, &submit(&api, "after").await?, "Running", None).await?;
    let after = set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
    expected.insert(after.uid().unwrap_or_default(), 1);
    let mut gone = as_json(&after);
    gone["metadata"]["name"] = json!("deleted");
    gone["metadata"]["uid"] = json!("00000000-0000-4000-8000-00000000de1e");
    gone["status"]["phase"] = json!("Error");
    let handled = controller.inject(Deleted, &gone).await?;
    ensure!(handled.decision == ExitDecision::Process, "{handled:?}");
    expected.insert("00000000-0000-4000-8000-00000000de1e".into(), 1);

    controller
        .wait_for_notifications("observed", expected.len() as u64)
        .await?;
    // Several sweeps more: nothing reported twice, nothing written.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let observed = events_with_reason(&client, &namespace, "ExitNotificationObserved").await?;
    pipewarden_tests::log(format_args!(
        "observe mode: {} completions reported, {} workflow writes, {} POSTs",
        observed.len(),
        writes.load(Ordering::SeqCst),
        receiver.requests()
    ));
    ensure!(
        observed == expected,
        "reported {observed:?}, expected {expected:?}"
    );
    ensure!(
        controller.notifications("observed") == expected.len() as u64,
        "observed outcomes: {}",
        controller.notifications("observed")
    );
    ensure!(writes.load(Ordering::SeqCst) == 0, "workflow writes");
    ensure!(receiver.requests() == 0, "POSTs: {}", receiver.requests());
    for name in ["left-expired", "left-holding"] {
        let left = mark(&api, name).await?.unwrap_or_default();
        ensure!(left.starts_with("pending/"), "{name}: {left}");
    }
    controller.stop().await;
    Ok(())
}
