//! Policy engine benchmark: each export through a fresh pooled instance and a reused instance,
//! beside the same logic compiled natively; Cranelift compile beside a cached load.
//!
//! `cargo bench -p pipewarden --bench policy` (after `make policies`).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/exit_support/mod.rs"]
mod exit_support;

use std::time::{Duration, Instant};

use common::*;
use pipewarden::engine::{
    Eligibility, EventKind, Policy, PolicyOptions, RebuildInput, RebuildPolicy, RenderContext,
    Stamps, Tombstone, WorkflowEvent,
};
use pipewarden_guest as guest;

const WARMUP: usize = 200;
const SAMPLES: usize = 3000;

fn main() {
    let wasm = built_policy("kfp-default");
    let settings = read("policies/kfp-default/settings/kfp-2.17.0.json");
    let swf = swf_fixture("kfp-2.3.yaml");
    println!(
        "policy {} ({} KB), SWF input {} KB, {} samples per row\n",
        wasm.display(),
        std::fs::metadata(&wasm)
            .map(|m| m.len() / 1024)
            .unwrap_or(0),
        swf.len() / 1024,
        SAMPLES
    );

    load_times(&wasm);
    let policy = Policy::load(&wasm, PolicyOptions::default()).expect("load policy");
    policy.validate_settings(&settings).expect("settings");

    // A rendered SWF carries both stamps, so on-version-change must parse and hash it.
    let rendered = policy
        .render_swf(&swf, &render_context(&settings))
        .expect("render");
    let stamped: serde_json::Value = serde_json::from_str(&rendered).unwrap();
    let stamps = Stamps {
        version: Some("2.17.0".into()),
        render_hash: stamped["metadata"]["annotations"]["pipewarden.io/render-hash"]
            .as_str()
            .map(str::to_string),
    };
    let rebuild_stamped = RebuildInput {
        policy: RebuildPolicy::OnVersionChange,
        swf: rendered.clone(),
        target_version: Some("2.17.0".into()),
        stamps: stamps.clone(),
        settings: settings.clone(),
    };
    let rebuild_unstamped = RebuildInput {
        policy: RebuildPolicy::OnVersionChange,
        swf: swf.clone(),
        target_version: Some("2.17.0".into()),
        stamps: Stamps {
            version: None,
            render_hash: None,
        },
        settings: settings.clone(),
    };
    let (event, tombstone) = workflow_event();
    let context = render_context(&settings);

    // The same decisions through the natively compiled policy crate.
    let native_settings = kfp_core::Settings::parse(&settings).unwrap();
    let native_stamped = guest::RebuildInput {
        policy: guest::RebuildPolicy::OnVersionChange,
        swf: rendered.clone(),
        target_version: Some("2.17.0".into()),
        stamps: guest::Stamps {
            version: stamps.version.clone(),
            render_hash: stamps.render_hash.clone(),
        },
        settings: settings.clone(),
    };
    let native_unstamped = guest::RebuildInput {
        swf: swf.clone(),
        stamps: guest::Stamps {
            version: None,
            render_hash: None,
        },
        ..native_stamped.clone()
    };
    let (native_event, native_tombstone) = exit_support::to_guest(&event, Some(&tombstone));
    let native_tombstone = native_tombstone.expect("a tombstone");

    let mut reused = policy.instance().expect("instance");
    let mut rows: Vec<Vec<String>> = Vec::new();

    let instantiate = measure(WARMUP, SAMPLES, || drop(policy.instance().unwrap()));
    rows.push(vec![
        "(fresh instance alone, no call)".into(),
        format!("{} / {}", us(instantiate.p50), us(instantiate.p99)),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
    ]);
    row(
        &mut rows,
        "should-rebuild (no stamp)",
        "fresh <= 20 us, reused <= 2 us",
        measure(WARMUP, SAMPLES, || {
            drop(policy.should_rebuild(&rebuild_unstamped).unwrap())
        }),
        measure(WARMUP, SAMPLES, || {
            drop(reused.should_rebuild(&rebuild_unstamped).unwrap())
        }),
        measure(WARMUP, SAMPLES, || {
            drop(kfp_core::should_rebuild(&native_unstamped))
        }),
    );
    row(
        &mut rows,
        "should-rebuild (stamped: parse+hash)",
        "-",
        measure(WARMUP, SAMPLES, || {
            drop(policy.should_rebuild(&rebuild_stamped).unwrap())
        }),
        measure(WARMUP, SAMPLES, || {
            drop(reused.should_rebuild(&rebuild_stamped).unwrap())
        }),
        measure(WARMUP, SAMPLES, || {
            drop(kfp_core::should_rebuild(&native_stamped))
        }),
    );
    row(
        &mut rows,
        "exit-eligibility",
        "fresh <= 20 us, reused <= 2 us",
        measure(WARMUP, SAMPLES, || {
            assert!(matches!(
                policy.exit_eligibility(&event, Some(&tombstone)).unwrap(),
                Eligibility::RejectStale(_)
            ))
        }),
        measure(WARMUP, SAMPLES, || {
            drop(reused.exit_eligibility(&event, Some(&tombstone)).unwrap())
        }),
        measure(WARMUP, SAMPLES, || {
            drop(kfp_core::exit_eligibility(
                &native_event,
                Some(&native_tombstone),
            ))
        }),
    );
    row(
        &mut rows,
        "render-swf (2.3 -> 2.17)",
        "-",
        measure(WARMUP / 4, SAMPLES / 4, || {
            drop(policy.render_swf(&swf, &context).unwrap())
        }),
        measure(WARMUP / 4, SAMPLES / 4, || {
            drop(reused.render_swf(&swf, &context).unwrap())
        }),
        measure(WARMUP / 4, SAMPLES / 4, || {
            drop(kfp_core::render_swf(&swf, Some("2.17.0"), &native_settings).unwrap())
        }),
    );
    print_table(
        &[
            "export",
            "fresh p50 / p99",
            "reused p50 / p99",
            "native p50 / p99",
            "fresh/native",
            "reused/native",
            "goal",
        ],
        &rows,
    );
}

