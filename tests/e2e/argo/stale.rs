//! Seed 001, live: Argo's controller and pipewarden both behind the stale-copy proxy, which
//! replays to each of their workflow watches, 10 s after a completion, the workflow's last Running
//! copy with its old resourceVersion. Argo v4.0.7 rejects each (its log says so), pipewarden
//! rejects each, and every real completion is notified exactly once. (Under the same replay,
//! Argo v3.6.7 runs the exit handler for most workflows that succeeded: `make bench-stale`.)

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Result, ensure};
use pipewarden_tests::argo::{Consumer, Replay};
use pipewarden_tests::{log, shared};

use crate::exit_support::{Controller, Receiver, wait_for_sent};
use crate::support::*;

const SUCCEED: usize = 14;
const FAIL: usize = 6;
/// After each completion, its stale copy follows this much later: as in seed 001's story, the
/// workflow's pods are gone by then (Argo deletes them 5 s after they complete) and its last node
/// is past Argo's 10 s grace for a recently started pod, so a controller that takes the copy for
/// current marks the node "pod deleted" and runs the exit handler; pipewarden's claim and mark
/// are written by then too, so nothing newer replaces the stale copy in Argo's cache.
const DELAY: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argo_v4_stale_copies_replayed_live_no_false_notification_no_lost_completion() -> Result<()>
{
    let stack = pipewarden_tests::argo::shared_stack().await?;
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let api = workflows(&client, &namespace);
    stack.proxy.replay(&namespace, Replay::after(DELAY));
    let exit_pods = ExitPods::watch(&client, &namespace).await?;
    let receiver = Receiver::start().await?;
    let through_proxy = kube::Client::try_from(stack.proxy.client_config()?)?;
    let controller =
        Controller::start_with_client(through_proxy, &namespace, &[receiver.flag()]).await?;

    let mut plan = Vec::new();
    for i in 0..SUCCEED {
        plan.push((format!("ok-{i}"), Outcome::Succeed));
    }
    for i in 0..FAIL {
        plan.push((format!("failing-{i}"), Outcome::Fail));
    }
    for (name, outcome) in &plan {
        create(
            &api,
            &workflow(name, "seed-001", seed_001_spec(true, *outcome))?,
        )
        .await?;
    }
    let names: Vec<String> = plan.iter().map(|(n, _)| n.clone()).collect();
    let done = wait_complete(&api, &names).await?;
    let mut expected = BTreeMap::new();
    for (name, outcome) in &plan {
        ensure!(
            phase(&done[name]) == outcome.phase(),
            "{name}: {}",
            phase(&done[name])
        );
        let key = completion_key(&done[name])?;
        wait_for_sent(&api, name, &key).await?;
        expected.insert(key, name.clone());
    }

    // Every completion's stale copy reached both watches, older than the completion and Running.
    let completions = plan.len();
    pipewarden_tests::wait::until(
        "a stale copy per completion in Argo's and pipewarden's watch streams",
        WAIT,
        || async {
            let argo = stack.proxy.injected(&namespace, Consumer::Argo).len();
            let ours = stack.proxy.injected(&namespace, Consumer::Pipewarden).len();
            Ok((argo >= completions && ours >= completions).then_some(()))
        },
    )
    .await?;
    for consumer in [Consumer::Argo, Consumer::Pipewarden] {
        let injected = stack.proxy.injected(&namespace, consumer);
        let workflows: BTreeSet<&str> = injected.iter().map(|i| i.name.as_str()).collect();
        ensure!(
            injected.len() == completions && workflows.len() == completions,
            "{consumer}: {} stale copies for {} workflows",
            injected.len(),
            workflows.len()
        );
        for injection in &injected {
            ensure!(
                injection.stale_phase == "Running"
                    && injection.stale_resource_version < injection.completed_resource_version,
                "{injection:?}"
            );
        }
    }
    log(format_args!(
        "argo: {completions} stale copies each into Argo's and pipewarden's watches"
    ));

    // Argo rejected each one (#16357), pipewarden too; waited for, not slept on.
    pipewarden_tests::wait::until("Argo to reject every stale copy", WAIT, || async {
        let rejected = stack.controller().stale_copies_rejected();
        let all = names
            .iter()
            .all(|name| rejected.contains_key(&format!("{namespace}/{name}")));
        Ok(all.then_some(()))
    })
    .await?;
    pipewarden_tests::wait::until("pipewarden to reject every stale copy", WAIT, || async {
        Ok((controller.decisions("reject-stale") >= completions as u64).then_some(()))
    })
    .await?;

    // 0 false notifications, 0 lost: one delivery per real completion.
    let per_key = receiver.per_key();
    ensure!(
        per_key.keys().cloned().collect::<BTreeSet<_>>()
            == expected.keys().cloned().collect::<BTreeSet<_>>()
            && per_key.values().all(|n| *n == 1),
        "deliveries {per_key:?}"
    );
    ensure!(
        receiver.requests() == completions,
        "{} webhook requests",
        receiver.requests()
    );
    // And Argo ran no exit handler for a workflow that succeeded.
    for (name, outcome) in &plan {
        let pods = exit_pods.of(name);
        let expected = usize::from(*outcome != Outcome::Succeed);
        ensure!(
            pods == expected,
            "{name} ({outcome:?}): {pods} exit-handler pods"
        );
    }
    stack.controller().ensure_running()?;
    controller.stop().await;
    Ok(())
}
