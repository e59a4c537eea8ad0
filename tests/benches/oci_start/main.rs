//! Start-up with a policy from an OCI registry beside one from a file: the first pull from a
//! local CNCF distribution registry (cold caches), then warm starts side by side, each loading
//! the policy as `pipewarden run` does (`PolicyArgs::load`) with the compiled-policy cache warm:
//! `--policy FILE` reads the file, `--policy oci://...@sha256:...` reads the OCI cache and
//! checks both digests.
//!
//! `make bench-oci`, or `cargo bench -p pipewarden-tests --bench oci_start`.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use clap::Parser as _;
use pipewarden::config::PolicyArgs;
use pipewarden_tests::registry::Registry;
use pipewarden_tests::repo::built_policy;

const ROUNDS: usize = 30;

#[derive(clap::Parser)]
struct Flags {
    #[command(flatten)]
    policy: PolicyArgs,
}

fn policy_args(policy: &str, cache: &Path) -> Result<PolicyArgs> {
    let argv = [
        "bench",
        "--policy",
        policy,
        "--cache-dir",
        cache.to_str().context("cache")?,
    ];
    Ok(Flags::try_parse_from(argv)?.policy)
}

fn timed(args: &PolicyArgs) -> Result<Duration> {
    let started = Instant::now();
    let policy = args.load()?;
    let elapsed = started.elapsed();
    ensure!(policy.digest().starts_with("sha256:"));
    Ok(elapsed)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() -> Result<()> {
    let registry = Registry::start().await?;
    let wasm = built_policy("kfp-default");
    let bytes = std::fs::read(&wasm)?;
    let target = pipewarden::oci::PolicyRef::parse(&format!("{}:bench", registry.oci("bench")))?;
    let pinned = pipewarden::oci::push(&bytes, &target, None)
        .await?
        .to_string();

    let cache = std::env::temp_dir().join(format!("pipewarden-bench-oci-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let oci = policy_args(&pinned, &cache)?;
    let file = policy_args(wasm.to_str().context("policy path")?, &cache)?;

    // Cold: pull and compile. The file run after it finds the compiled policy (same digest).
    let first = tokio::task::spawn_blocking({
        let oci = oci.clone();
        move || timed(&oci)
    })
    .await??;

    let (file_samples, oci_samples) = tokio::task::spawn_blocking(move || -> Result<_> {
        let (mut file_samples, mut oci_samples) = (Vec::new(), Vec::new());
        // Interleaved, so both see the same machine load.
        for _ in 0..ROUNDS {
            file_samples.push(timed(&file)?);
            oci_samples.push(timed(&oci)?);
        }
        Ok((file_samples, oci_samples))
    })
    .await??;
    drop(registry);
    let (file_median, oci_median) = (median(file_samples), median(oci_samples));
    println!(
        "policy kfp_default.wasm, {} bytes; median of {ROUNDS} interleaved loads",
        bytes.len()
    );
    println!("{:<44} {:>10}", "start", "load");
    println!("{:<44} {:>10}", "first pull (registry, compile)", ms(first));
    println!(
        "{:<44} {:>10}",
        "warm: --policy FILE (baseline)",
        ms(file_median)
    );
    println!(
        "{:<44} {:>10}",
        "warm: --policy oci://...@sha256 (cached)",
        ms(oci_median)
    );
    println!(
        "cached OCI / file: {:.2}x (goal: within 1.10x)",
        oci_median.as_secs_f64() / file_median.as_secs_f64()
    );
    std::fs::remove_dir_all(&cache)?;
    Ok(())
}
