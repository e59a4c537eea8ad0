//! The Python and JavaScript example policies beside the Rust default policy, measured in the
//! same run: component size, load (Cranelift compile, then from the compiled-artifact cache),
//! fresh-instance decisions (`exit-eligibility`, `should-rebuild`) p50/p99, and the process's
//! peak resident memory while `--concurrency`-many decisions run at once under each policy's
//! budget. Every figure is printed with its ratio to the Rust policy's. A second table splits a
//! fresh decision into instantiation, the instance's first call and a second call.
//!
//! The last part of `cargo bench -p pipewarden --bench policy`, or alone with `-- sdk`
//! (`make bench-sdk`); needs `make sdk-examples policies`. `SDK_BENCH_CONCURRENCY`, default 16:
//! both loops at the default `--concurrency` 8.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{built_policy, print_table, read, repo_path, swf_fixture};
use anyhow::Context as _;
use pipewarden::engine::{
    BudgetPreset, CodeSource, EventKind, Policy, PolicyOptions, RebuildInput, RebuildPolicy,
    RenderContext, Stamps, Tombstone, WorkflowEvent,
};

const SAMPLES: usize = 200;
const WARMUP: usize = 20;

struct Subject {
    name: &'static str,
    wasm: PathBuf,
    budget: BudgetPreset,
}

struct Figures {
    size: u64,
    compile: Duration,
    cached: Duration,
    eligibility: (Duration, Duration),
    rebuild: (Duration, Duration),
    peak_rss: u64,
    baseline_rss: u64,
    split: Split,
}

/// Where a fresh `exit-eligibility` decision's time goes, p50 of each part.
struct Split {
    instantiate: Duration,
    first_call: Duration,
    second_call: Duration,
}

pub fn run() -> anyhow::Result<()> {
    let concurrency: usize = std::env::var("SDK_BENCH_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let subjects = [
        Subject {
            name: "rust (kfp-default)",
            wasm: built_policy("kfp-default"),
            budget: BudgetPreset::Compiled,
        },
        Subject {
            name: "python (python-example)",
            wasm: sdk_example("python_example.wasm")?,
            budget: BudgetPreset::Interpreter,
        },
        Subject {
            name: "javascript (js-example)",
            wasm: sdk_example("js_example.wasm")?,
            budget: BudgetPreset::Interpreter,
        },
    ];
    let mut figures = Vec::new();
    for subject in &subjects {
        eprintln!("measuring {} ...", subject.name);
        figures.push(measure(subject, concurrency).with_context(|| subject.name)?);
    }
    let rust = &figures[0];
    let rows: Vec<Vec<String>> = subjects
        .iter()
        .zip(&figures)
        .map(|(subject, f)| {
            vec![
                subject.name.into(),
                format!(
                    "{:.1} MB ({:.0}x)",
                    mb(f.size),
                    f.size as f64 / rust.size as f64
                ),
                format!("{} ({})", ms(f.compile), times(f.compile, rust.compile)),
                format!("{} ({})", ms(f.cached), times(f.cached, rust.cached)),
                format!(
                    "{} / {} ({})",
                    us(f.eligibility.0),
                    us(f.eligibility.1),
                    times(f.eligibility.0, rust.eligibility.0)
                ),
                format!(
                    "{} / {} ({})",
                    us(f.rebuild.0),
                    us(f.rebuild.1),
                    times(f.rebuild.0, rust.rebuild.0)
                ),
                format!(
                    "{:.0} MB (+{:.0} MB)",
                    mb(f.peak_rss),
                    mb(f.peak_rss.saturating_sub(f.baseline_rss))
                ),
            ]
        })
        .collect();
    println!(
        "fresh instance per decision, {SAMPLES} samples; ratios to the Rust policy in brackets; \
         memory: peak RSS of this process while {concurrency} decisions run at once \
         (growth over the loaded policy)\n"
    );
    let split_rows: Vec<Vec<String>> = subjects
        .iter()
        .zip(&figures)
        .map(|(subject, f)| {
            vec![
                subject.name.into(),
                us(f.split.instantiate),
                us(f.split.first_call),
                us(f.split.second_call),
            ]
        })
        .collect();
    print_table(
        &[
            "policy",
            "component",
            "compile",
            "cached load (goal <= 50 ms)",
            "exit-eligibility p50 / p99 (goal <= 200 us)",
            "should-rebuild p50 / p99",
            "peak RSS",
        ],
        &rows,
    );
    println!("\nwhere a fresh exit-eligibility decision's time goes (p50 of each part):\n");
    print_table(
        &[
            "policy",
            "instantiate",
            "first call in the instance",
            "second call in the same instance",
        ],
        &split_rows,
    );
    Ok(())
}

fn sdk_example(file: &str) -> anyhow::Result<PathBuf> {
    let path = repo_path("target/sdk").join(file);
    anyhow::ensure!(
        path.exists(),
        "missing {}: build it with `make sdk-examples`",
        path.display()
    );
    Ok(path)
}

