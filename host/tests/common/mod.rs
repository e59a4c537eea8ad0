//! Plumbing shared by the host's tests and benches: built policies, fixtures, timing.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// A policy component built by `make policies`; fails loudly, naming the command, if missing.
pub fn built_policy(crate_name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"));
    let path = target
        .join("wasm32-wasip2/policy")
        .join(format!("{}.wasm", crate_name.replace('-', "_")));
    if !path.exists() {
        panic!(
            "missing {}: build the policies first with `make policies`",
            path.display()
        );
    }
    path
}

/// Default engine options with a compiled-policy cache shared by the test run, so each
/// policy is compiled once rather than on every load (slow in debug builds).
pub fn cached_options() -> pipewarden::engine::PolicyOptions {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"));
    pipewarden::engine::PolicyOptions {
        cache_dir: Some(target.join("policy-test-cache")),
        ..Default::default()
    }
}

/// `pipewarden SUBCOMMAND` with the default policy, loaded through the test run's shared
/// compiled-policy cache.
pub fn default_policy_command(subcommand: &str) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_pipewarden"));
    command
        .arg(subcommand)
        .arg("--policy")
        .arg(built_policy("kfp-default"))
        .arg("--cache-dir")
        .arg(cached_options().cache_dir.unwrap());
    command
}

/// An SWF fixture as compact JSON text.
pub fn swf_fixture(name: &str) -> String {
    let text =
        std::fs::read_to_string(repo_path(&format!("tests/data/swf/{name}"))).expect("fixture");
    let value: serde_json::Value = serde_yaml::from_str(&text).expect("fixture yaml");
    value.to_string()
}

pub fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_path(relative)).expect("repo file")
}

#[derive(Clone, Copy)]
pub struct Percentiles {
    pub p50: Duration,
    pub p99: Duration,
}

/// Runs `f` `warmup` times, then times `samples` runs one by one.
pub fn measure(warmup: usize, samples: usize, mut f: impl FnMut()) -> Percentiles {
    for _ in 0..warmup {
        f();
    }
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort();
    Percentiles {
        p50: times[times.len() / 2],
        p99: times[(times.len() * 99 / 100).min(times.len() - 1)],
    }
}

pub fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

pub fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.1}x", a.as_secs_f64() / b.as_secs_f64().max(1e-12))
}

/// Prints rows as an aligned table.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    println!("{}", line(headers.to_vec()));
    for row in rows {
        println!("{}", line(row.iter().map(String::as_str).collect()));
    }
}
