//! The store's budget for SWF bodies on the real API server: with none (`--swf-bodies-mib 0`)
//! every SWF is kept as its keys, read once (a GET) when it is decided, and rebuilt exactly as
//! with its body kept; resyncs of SWFs decided at their version read nothing. With the default
//! budget a restart reads nothing, and every body is let go once its SWF is decided.

use anyhow::{Result, ensure};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;

const SWFS: usize = 12;
const TARGET: &str = "2.17.0";

#[tokio::test]
async fn without_a_budget_each_swf_is_read_once_to_be_decided_and_rebuilt_the_same() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    seed_many(&client, &namespace, SWFS).await?;
    let running = ControllerArgs::new(std::slice::from_ref(&namespace))
        .set("--swf-bodies-mib", "0")
        .set("--swf-resync", "2s")
        .start(control_plane)
        .await?;
    running.wait_for_decisions("rebuild", SWFS as u64).await?;
    for i in 0..SWFS {
        let swf = swfs(&client, &namespace).get(&format!("daily-{i}")).await?;
        let images = driver_images(&swf)?;
        ensure!(
            !images.is_empty() && images.iter().all(|image| image.ends_with(TARGET)),
            "daily-{i} not rebuilt for {TARGET}: {images:?}"
        );
    }
    // Two resyncs of each: decided at their version already, so nothing is read.
    running
        .wait_for_decisions("up-to-date", 2 * SWFS as u64)
        .await?;
    let scale = &running.handle.metrics().scale;
    let read = scale.swf_bodies_read.get();
    ensure!(read == SWFS as u64, "{read} SWFs read, expected each once");
    ensure!(
        scale.swf_body_bytes.get() == 0,
        "bodies kept without a budget"
    );
    ensure!(running.writes_total() == SWFS as u64, "each written once");
    running.stop().await;

    // A restart with the default budget decides from the listed bodies, then lets them go.
    let restarted = ControllerArgs::new(std::slice::from_ref(&namespace))
        .start(control_plane)
        .await?;
    restarted
        .wait_for_decisions("up-to-date", SWFS as u64)
        .await?;
    let scale = &restarted.handle.metrics().scale;
    ensure!(
        scale.swf_bodies_read.get() == 0,
        "a listed body was read again"
    );
    let held = scale.swf_body_bytes.get();
    ensure!(
        held == 0,
        "{held} bytes of bodies still kept after every SWF was decided"
    );
    ensure!(restarted.writes_total() == 0, "the restart wrote");
    restarted.stop().await;
    Ok(())
}
