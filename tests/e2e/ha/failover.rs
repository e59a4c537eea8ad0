//! Two replicas on one Lease: only the holder writes; the leader killed, the standby takes over
//! once the lease runs out and rebuilds and notifies what happened meanwhile, once; a graceful
//! shutdown hands the lease over at once. Takeover times are printed, not asserted.

// Only its receiver and workflow helpers are used here.
#[allow(unused_imports)]
use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Result, ensure};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

const LEASE_SECONDS: u32 = 3;

fn stamped(swf: &DynamicObject) -> bool {
    pipewarden_tests::swf_support::stamped_version(swf) == Some(TARGET)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_writes_and_a_lost_leader_costs_no_rebuild_and_no_duplicate() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let namespaces = [namespace.clone()];
    let receiver = pipewarden_tests::exit_support::Receiver::start().await?;
    let api = pipewarden_tests::exit_support::workflows(&client, &namespace);
    let replica = |identity: &str| {
        let mut flags = base_flags(&namespace);
        flags.extend(leader_flags(
            &namespace,
            "pipewarden",
            identity,
            LEASE_SECONDS,
        ));
        flags.push(receiver.flag());
        flags
    };
    let writers = WriterWatch::start();

    let a = start_replica(client.clone(), &replica("a")).await?;
    writers.add("a", &a);
    wait_for("a to lead", || leads(&a)).await?;
    let b = start_replica(client.clone(), &replica("b")).await?;
    writers.add("b", &b);
    ensure!(leads(&a) && !leads(&b), "one leader: a");
    ensure!(b.metrics().info.leader.get() == 0);

    // While a leads: an SWF rebuilt and a completion notified, by a alone.
    pipewarden_tests::swf_support::seed(&client, &namespace, "kfp-2.3", "before", 1).await?;
    pipewarden_tests::swf_support::wait_for_all(&client, &namespaces, "before-0 stamped", stamped)
        .await?;
    let first = pipewarden_tests::exit_support::submit(&api, "first").await?;
    let first = pipewarden_tests::exit_support::set_phase(&api, &first, "Running", None).await?;
    let finished = pipewarden_tests::exit_support::timestamp(0);
    let first =
        pipewarden_tests::exit_support::set_phase(&api, &first, "Succeeded", Some(&finished))
            .await?;
    let first_key = pipewarden_tests::exit_support::completion_key(&first)?;
    pipewarden_tests::exit_support::wait_for_sent(&api, "first", &first_key).await?;
    ensure!(count(&a, Counted::SwfWrites, "ok") == 1 && swf_writes(&b) == 0);
    ensure!(count(&b, Counted::ExitNotifications, "sent") == 0);
    let second = pipewarden_tests::exit_support::submit(&api, "second").await?;
    let second = pipewarden_tests::exit_support::set_phase(&api, &second, "Running", None).await?;

    // a is killed holding the lease; meanwhile an SWF arrives and a workflow completes.
    let killed = Instant::now();
    a.stop().await;
    pipewarden_tests::swf_support::seed(&client, &namespace, "kfp-2.3", "during", 1).await?;
    let finished = pipewarden_tests::exit_support::timestamp(0);
    let second =
        pipewarden_tests::exit_support::set_phase(&api, &second, "Succeeded", Some(&finished))
            .await?;
    let second_key = pipewarden_tests::exit_support::completion_key(&second)?;
    wait_for("b to take over", || leads(&b)).await?;
    println!(
        "abrupt stop: b took over after {:?} (lease {LEASE_SECONDS}s)",
        killed.elapsed()
    );
    pipewarden_tests::swf_support::wait_for_all(&client, &namespaces, "during-0 stamped", stamped)
        .await?;
    pipewarden_tests::exit_support::wait_for_sent(&api, "second", &second_key).await?;
    // The mark is visible before b's counters move: wait for them, then check they stop at one.
    wait_for(
        "b to count second sent, during-0 written and first already notified",
        || {
            count(&b, Counted::ExitNotifications, "sent") >= 1
                && count(&b, Counted::SwfWrites, "ok") >= 1
                && count(&b, Counted::ExitNotifications, "already-notified") >= 1
        },
    )
    .await?;
    ensure!(
        count(&b, Counted::SwfWrites, "ok") == 1,
        "b wrote during-0 only"
    );
    ensure!(count(&b, Counted::ExitNotifications, "sent") == 1);

    // Graceful: b shuts down; c, already running, takes over without waiting for expiry.
    let c = start_replica(client.clone(), &replica("c")).await?;
    writers.add("c", &c);
    ensure!(!leads(&c));
    let released = Instant::now();
    b.shutdown().await;
    wait_for("c to take over", || leads(&c)).await?;
    println!(
        "graceful shutdown: c took over after {:?} (lease {LEASE_SECONDS}s)",
        released.elapsed()
    );
    wait_for("c to catch up", || {
        count(&c, Counted::ExitNotifications, "already-notified") >= 2
    })
    .await?;
    pipewarden_tests::swf_support::seed(&client, &namespace, "kfp-2.3", "after", 1).await?;
    let all = pipewarden_tests::swf_support::wait_for_all(
        &client,
        &namespaces,
        "after-0 stamped",
        stamped,
    )
    .await?;
    ensure!(all.len() == 3);
    wait_for("c to count its write", || {
        count(&c, Counted::SwfWrites, "ok") >= 1
    })
    .await?;
    ensure!(
        count(&c, Counted::SwfWrites, "ok") == 1,
        "c wrote after-0 only"
    );

    let keys = BTreeMap::from([(first_key, 1), (second_key, 1)]);
    ensure!(receiver.per_key() == keys, "{:?}", receiver.per_key());
    ensure!(
        receiver.requests() == 2,
        "{} webhook requests",
        receiver.requests()
    );
    let events = pipewarden_tests::exit_support::notification_events(&client, &namespace).await?;
    let uids = BTreeMap::from([(first.uid().unwrap(), 1), (second.uid().unwrap(), 1)]);
    ensure!(events == uids, "{events:?}");
    ensure!(
        writers.overlaps().is_empty(),
        "two writers: {:?}",
        writers.overlaps()
    );
    c.stop().await;
    Ok(())
}
