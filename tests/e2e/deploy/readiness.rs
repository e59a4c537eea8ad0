//! `/readyz` as a kubelet probe sees it through an API server outage: 200 while the loops'
//! watches work, 503 naming each failing watch (its error and the server's URL go to the log,
//! not to the port) once they have failed for longer than the grace, and 200 again once they listed again. `/healthz` stays 200
//! throughout: the process is alive, only not to be trusted. The apiserver is killed and started
//! again on the same port and etcd, as in a control plane restart. `pipewarden_watch_failing`,
//! which the alerts watch, follows the same state: 0, 1 through the outage, 0 after the relist.

use anyhow::{Result, ensure};
use pipewarden_tests::ControlPlane;
use pipewarden_tests::deploy_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_names_the_failing_watches_past_the_grace_and_recovers_after_a_relist() -> Result<()>
{
    // A control plane of its own: this test takes its apiserver down.
    let mut control_plane = ControlPlane::start().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let url = control_plane.config().cluster_url.to_string();
    let mut flags = base_flags(&namespace);
    flags.push("--watch-grace=2s".into());
    let mut args = run_args(&flags)?;
    // What `pipewarden run` takes from the kubeconfig.
    args.api_server_url = Some(url.clone());
    init_logs();
    let replica = pipewarden::controller::start(args, client).await?;
    let addr = replica.http_addr;
    wait_for("the controller to be ready", || {
        replica.ctx.readiness.waiting().is_empty()
    })
    .await?;
    ensure!(http_get(addr, "/readyz").await? == (200, "ready".to_owned()));
    let watches = [format!("swf/{namespace}"), format!("exit/{namespace}")];
    let last_success = |watch: &str| {
        format!("pipewarden_watch_last_success_timestamp_seconds{{watch=\"{watch}\"}}")
    };
    let failing = |watch: &str| format!("pipewarden_watch_failing{{watch=\"{watch}\"}}");
    let listed_before = scrape(addr, &last_success(&watches[0])).await?;
    ensure!(listed_before > 0.0, "no list recorded for {}", watches[0]);
    let metrics = http_get(addr, "/metrics").await?.1;
    for watch in &watches {
        // Exported at 0 while healthy, so an alert on it has a series to read.
        ensure!(
            metrics.contains(&format!("{} 0", failing(watch))),
            "{metrics}"
        );
    }

    control_plane.stop_apiserver().await?;
    let unready = pipewarden_tests::wait::until("/readyz to fail", WAIT, || async {
        let (status, body) = http_get(addr, "/readyz").await?;
        let named = watches
            .iter()
            .all(|w| body.contains(&format!("{w}: watch failing")));
        Ok((status == 503 && named).then_some(body))
    })
    .await?;
    println!("/readyz during the outage (503):\n{unready}");
    for watch in &watches {
        ensure!(
            scrape(addr, &failing(watch)).await? == 1.0,
            "{watch}: not failing"
        );
    }
    ensure!(unready.contains("(grace 2s)"), "{unready}");
    // The error, with the server's URL, is the log's, not anyone's who can reach the port.
    ensure!(!unready.contains(&url), "{unready}");
    ensure!(
        http_get(addr, "/healthz").await? == (200, "ok".to_owned()),
        "liveness must not follow the API server"
    );

    control_plane.restart_apiserver().await?;
    pipewarden_tests::wait::until("/readyz to pass again", WAIT, || async {
        Ok((http_get(addr, "/readyz").await?.0 == 200).then_some(()))
    })
    .await?;
    for watch in &watches {
        let listed_after = scrape(addr, &last_success(watch)).await?;
        ensure!(
            listed_after > listed_before,
            "{watch}: no list since the outage"
        );
        let series = format!("pipewarden_watch_errors_total{{watch=\"{watch}\"}}");
        ensure!(
            scrape(addr, &series).await? > 0.0,
            "{watch}: no error counted"
        );
        ensure!(
            scrape(addr, &failing(watch)).await? == 0.0,
            "{watch}: still failing"
        );
    }
    replica.stop().await;
    Ok(())
}
