//! Two replicas splitting one install with `--shard 0/2` and `--shard 1/2`, each electing its
//! leader on its own Lease: every SWF is rebuilt by exactly one of them, exactly once, and every
//! workflow completion is notified exactly once.

use std::collections::BTreeMap;

use anyhow::{Result, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::{ControllerArgs, RequestLog, Running, seed};

const SWFS: usize = 20;
const WORKFLOWS: usize = 10;
const SHARDS: [&str; 2] = ["0/2", "1/2"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_rebuild_each_swf_once_and_notify_each_completion_once() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed(&client, &namespace, "kfp-2.3", "daily", SWFS).await?;
    let receiver = pipewarden_tests::exit_support::Receiver::start().await?;
    let webhook = receiver.flag();
    let (flag, url) = webhook.split_once('=').expect("--flag=value");

    let mut replicas: Vec<Running> = Vec::new();
    for shard in SHARDS {
        let mut args = ControllerArgs::new(std::slice::from_ref(&namespace))
            .set("--shard", shard)
            .set("--lease-namespace", &namespace)
            .set(
                "--identity",
                &format!("replica-{}", shard.replace('/', "-of-")),
            )
            .set(flag, url)
            .parse()?;
        // A flag without a value, which `ControllerArgs` does not pass.
        args.leader.leader_elect = true;
        let requests = RequestLog::default();
        let client = requests.client(control_plane.config().clone(), false)?;
        let handle = pipewarden::controller::start(args, client).await?;
        replicas.push(Running { handle, requests });
    }

    // SWFs: each rebuilt once, by one shard, and the echo of each write seen without a decision.
    let total =
        |replicas: &[Running], f: &dyn Fn(&Running) -> u64| -> u64 { replicas.iter().map(f).sum() };
    pipewarden_tests::wait::until(
        "every SWF rebuilt and its echo seen",
        pipewarden_tests::swf_support::WAIT,
        || async {
            let rebuilt = total(&replicas, &|r| r.decisions("rebuild"));
            let echoes = total(&replicas, &|r| {
                r.handle.metrics().scale.swf_own_writes_seen.get()
            });
            Ok((rebuilt >= SWFS as u64 && echoes >= SWFS as u64).then_some(()))
        },
    )
    .await?;
    let mut writes_per_swf: BTreeMap<String, usize> = BTreeMap::new();
    for replica in &replicas {
        let writes = replica.requests.swf_writes();
        ensure!(!writes.is_empty(), "a shard rebuilt nothing: {writes:?}");
        for (_, path) in writes {
            let name = path.split('?').next().unwrap_or_default();
            let name = name.rsplit('/').next().unwrap_or_default().to_owned();
            *writes_per_swf.entry(name).or_default() += 1;
        }
    }
    ensure!(
        writes_per_swf.len() == SWFS && writes_per_swf.values().all(|n| *n == 1),
        "writes per SWF: {writes_per_swf:?}"
    );
    for replica in &replicas {
        ensure!(
            replica.decisions("up-to-date") == 0,
            "an echo was decided again"
        );
    }

    // Workflows: each completion notified once, whichever shard owns it.
    let api = pipewarden_tests::exit_support::workflows(&client, &namespace);
    let mut keys = Vec::new();
    for i in 0..WORKFLOWS {
        let name = format!("etl-{i}");
        let submitted = pipewarden_tests::exit_support::submit(&api, &name).await?;
        let running =
            pipewarden_tests::exit_support::set_phase(&api, &submitted, "Running", None).await?;
        let finished = pipewarden_tests::exit_support::timestamp(0);
        let done =
            pipewarden_tests::exit_support::set_phase(&api, &running, "Succeeded", Some(&finished))
                .await?;
        keys.push(pipewarden_tests::exit_support::completion_key(&done)?);
    }
    for (i, key) in keys.iter().enumerate() {
        pipewarden_tests::exit_support::wait_for_sent(&api, &format!("etl-{i}"), key).await?;
    }
    let per_key = receiver.per_key();
    ensure!(
        keys.iter().all(|key| per_key.get(key) == Some(&1)) && per_key.len() == WORKFLOWS,
        "notifications per completion: {per_key:?}"
    );

    // Each shard holds a Lease of its own.
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    for shard in SHARDS {
        let (index, count) = shard.split_once('/').expect("INDEX/COUNT");
        let name = format!("pipewarden-shard-{index}-of-{count}");
        let lease = leases.get(&name).await?;
        let holder = lease.spec.and_then(|spec| spec.holder_identity);
        ensure!(
            holder.as_deref() == Some(&format!("replica-{index}-of-{count}")),
            "{name} held by {holder:?}"
        );
    }
    for replica in replicas {
        replica.stop().await;
    }
    Ok(())
}
