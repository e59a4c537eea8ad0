//! A leader cut off from the API server (its requests never answered) stops writing at its
//! renew deadline, before the standby may take the lease over; once reconnected it follows.
//! Times are printed, not asserted.

use std::time::Instant;

use anyhow::{Result, ensure};
use pipewarden_tests::deploy_support::*;
use pipewarden_tests::shared;

const LEASE_SECONDS: u32 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_stops_writing_before_the_standby_takes_over() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let replica = |identity: &str| {
        let mut flags = base_flags(&namespace);
        flags.extend(leader_flags(
            &namespace,
            "pipewarden",
            identity,
            LEASE_SECONDS,
        ));
        flags
    };
    let writers = WriterWatch::start();
    let partition = Partition::default();
    let cut_off = partition.client(control_plane.config().clone())?;
    let a = start_replica(cut_off, &replica("a")).await?;
    writers.add("a", &a);
    wait_for("a to lead", || leads(&a)).await?;
    let b = start_replica(client.clone(), &replica("b")).await?;
    writers.add("b", &b);

    let cut = Instant::now();
    partition.cut();
    wait_for("a to stop writing", || !a.ctx.may_write()).await?;
    println!("a stopped writing {:?} after the cut", cut.elapsed());
    wait_for("b to take over", || leads(&b)).await?;
    println!("b took over {:?} after the cut", cut.elapsed());
    let holder = lease_holder(&client, &namespace, "pipewarden").await?;
    ensure!(holder.as_deref() == Some("b"), "holder {holder:?}");

    // The SWF loop follows b: an SWF seeded now is rebuilt by b.
    pipewarden_tests::swf_support::seed(&client, &namespace, "kfp-2.3", "daily", 1).await?;
    pipewarden_tests::swf_support::wait_for_all(
        &client,
        std::slice::from_ref(&namespace),
        "daily-0 stamped",
        |swf| pipewarden_tests::swf_support::stamped_version(swf) == Some(TARGET),
    )
    .await?;
    ensure!(count(&b, Counted::SwfWrites, "ok") == 1);

    // Reconnected, a reads the Lease again and stays a standby.
    partition.heal();
    let seen = partition.lease_requests();
    wait_for("a to read the lease again", || {
        partition.lease_requests() >= seen + 2
    })
    .await?;
    ensure!(!leads(&a) && leads(&b), "a {} b {}", leads(&a), leads(&b));
    ensure!(swf_writes(&a) == 0, "a wrote {} times", swf_writes(&a));
    ensure!(
        writers.overlaps().is_empty(),
        "two writers: {:?}",
        writers.overlaps()
    );
    a.stop().await;
    b.stop().await;
    Ok(())
}