fn row(
    rows: &mut Vec<Vec<String>>,
    name: &str,
    goal: &str,
    fresh: Percentiles,
    reuse: Percentiles,
    native: Percentiles,
) {
    rows.push(vec![
        name.to_string(),
        format!("{} / {}", us(fresh.p50), us(fresh.p99)),
        format!("{} / {}", us(reuse.p50), us(reuse.p99)),
        format!("{} / {}", us(native.p50), us(native.p99)),
        ratio(fresh.p50, native.p50),
        ratio(reuse.p50, native.p50),
        goal.to_string(),
    ]);
}

fn render_context(settings: &str) -> RenderContext {
    RenderContext {
        target_version: Some("2.17.0".into()),
        settings: settings.to_string(),
    }
}

/// A stale copy (rv 105, Running) of a workflow completed at rv 110: the case that must be rejected.
fn workflow_event() -> (WorkflowEvent, Tombstone) {
    let workflow = serde_json::json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
        "metadata": {"name": "exit-abc", "namespace": "team-a", "uid": "7f0c7c1e-4d8a-4a63-9b1f-1c2d3e4f5a61",
                     "resourceVersion": "105", "labels": {"workflows.argoproj.io/phase": "Running"}},
        "spec": {"entrypoint": "main", "onExit": "exit-handler"},
        "status": {"phase": "Running"}
    });
    let facts = pipewarden::exit::event::WorkflowFacts::read(&workflow).expect("a named workflow");
    let event = facts.event(EventKind::Modified, &workflow);
    let tombstone = Tombstone {
        resource_version: "110".into(),
        phase: "Succeeded".into(),
        completed: true,
        age_seconds: 3,
    };
    (event, tombstone)
}

/// Cranelift compile of the component beside loading it from the compiled-artifact cache.
fn load_times(wasm: &std::path::Path) {
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
        let policy = Policy::load(wasm, options.clone()).expect("compile");
        compile_wall.push(started.elapsed());
        compile.push(policy.load_report().code_time);
        for _ in 0..4 {
            let started = Instant::now();
            let policy = Policy::load(wasm, options.clone()).expect("cached load");
            cached_wall.push(started.elapsed());
            assert_eq!(
                policy.load_report().source,
                pipewarden::engine::CodeSource::Cached
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
}
