//! `pipewarden plan` at scale, beside `run`'s first pass over the same SWFs, on the local
//! control plane: N SWFs of `FLEET=real` (default: every release's own compiler output over 50
//! namespaces, in the mix `swf_support::fleet` states) or `FLEET=uniform` (copies of two KFP 2.3
//! pipelines in one namespace); `plan` on them, `run` rebuilding the stale ones (its first pass,
//! the SWF loop alone, with the Deployment's environment), then `plan` again (none stale).
//! Each is a process of its own, so its peak RSS (`VmHWM`) and its CPU time are its own; the
//! table prints them with the wall time, and the machine, commit and date the figures are from.
//!
//! `make bench-plan` (`SWFS=N`, default 2,000; `FLEET=real|uniform`; `make bench-plan SWFS=50000`
//! for the figures in docs/benchmarks.md), or `PIPEWARDEN_BENCH_SWFS=N PIPEWARDEN_BENCH_FLEET=real
//! cargo bench -p pipewarden-tests --bench plan_scale`. Not part of `make test`.

mod child;

use std::time::Instant;

use anyhow::{Context as _, Result};
use pipewarden_tests::swf_support::side::{FleetKind, Side};

fn main() -> Result<()> {
    if let Ok(role) = std::env::var(child::ROLE) {
        return child::main(&role);
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(parent())
}

async fn parent() -> Result<()> {
    let count: usize = std::env::var("PIPEWARDEN_BENCH_SWFS")
        .map_or(Ok(2000), |n| n.parse())
        .context("PIPEWARDEN_BENCH_SWFS")?;
    let control_plane = pipewarden_tests::shared().await?;
    let client = control_plane.client()?;
    let fleet = FleetKind::from_env()?;
    let side = Side::new(fleet, &control_plane.ns().await?, count)?;
    let started = Instant::now();
    side.seed(&client).await?;
    let mix = side.mix();
    eprintln!("seeded {count} SWFs ({mix}) in {:.1?}", started.elapsed());
    let namespaces = side.namespaces().join(",");
    let dir = std::env::temp_dir().join(format!("pipewarden-bench-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let spec = |role: &'static str, what: &'static str| child::Spec {
        role,
        what,
        kubeconfig: control_plane.kubeconfig(),
        namespaces: &namespaces,
        count,
        stale: side.stale(),
        dir: &dir,
    };
    let mut rows = Vec::new();
    for (role, what) in [
        ("plan", "plan, before"),
        ("run", "run, first pass"),
        ("plan", "plan, after the pass"),
    ] {
        let measured = child::run(&spec(role, what)).await?;
        eprintln!("{what}: {:.1} s", measured.wall_secs);
        rows.push((what, measured));
    }
    let _ = std::fs::remove_dir_all(&dir);
    print(count, fleet, &mix, &rows);
    Ok(())
}

fn print(count: usize, fleet: FleetKind, mix: &str, rows: &[(&str, child::Measured)]) {
    println!("\n{}", machine());
    println!(
        "{count} SWFs, {} fleet ({mix}), target 2.17.0\n",
        fleet.name()
    );
    let mut table = pipewarden::cli::table::Table::new(&[
        "RUN", "WALL", "CPU-S", "PEAK RSS", "DECIDED", "OUTPUT", "SAID",
    ]);
    for (what, m) in rows {
        table.row(vec![
            (*what).to_owned(),
            format!("{:.1} s", m.wall_secs),
            format!("{:.1}", m.cpu_secs),
            format!("{:.0} MiB", m.peak_rss_kib as f64 / 1024.0),
            m.decided.to_string(),
            m.output_bytes
                .map_or("-".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0)),
            m.said.clone(),
        ]);
    }
    print!("{}", table.render());
}

/// The commit, the date and the machine, as the figures are quoted.
fn machine() -> String {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let kib: f64 = m.lines().next()?.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.0} GiB", kib / 1048576.0))
        })
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "commit {commit}{}, {date}, {cores} cores, {memory}, load average {load} at the end",
        if dirty {
            " (with uncommitted changes)"
        } else {
            ""
        }
    )
}
