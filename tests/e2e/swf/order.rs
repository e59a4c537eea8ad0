//! Never-decided first. A first pass over 80 stale SWFs that outlasts the resync (1 s, one
//! decision at a time, every API answer 20 ms late), with 20 more SWFs created halfway: every one
//! of the 100 is decided once before any is decided a second time, the resyncs that fell due
//! meanwhile were put off (and counted), and once all are decided the resyncs run again.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;

const STALE: usize = 80;
const LATE: usize = 20;
/// Decisions made before the late SWFs are created.
const LATE_AFTER: usize = 40;
const RESYNC: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_secs(180);

#[tokio::test]
async fn a_pass_that_outlasts_the_resync_decides_every_swf_once_before_any_twice() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed(&client, &namespace, "kfp-2.3", "stale", STALE).await?;

    let started = Instant::now();
    let (running, mut decisions) = ControllerArgs::new(std::slice::from_ref(&namespace))
        .set("--swf-resync", "1s")
        .set("--concurrency", "1")
        .start_reporting_decisions(control_plane, Duration::from_millis(20))
        .await?;

    let mut order: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let mut pass = None;
    // Until every SWF was decided once and then a few resyncs ran.
    while pass.is_none() || order.len() < STALE + LATE + 5 {
        let key = tokio::time::timeout(WAIT, decisions.recv())
            .await
            .with_context(|| {
                format!(
                    "{} decisions of {} SWFs in {WAIT:?}",
                    order.len(),
                    seen.len()
                )
            })?
            .context("the controller stopped")?;
        seen.insert(key.clone());
        order.push(key);
        if order.len() == LATE_AFTER {
            seed(&client, &namespace, "kfp-2.3", "late", LATE).await?;
        }
        if pass.is_none() && seen.len() == STALE + LATE {
            pass = Some((started.elapsed(), order.len()));
        }
    }
    let (pass, first_decisions) = pass.expect("set above");
    let deferred = running.handle.metrics().scale.swf_resyncs_deferred.get();
    running.stop().await;

    let repeats_in_pass = first_decisions - STALE - LATE;
    println!(
        "first pass over {} SWFs: {pass:.1?} (resync {RESYNC:?}), {repeats_in_pass} repeats \
         within it, {deferred} resyncs deferred, {} decisions in all",
        STALE + LATE,
        order.len()
    );
    ensure!(
        pass > 2 * RESYNC,
        "the pass took {pass:?}: too short to show the order against a {RESYNC:?} resync"
    );
    ensure!(
        repeats_in_pass == 0,
        "{repeats_in_pass} decisions repeated an SWF before all were decided once; the first \
         {first_decisions} decisions began {:?}",
        &order[..first_decisions.min(10)]
    );
    ensure!(deferred > 0, "no resync fell due during the pass");
    Ok(())
}
