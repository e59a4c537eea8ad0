//! Policy deadlines on a busy node. A no-op restart over 1,000 SWFs, with both cores kept busy
//! by CPU burners and the default deadlines (10 ms, 100 ms render), makes every decision and
//! raises no `PolicyFailed`. A policy that really fails on one SWF says so in one Event, not in
//! one per attempt.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams, PostParams};
use pipewarden::metrics::{ExportLabel, ReasonLabel};
use pipewarden_tests::shared;
use pipewarden_tests::swf_support::*;

const SWFS: usize = 1000;
/// The first pass and the restart over 1,000 SWFs on a shared 2-core machine.
const LONG_WAIT: Duration = Duration::from_secs(600);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_op_restart_over_1000_swfs_on_two_loaded_cores_raises_no_policy_failure() -> Result<()>
{
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let namespaces = vec![namespace.clone()];
    seed_many(&client, &namespace, SWFS).await?;

    // The first pass brings every SWF up to date, with deadlines no busy machine can miss.
    let args = ControllerArgs::new(&namespaces);
    let first = args.start(control_plane).await?;
    wait_for(&first, "rebuild", SWFS as u64).await?;
    first.stop().await;
    let failed_before = policy_failed_events(&client, &namespace).await?;
    // Without the write-digest stamp the restart renders every SWF again (it would spare
    // them all): the deadlines are what this test is about.
    let unstamp = r#"{"metadata":{"annotations":{"pipewarden.io/write-digest":null}}}"#;
    for swf in list(&client, &namespace).await? {
        merge_patch(&client, &namespace, &swf.name_any(), unstamp).await?;
    }

    // The restart runs with the default deadlines while two burners keep both cores busy.
    let mut burners = Burners::start(2)?;
    let started = Instant::now();
    let restart = args
        .unset("--decision-timeout-ms")
        .unset("--render-timeout-ms")
        .start(control_plane)
        .await?;
    wait_for(&restart, "up-to-date", SWFS as u64).await?;
    let wall = started.elapsed();
    let burned = burners.cpu_seconds()?;
    ensure!(
        burners.all_running()?,
        "a burner stopped before the restart ended"
    );
    drop(burners);

    let retried = |export: &str| {
        restart
            .handle
            .metrics()
            .policy
            .timeouts_retried
            .get_or_create(&ExportLabel {
                export: export.to_owned(),
            })
            .get()
    };
    let failed_after = policy_failed_events(&client, &namespace).await?;
    println!(
        "no-op restart of {SWFS} SWFs under load: {wall:.1?} wall, burners used {burned:.1} \
         CPU-s; decisions: {} up-to-date, {} policy-error, {} render-failed; timeouts retried: \
         should-rebuild {}, render-swf {}; PolicyFailed Events {failed_before} before, \
         {failed_after} after",
        restart.decisions("up-to-date"),
        restart.decisions("policy-error"),
        restart.decisions("render-failed"),
        retried("should-rebuild"),
        retried("render-swf"),
    );
    ensure!(restart.decisions("up-to-date") == SWFS as u64);
    ensure!(restart.handle.metrics().scale.swf_renders_spared.get() == 0);
    ensure!(restart.decisions("policy-error") == 0);
    ensure!(restart.decisions("render-failed") == 0);
    ensure!(restart.writes_total() == 0, "a no-op restart wrote");
    ensure!(
        failed_after == failed_before,
        "PolicyFailed Events were raised"
    );
    ensure!(burned > 0.0, "the burners never ran");
    restart.stop().await;
    Ok(())
}

#[tokio::test]
async fn policy_failure_events_about_one_swf_are_held_back_after_the_first() -> Result<()> {
    let control_plane = shared().await?;
    let client = control_plane.client()?;
    let namespace = control_plane.ns().await?;
    let mut swf = fixture("kfp-2.3")?;
    swf.metadata.name = Some("spins".into());
    swf.metadata.namespace = Some(namespace.clone());
    swf.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("hostile.pipewarden.io/mode".into(), "spin".into());
    swfs(&client, &namespace)
        .create(&PostParams::default(), &swf)
        .await?;
    let settings = std::env::temp_dir().join(format!("hostile-{}.json", std::process::id()));
    std::fs::write(&settings, "{}")?;

    // should-rebuild spins past its deadline on every attempt; a timeout is tried again after
    // min(resync, 15 s), here every second.
    let running = ControllerArgs::new(std::slice::from_ref(&namespace))
        .set(
            "--policy",
            &built_policy("hostile-policy").display().to_string(),
        )
        .set("--settings", &settings.display().to_string())
        .set("--decision-timeout-ms", "10")
        .set("--swf-resync", "1s")
        .start(control_plane)
        .await?;
    running.wait_for_decisions("policy-error", 4).await?;
    let events = policy_failed_events(&client, &namespace).await?;
    let metrics = running.handle.metrics();
    let held_back = metrics
        .swf
        .events_held_back
        .get_or_create(&ReasonLabel {
            reason: "PolicyFailed".into(),
        })
        .get();
    let retried = metrics
        .policy
        .timeouts_retried
        .get_or_create(&ExportLabel {
            export: "should-rebuild".into(),
        })
        .get();
    let failures = running.decisions("policy-error");
    println!(
        "{failures} failed decisions: {events} PolicyFailed Event(s), {held_back} held back, {retried} timeouts retried"
    );
    ensure!(events == 1, "{events} PolicyFailed Events");
    ensure!(held_back >= 3, "{held_back} held back");
    ensure!(
        retried >= failures,
        "each failure was tried twice: {retried} retries"
    );
    running.stop().await;
    let _ = std::fs::remove_file(settings);
    Ok(())
}
async fn wait_for(running: &Running, outcome: &str, count: u64) -> Result<()> {
    let what = format!("{count} `{outcome}` decisions");
    pipewarden_tests::wait::until(&what, LONG_WAIT, || async {
        Ok((running.decisions(outcome) >= count).then_some(()))
    })
    .await
}

/// PolicyFailed Events in `namespace`, each counted as often as it was recorded.
async fn policy_failed_events(client: &kube::Client, namespace: &str) -> Result<u64> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("PolicyFailed"))
        .map(|e| e.series.as_ref().map_or(1, |s| s.count.max(1) as u64))
        .sum())
}

/// Busy loops, one process each, stopped when dropped.
struct Burners(Vec<Child>);

impl Burners {
    fn start(count: usize) -> Result<Self> {
        let children = (0..count)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .context("starting a CPU burner")
            })
            .collect::<Result<_>>()?;
        Ok(Burners(children))
    }

    /// CPU seconds the burners used so far (utime + stime from /proc, in clock ticks).
    fn cpu_seconds(&self) -> Result<f64> {
        Ok(self
            .0
            .iter()
            .map(|child| pipewarden_tests::procfs::cpu_seconds(&child.id().to_string()))
            .sum())
    }

    fn all_running(&mut self) -> Result<bool> {
        for child in &mut self.0 {
            if child.try_wait()?.is_some() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
