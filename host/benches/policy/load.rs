//! Loading the policy: Cranelift compile beside a load from the compiled-artifact cache.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use pipewarden::engine::{Policy, PolicyOptions};

use super::common::{ms, print_table, ratio};

/// Cranelift compile of the component beside loading it from the compiled-artifact cache.
pub fn load_times(wasm: &std::path::Path) -> anyhow::Result<()> {
    let cache = std::env::temp_dir().join(format!("pipewarden-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let options = PolicyOptions {
        cache_dir: Some(cache.clone()),
        ..PolicyOptions::default()
    };
    let mut compile = Vec::new();
    let mut cached = Vec::new();
    let mut compile_wall = Vec::new();
    let mut cached_wall = Vec::new();
    for _ in 0..5 {
        let _ = std::fs::remove_dir_all(&cache);
        let started = Instant::now();
        let policy = Policy::load(wasm, options.clone()).context("compile")?;
        compile_wall.push(started.elapsed());
        compile.push(policy.load_report().code_time);
        for _ in 0..4 {
            let started = Instant::now();
            let policy = Policy::load(wasm, options.clone()).context("cached load")?;
            cached_wall.push(started.elapsed());
            anyhow::ensure!(
                policy.load_report().source == pipewarden::engine::CodeSource::Cached,
                "the cache was not used"
            );
            cached.push(policy.load_report().code_time);
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (compile, cached) = (median(compile), median(cached));
    let (compile_wall, cached_wall) = (median(compile_wall), median(cached_wall));
    print_table(
        &["load", "machine code", "whole load", "goal"],
        &[
            vec![
                "Cranelift compile".into(),
                ms(compile),
                ms(compile_wall),
                "-".into(),
            ],
            vec![
                "cached (deserialize)".into(),
                ms(cached),
                ms(cached_wall),
                "<= 5 ms".into(),
            ],
            vec![
                "compile / cached".into(),
                ratio(compile, cached),
                ratio(compile_wall, cached_wall),
                "-".into(),
            ],
        ],
    );
    println!();
    Ok(())
}