fn measure(subject: &Subject, concurrency: usize) -> anyhow::Result<Figures> {
    let cache = std::env::temp_dir().join(format!(
        "pipewarden-sdk-bench-{}-{}",
        std::process::id(),
        subject.wasm.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&cache);
    let options = PolicyOptions {
        cache_dir: Some(cache.clone()),
        ..PolicyOptions::default()
    }
    .with_budget(&subject.budget.budget());
    let compiled = Policy::load(&subject.wasm, options.clone()).context("compile")?;
    let compile = compiled.load_report().code_time;
    drop(compiled);
    let mut cached_times = Vec::new();
    let mut policy = None;
    for _ in 0..5 {
        let started = Instant::now();
        let loaded = Policy::load(&subject.wasm, options.clone()).context("cached load")?;
        cached_times.push(started.elapsed());
        anyhow::ensure!(loaded.load_report().source == CodeSource::Cached);
        policy = Some(loaded);
    }
    cached_times.sort();
    let settings = read("policies/kfp-default/settings/kfp-2.17.0.json");
    let policy = policy.unwrap().with_settings(&settings);
    policy.validate_settings(&settings).context("settings")?;
    let baseline_rss = reset_peak_rss();

    let event = completion_event();
    let tombstone = Tombstone {
        resource_version: "105".into(),
        phase: "Running".into(),
        completed: false,
        age_seconds: 3,
    };
    let eligibility = percentiles(|| {
        policy
            .exit_eligibility(&event, Some(&tombstone))
            .map(drop)
            .map_err(Into::into)
    })?;
    let split = split_decision(&policy, &event, &tombstone)?;
    let rendered = policy
        .render_swf(
            &swf_fixture("kfp-2.3.yaml"),
            &RenderContext {
                target_version: Some("2.17.0".into()),
                settings: settings.clone(),
            },
        )
        .context("render")?;
    let stamped: serde_json::Value = serde_json::from_str(&rendered)?;
    let input = RebuildInput {
        policy: RebuildPolicy::OnVersionChange,
        swf: rendered.clone(),
        target_version: Some("2.17.0".into()),
        stamps: Stamps {
            version: Some("2.17.0".into()),
            render_hash: stamped["metadata"]["annotations"]["pipewarden.io/render-hash"]
                .as_str()
                .map(str::to_string),
        },
        settings: settings.clone(),
    };
    let rebuild = percentiles(|| policy.should_rebuild(&input).map(drop).map_err(Into::into))?;
    let peak_rss = concurrent_peak_rss(&policy, &input, concurrency)?;
    let _ = std::fs::remove_dir_all(&cache);
    Ok(Figures {
        size: std::fs::metadata(&subject.wasm)?.len(),
        compile,
        cached: cached_times[cached_times.len() / 2],
        eligibility,
        rebuild,
        peak_rss,
        baseline_rss,
        split,
    })
}

/// The parts of a fresh decision, timed apart: instantiation, the instance's first call, and
/// a second call in the same instance (what the first costs beyond the decision itself).
fn split_decision(
    policy: &Policy,
    event: &WorkflowEvent,
    tombstone: &Tombstone,
) -> anyhow::Result<Split> {
    let mut parts = [(); 3].map(|_| Vec::with_capacity(SAMPLES));
    for sample in 0..WARMUP + SAMPLES {
        let started = Instant::now();
        let mut instance = policy.instance()?;
        let instantiated = Instant::now();
        instance.exit_eligibility(event, Some(tombstone))?;
        let first = Instant::now();
        instance.exit_eligibility(event, Some(tombstone))?;
        let second = Instant::now();
        if sample >= WARMUP {
            parts[0].push(instantiated - started);
            parts[1].push(first - instantiated);
            parts[2].push(second - first);
        }
    }
    let [instantiate, first_call, second_call] = parts.map(|mut times| {
        times.sort();
        times[times.len() / 2]
    });
    Ok(Split {
        instantiate,
        first_call,
        second_call,
    })
}

/// `concurrency` threads making should-rebuild decisions at once; the peak RSS meanwhile.
fn concurrent_peak_rss(
    policy: &Policy,
    input: &RebuildInput,
    concurrency: usize,
) -> anyhow::Result<u64> {
    let input = Arc::new(input.clone());
    let threads: Vec<_> = (0..concurrency)
        .map(|_| {
            let (policy, input) = (policy.clone(), input.clone());
            std::thread::spawn(move || -> anyhow::Result<()> {
                for _ in 0..10 {
                    policy.should_rebuild(&input)?;
                }
                Ok(())
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("decision thread")?;
    }
    Ok(status_kib("VmHWM")? << 10)
}

fn percentiles(
    mut decide: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<(Duration, Duration)> {
    for _ in 0..WARMUP {
        decide()?;
    }
    let mut times = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        decide()?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok((times[SAMPLES / 2], times[SAMPLES * 99 / 100]))
}

fn completion_event() -> WorkflowEvent {
    let workflow = serde_json::json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
        "metadata": {"name": "exit-demo", "namespace": "team-a", "uid": "7f0c7c1e",
                     "resourceVersion": "110",
                     "labels": {"workflows.argoproj.io/phase": "Succeeded"}},
        "spec": {"entrypoint": "main"},
        "status": {"phase": "Succeeded", "finishedAt": "2026-08-03T02:01:12Z"},
    });
    WorkflowEvent {
        kind: EventKind::Modified,
        namespace: "team-a".into(),
        name: "exit-demo".into(),
        uid: "7f0c7c1e".into(),
        resource_version: "110".into(),
        phase: "Succeeded".into(),
        labels: vec![("workflows.argoproj.io/phase".into(), "Succeeded".into())],
        workflow: workflow.to_string(),
    }
}

/// Resets the kernel's peak-RSS mark (`clear_refs` 5), returning the RSS now.
fn reset_peak_rss() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    status_kib("VmRSS").unwrap_or(0) << 10
}

fn status_kib(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(Path::new("/proc/self/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("{field} in /proc/self/status"))
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.0} us", d.as_secs_f64() * 1e6)
}

fn times(value: Duration, rust: Duration) -> String {
    format!("{:.1}x", value.as_secs_f64() / rust.as_secs_f64().max(1e-9))
}
