//! Records what the monitoring dashboard reads from a real controller on the local control
//! plane, for the picture in docs/operate/monitoring.md (`tests/picture/run.sh` evaluates the
//! dashboard's queries over the recording with Prometheus' engine and plots them). An install's
//! day, compressed: report-only over stale, reference-only and current SWFs while workflows
//! complete; then enforce; then KFP moves to a release this pipewarden does not serve (2.18.0,
//! single-user). `/metrics` is scraped every second; each scrape is written after a line
//! `# scrape <unix-ms>`, each phase's start as `# phase <unix-ms> <name>`.
//!
//! `cargo run -p pipewarden-tests --bin fleet_scrape -- OUT` (`PIPEWARDEN_PICTURE_PHASE_SECONDS`,
//! default 40, sets each phase's length).

use std::io::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use pipewarden_tests::deploy_support::http_get;
use pipewarden_tests::exit_support::{Receiver, set_phase, submit, timestamp, workflows};
use pipewarden_tests::swf_support::{ControllerArgs, Running, seed};

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |t| t.as_millis())
}

struct Recorder {
    out: std::io::BufWriter<std::fs::File>,
    scrapes: usize,
}

impl Recorder {
    fn phase(&mut self, name: &str) -> Result<()> {
        writeln!(self.out, "# phase {} {name}", unix_ms())?;
        eprintln!("fleet_scrape: {name}");
        Ok(())
    }

    async fn scrape(&mut self, running: &Running) -> Result<()> {
        let (status, body) = http_get(running.handle.http_addr, "/metrics").await?;
        anyhow::ensure!(status == 200, "/metrics answered {status}");
        writeln!(self.out, "# scrape {}", unix_ms())?;
        self.out.write_all(body.as_bytes())?;
        self.scrapes += 1;
        Ok(())
    }

    /// Scrapes every second for `seconds`, completing a workflow every `every` scrapes.
    async fn run(
        &mut self,
        running: &Running,
        seconds: u64,
        every: u64,
        complete: &mut impl AsyncFnMut() -> Result<()>,
    ) -> Result<()> {
        for tick in 1..=seconds {
            tokio::time::sleep(Duration::from_secs(1)).await;
            self.scrape(running).await?;
            if tick.is_multiple_of(every) {
                complete().await?;
            }
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let out = std::env::args().nth(1).context("usage: fleet_scrape OUT")?;
    let seconds: u64 = std::env::var("PIPEWARDEN_PICTURE_PHASE_SECONDS")
        .map_or(Ok(40), |s| s.parse())
        .context("PIPEWARDEN_PICTURE_PHASE_SECONDS")?;
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let (team_a, team_b) = (control_plane.ns().await?, control_plane.ns().await?);
    seed(&client, &team_a, "kfp-2.3", "nightly", 30).await?;
    seed(&client, &team_a, "kfp-reference-only", "reference", 5).await?;
    seed(&client, &team_b, "kfp-2.3", "hourly", 15).await?;
    seed(&client, &team_b, "kfp-2.17", "weekly", 10).await?;
    let namespaces = [team_a.clone(), team_b.clone()];
    let api = workflows(&client, &team_a);
    let mut completed = 0;
    let mut complete = async || -> Result<()> {
        completed += 1;
        let name = format!("etl-{completed}");
        let running = set_phase(&api, &submit(&api, &name).await?, "Running", None).await?;
        set_phase(&api, &running, "Succeeded", Some(&timestamp(0))).await?;
        Ok(())
    };
    let receiver = Receiver::start().await?;
    let mut recorder = Recorder {
        out: std::io::BufWriter::new(std::fs::File::create(&out)?),
        scrapes: 0,
    };
    let phases: [(&str, &[(&str, &str)]); 3] = [
        (
            "report-only (rebuild policy disable, exit mode observe)",
            &[("--rebuild-policy", "disable"), ("--exit-mode", "observe")],
        ),
        (
            "enforce (rebuild policy always, exit mode notify)",
            &[("--exit-webhook-url", &receiver.url)],
        ),
        (
            "KFP 2.18.0 (single-user): a release not served",
            &[
                ("--exit-webhook-url", &receiver.url),
                ("--target-version", "2.18.0"),
            ],
        ),
    ];
    for (name, flags) in phases {
        let args = flags
            .iter()
            .fold(ControllerArgs::new(&namespaces), |args, (flag, value)| {
                args.set(flag, value)
            });
        let running = args.start(control_plane).await?;
        recorder.phase(name)?;
        recorder.run(&running, seconds, 4, &mut complete).await?;
        running.stop().await;
    }
    recorder.out.flush()?;
    eprintln!(
        "fleet_scrape: {} scrapes, {} completions, {} notifications received, in {out}",
        recorder.scrapes,
        completed,
        receiver.requests()
    );
    Ok(())
}
