//! Policy engine benchmark: each export through a fresh pooled instance and a reused instance,
//! beside the same logic compiled natively; Cranelift compile beside a cached load.
//!
//! Then should-rebuild with a burner thread per core, beside the engine before its deadline
//! counted CPU time from the start and retried a timeout. A sample that fails (a deadline
//! missed on a busy machine) is counted in its row, never a panic.
//!
//! Last, the Python and JavaScript example policies beside the Rust one (`policy/sdk.rs`; alone
//! with `-- sdk`).
//!
//! `cargo bench -p pipewarden --bench policy` (after `make policies sdk-examples`).

mod busy;
mod load;
mod sampled;
mod sdk;

use pipewarden_test_support as common;
use pipewarden_test_support::exit as exit_support;

use anyhow::Context as _;
use common::*;
use pipewarden::engine::{
    Eligibility, EventKind, Policy, PolicyError, PolicyOptions, RebuildInput, RebuildPolicy,
    RenderContext, Stamps, Tombstone, WorkflowEvent,
};
use pipewarden_guest as guest;
use sampled::{Sampled, sample};

const WARMUP: usize = 200;
const SAMPLES: usize = 3000;
/// should-rebuild decisions each way under load.
const LOADED_CALLS: usize = 20_000;

fn main() {
    // `-- sdk`: the Python and JavaScript examples beside the Rust policy alone.
    let sdk_only = std::env::args().skip(1).any(|arg| arg == "sdk");
    let result = if sdk_only {
        sdk::run()
    } else {
        run().and_then(|()| {
            println!();
            sdk::run()
        })
    };
    if let Err(error) = result {
        eprintln!("policy bench: {error:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let wasm = built_policy("kfp-default");
    let settings = read("policies/kfp-default/settings/kfp-2.17.0.json");
    let swf = swf_fixture("kfp-2.3.yaml");
    let size = std::fs::metadata(&wasm).map(|m| m.len()).unwrap_or(0);
    println!(
        "policy {} ({} bytes = {:.1} KiB; goal <= 1 MiB so it fits a ConfigMap: {}), SWF input {} KB, {} samples per row\n",
        wasm.display(),
        size,
        size as f64 / 1024.0,
        if size <= 1 << 20 { "met" } else { "NOT met" },
        swf.len() / 1024,
        SAMPLES
    );

    load::load_times(&wasm)?;
    let policy = Policy::load(&wasm, PolicyOptions::default()).context("load policy")?;
    policy
        .validate_settings(&settings)
        .context("validate settings")?;

    // A rendered SWF carries both stamps, so on-version-change must parse and hash it.
    let rendered = policy
        .render_swf(&swf, &render_context(&settings))
        .context("render the stamped input")?;
    let stamped: serde_json::Value = serde_json::from_str(&rendered)?;
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
    let native_settings =
        kfp_core::Settings::parse(&settings).map_err(|e| anyhow::anyhow!("settings: {e}"))?;
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
    let native_tombstone = native_tombstone.context("a tombstone")?;

    // A kept instance that trapped (a timeout) is replaced, so its row goes on.
    let mut reused = policy.instance()?;
    let mut reuse = |call: &mut dyn FnMut(
        &mut pipewarden::engine::PolicyInstance,
    ) -> Result<(), PolicyError>| {
        let result = call(&mut reused);
        if result.is_err() {
            reused = policy.instance()?;
        }
        result
    };
    let mut rows: Vec<Vec<String>> = Vec::new();

    let instantiate = sample(WARMUP, SAMPLES, || policy.instance().map(drop));
    rows.push(vec![
        "(fresh instance alone, no call)".into(),
        format!(
            "{} / {}",
            us(instantiate.as_percentiles().p50),
            us(instantiate.as_percentiles().p99)
        ),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        format!("{} / -", instantiate.failures()),
        "-".into(),
    ]);
    let fresh = sample(WARMUP, SAMPLES, || {
        policy.should_rebuild(&rebuild_unstamped).map(drop)
    });
    let kept = sample(WARMUP, SAMPLES, || {
        reuse(&mut |i| i.should_rebuild(&rebuild_unstamped).map(drop))
    });
    let native = measure(WARMUP, SAMPLES, || {
        drop(kfp_core::should_rebuild(&native_unstamped))
    });
    row(
        &mut rows,
        "should-rebuild (no stamp)",
        "fresh <= 20 us, reused <= 2 us",
        &fresh,
        &kept,
        native,
    );
    let fresh = sample(WARMUP, SAMPLES, || {
        policy.should_rebuild(&rebuild_stamped).map(drop)
    });
    let kept = sample(WARMUP, SAMPLES, || {
        reuse(&mut |i| i.should_rebuild(&rebuild_stamped).map(drop))
    });
    let native = measure(WARMUP, SAMPLES, || {
        drop(kfp_core::should_rebuild(&native_stamped))
    });
    row(
        &mut rows,
        "should-rebuild (stamped: parse+hash)",
        "-",
        &fresh,
        &kept,
        native,
    );
    let fresh = sample(WARMUP, SAMPLES, || {
        let eligibility = policy.exit_eligibility(&event, Some(&tombstone))?;
        if !matches!(eligibility, Eligibility::RejectStale(_)) {
            return Err(PolicyError::BadOutput {
                export: pipewarden::engine::Export::ExitEligibility,
                reason: format!("expected reject-stale, got {eligibility:?}"),
            });
        }
        Ok(())
    });
    let kept = sample(WARMUP, SAMPLES, || {
        reuse(&mut |i| i.exit_eligibility(&event, Some(&tombstone)).map(drop))
    });
    let native = measure(WARMUP, SAMPLES, || {
        drop(kfp_core::exit_eligibility_with_host_settings(
            &native_event,
            Some(&native_tombstone),
        ))
    });
    row(
        &mut rows,
        "exit-eligibility",
        "fresh <= 20 us, reused <= 2 us",
        &fresh,
        &kept,
        native,
    );
    let fresh = sample(WARMUP / 4, SAMPLES / 4, || {
        policy.render_swf(&swf, &context).map(drop)
    });
    let kept = sample(WARMUP / 4, SAMPLES / 4, || {
        reuse(&mut |i| i.render_swf(&swf, &context).map(drop))
    });
    let native = measure(WARMUP / 4, SAMPLES / 4, || {
        drop(kfp_core::render_swf(&swf, Some("2.17.0"), &native_settings))
    });
    row(
        &mut rows,
        "render-swf (2.3 -> 2.17: recover + compile)",
        "fresh <= 2 ms, <= 3x native",
        &fresh,
        &kept,
        native,
    );
    // The same SWF rendered for each other release, with that release's default install.
    let default_install = "{}".to_owned();
    let native_install =
        kfp_core::Settings::parse(&default_install).map_err(|e| anyhow::anyhow!("{e}"))?;
    for release in ["2.14.4", "2.15.0", "2.16.0", "2.16.1"] {
        let context = RenderContext {
            target_version: Some(release.into()),
            settings: default_install.clone(),
        };
        let fresh = sample(WARMUP / 4, SAMPLES / 4, || {
            policy.render_swf(&swf, &context).map(drop)
        });
        let kept = sample(WARMUP / 4, SAMPLES / 4, || {
            reuse(&mut |i| i.render_swf(&swf, &context).map(drop))
        });
        let native = measure(WARMUP / 4, SAMPLES / 4, || {
            drop(kfp_core::render_swf(&swf, Some(release), &native_install))
        });
        row(
            &mut rows,
            &format!("render-swf (2.3 -> {release})"),
            "fresh <= 2 ms",
            &fresh,
            &kept,
            native,
        );
    }
    print_table(
        &[
            "export",
            "fresh p50 / p99",
            "reused p50 / p99",
            "native p50 / p99",
            "fresh/native",
            "reused/native",
            "failed fresh / reused",
            "goal",
        ],
        &rows,
    );

    println!();
    print_table(
        &[
            "should-rebuild (no stamp), busy cores",
            "decisions",
            "failed",
            "timeouts retried",
            "p50 / p99",
        ],
        &busy::rows(&wasm, &rebuild_unstamped, LOADED_CALLS)?,
    );
    Ok(())
}

fn row(
    rows: &mut Vec<Vec<String>>,
    name: &str,
    goal: &str,
    fresh: &Sampled,
    kept: &Sampled,
    native: Percentiles,
) {
    let (fresh_p, kept_p) = (fresh.as_percentiles(), kept.as_percentiles());
    rows.push(vec![
        name.to_string(),
        format!("{} / {}", us(fresh_p.p50), us(fresh_p.p99)),
        format!("{} / {}", us(kept_p.p50), us(kept_p.p99)),
        format!("{} / {}", us(native.p50), us(native.p99)),
        ratio(fresh_p.p50, native.p50),
        ratio(kept_p.p50, native.p50),
        format!("{} / {}", fresh.failures(), kept.failures()),
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
    let facts = pipewarden::exit::event::WorkflowFacts::read(&workflow)
        .expect("the literal above names its workflow");
    let event = facts.event(EventKind::Modified, &workflow);
    let tombstone = Tombstone {
        resource_version: "110".into(),
        phase: "Succeeded".into(),
        completed: true,
        age_seconds: 3,
    };
    (event, tombstone)
}
